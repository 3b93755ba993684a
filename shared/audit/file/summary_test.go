package file

import (
	"bytes"
	"context"
	"math/rand"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/audit/audittest"
)

func TestSummarize(t *testing.T) {
	ts := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	a, b := audittest.Record(ts.Add(time.Minute)), audittest.Record(ts)
	lines := append(audit.AppendLine(nil, a), audit.AppendLine(nil, b)...)
	lines = append(lines, "{torn"...)
	s, err := Summarize("x.json", lines)
	if err != nil || s.Records != 2 || s.Damaged != 1 || s.First != b.Timestamp || s.Last != a.Timestamp {
		t.Errorf("JSON summary = %+v, %v", s, err)
	}
	var pq bytes.Buffer
	if err := writeParquet(&pq, []audit.Record{a, b}, nil); err != nil {
		t.Fatal(err)
	}
	s, err = Summarize("AuditDelivery-1", pq.Bytes())
	if err != nil || s.Records != 2 || s.First != b.Timestamp || s.Last != a.Timestamp {
		t.Errorf("Parquet summary = %+v, %v", s, err)
	}
	if _, err := Summarize("AuditDelivery-2", []byte("not parquet")); err == nil {
		t.Error("garbage read as Parquet")
	}
	huge := bytes.Clone(pq.Bytes())
	copy(huge[len(huge)-8:], []byte{0xff, 0xff, 0xff, 0xff})
	if _, err := Summarize("AuditDelivery-3", huge); err == nil {
		t.Error("a footer longer than the file was read")
	}
}

// FuzzSummarize: an object from a bucket is outside input; no content crashes the
// digest writer or the verifier.
func FuzzSummarize(f *testing.F) {
	var pq bytes.Buffer
	if err := writeParquet(&pq, []audit.Record{audittest.Record(time.Now())}, nil); err != nil {
		f.Fatal(err)
	}
	f.Add(pq.Bytes(), false)
	// A footer length of 4 GiB: parquet-go v0.32.0 allocates it before any check.
	huge := bytes.Clone(pq.Bytes())
	copy(huge[len(huge)-8:], []byte{0xff, 0xff, 0xff, 0xff})
	f.Add(huge, false)
	f.Add(audit.AppendLine(nil, audittest.Record(time.Now())), true)
	f.Fuzz(func(t *testing.T, b []byte, json bool) {
		name := "obj"
		if json {
			name = "obj.json"
		}
		_, _ = Summarize(name, b)
	})
}

// TestCloseIdleReleasesTheEndedHour: an idle sink closes (and unlocks) the file of
// an hour that ended, so the digest can take it without waiting for a write.
func TestCloseIdleReleasesTheEndedHour(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 12, 1, 10, 30, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	s, err := New(dir, WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Write(context.Background(), audittest.Record(now)); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, Subdir, "dt=*", "hour=*", "*.json"))
	if len(files) != 1 {
		t.Fatalf("files: %v", files)
	}
	locked := func() bool {
		f, err := os.Open(files[0])
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		return syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB) != nil
	}
	s.CloseIdle()
	if !locked() {
		t.Fatal("the file of the hour under way was closed")
	}
	now = now.Add(32 * time.Minute) // 11:02: the hour ended over a minute ago
	s.CloseIdle()
	if locked() {
		t.Fatal("CloseIdle left the ended hour's file open")
	}
}

// FuzzHeadTail: however an object's bytes are split into writes, the kept head is its
// first 4 bytes and the kept tail its last MaxParquetTail, in order.
func FuzzHeadTail(f *testing.F) {
	f.Add(int64(1), uint16(7), uint32(MaxParquetTail+5))
	f.Add(int64(2), uint16(65535), uint32(3*MaxParquetTail))
	f.Add(int64(3), uint16(1), uint32(3))
	f.Fuzz(func(t *testing.T, seed int64, chunk uint16, size uint32) {
		size %= 3*MaxParquetTail + 1
		data := make([]byte, size)
		rand.New(rand.NewSource(seed)).Read(data)
		var h headTail
		for rest := data; len(rest) > 0; {
			n := min(int(chunk)+1, len(rest))
			if _, err := h.Write(rest[:n]); err != nil {
				t.Fatal(err)
			}
			rest = rest[n:]
		}
		if want := data[:min(4, len(data))]; !bytes.Equal(h.head[:h.nh], want) {
			t.Fatalf("head %x, want %x", h.head[:h.nh], want)
		}
		if want := data[len(data)-min(MaxParquetTail, len(data)):]; !bytes.Equal(h.trimmed(), want) {
			t.Fatalf("tail of %d bytes differs (written in chunks of %d)", len(data), int(chunk)+1)
		}
	})
}
