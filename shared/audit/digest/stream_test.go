package digest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// bigStore serves one object, generated as it is read: head, then pad bytes, then
// tail. A Read into a buffer larger than maxRead fails, as io.ReadAll's would once it
// had grown past it: the object is never held whole.
type bigStore struct {
	LocalStore
	head, tail []byte
	pad        int64
	maxRead    int
}

type bigReader struct {
	parts   []io.Reader
	maxRead int
}

func (r *bigReader) Read(p []byte) (int, error) {
	if len(p) > r.maxRead {
		return 0, fmt.Errorf("a read into one buffer of %d bytes (at most %d): the object is being held whole", len(p), r.maxRead)
	}
	return io.MultiReader(r.parts...).Read(p)
}

func (s *bigStore) Open(context.Context, string) (io.ReadCloser, error) {
	return io.NopCloser(&bigReader{maxRead: s.maxRead, parts: []io.Reader{
		bytes.NewReader(s.head), io.LimitReader(zeros{}, s.pad), bytes.NewReader(s.tail)}}), nil
}

func (s *bigStore) Read(ctx context.Context, p string) ([]byte, error) {
	r, _ := s.Open(ctx, p)
	return io.ReadAll(r)
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// TestDescribeStreams: a 128 MiB Parquet object (Firehose's largest) is hashed and
// summarised in one pass, each read at most 1 MiB, with far less than the object
// allocated; the hash is of every byte, and the footer's counts are read.
func TestDescribeStreams(t *testing.T) {
	e := newLocalEnv(t)
	writeAll(t, e.writer())
	pqs, _ := filepath.Glob(filepath.Join(e.dir, "audit", "dt=*", "hour=*", "*.parquet"))
	if len(pqs) != 1 {
		t.Fatalf("parquet files: %v", pqs)
	}
	pq, err := os.ReadFile(pqs[0])
	if err != nil {
		t.Fatal(err)
	}
	const size = 128 << 20
	s := &bigStore{head: pq[:4], tail: pq[4:], pad: size - int64(len(pq)), maxRead: 1 << 20}
	want := sha256.New()
	want.Write(pq[:4])
	if _, err := io.Copy(want, io.LimitReader(zeros{}, s.pad)); err != nil {
		t.Fatal(err)
	}
	want.Write(pq[4:])

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	obj, err := describe(context.Background(), s, "audit/dt=2026-12-01/hour=10/AuditDelivery-1")
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if obj.Size != size || obj.SHA256 != hex.EncodeToString(want.Sum(nil)) || obj.Records != 5 || obj.FirstTimestamp == "" {
		t.Errorf("describe of a 128 MiB object: %+v", obj)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 32<<20 {
		t.Errorf("describe allocated %d MiB for a %d MiB object", alloc>>20, size>>20)
	}
}
