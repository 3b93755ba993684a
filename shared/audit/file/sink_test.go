package file

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/audit/audittest"
)

func newSink(t *testing.T, dir string, opts ...Option) *Sink {
	t.Helper()
	s, err := New(dir, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func mustWrite(t *testing.T, s *Sink, r audit.Record) {
	t.Helper()
	if err := s.Write(context.Background(), r); err != nil {
		t.Fatalf("Write: %v", err)
	}
}

// jsonFiles lists the JSON files of one partition folder.
func jsonFiles(t *testing.T, dir string, hour time.Time) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(partitionDir(filepath.Join(dir, Subdir), hour), "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestConcurrentWritesNeverInterleave(t *testing.T) {
	const goroutines, perG = 50, 200
	dir := t.TempDir()
	s := newSink(t, dir)
	ts := time.Date(2025, 6, 22, 15, 30, 0, 0, time.UTC)

	want := make(map[string]bool, goroutines*perG)
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			for i := range perG {
				// Spread over two hours so two files are written concurrently.
				r := audittest.Record(ts.Add(time.Duration(g*perG+i)*time.Second), func(r *audit.Record) {
					r.RequestID = fmt.Sprintf("g%d-i%d", g, i)
				})
				if err := s.Write(context.Background(), r); err != nil {
					errs <- err
					return
				}
				mu.Lock()
				want[r.EventID] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	recs, bad, err := ReadAll(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) != 0 {
		t.Fatalf("%d damaged lines, first: %v", len(bad), bad[0])
	}
	if len(recs) != goroutines*perG {
		t.Fatalf("read %d records, wrote %d", len(recs), goroutines*perG)
	}
	for _, r := range recs {
		if !want[r.EventID] {
			t.Fatalf("unexpected or duplicate record %s", r.EventID)
		}
		delete(want, r.EventID)
	}
	// Each partition holds exactly one file from this sink, and every line in it
	// ends with a newline (no interleaving can hide behind a successful decode).
	for _, h := range []time.Time{ts.Truncate(time.Hour), ts.Truncate(time.Hour).Add(time.Hour)} {
		files := jsonFiles(t, dir, h)
		if len(files) != 1 {
			t.Fatalf("hour %s: %d files, want 1", h, len(files))
		}
		b, err := os.ReadFile(files[0])
		if err != nil {
			t.Fatal(err)
		}
		if len(b) == 0 || b[len(b)-1] != '\n' {
			t.Fatalf("%s does not end with a newline", files[0])
		}
		fi, _ := os.Stat(files[0])
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v, want 0600", files[0], fi.Mode().Perm())
		}
	}
}

func TestPartitionComesFromRecordTimestamp(t *testing.T) {
	dir := t.TempDir()
	// The write happens years after the call: the record is still filed with its hour.
	s := newSink(t, dir, WithClock(func() time.Time { return time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC) }))
	r := audittest.Record(time.Date(2025, 6, 22, 15, 30, 0, 0, time.UTC))
	mustWrite(t, s, r)
	files := jsonFiles(t, dir, time.Date(2025, 6, 22, 15, 0, 0, 0, time.UTC))
	if len(files) != 1 {
		t.Fatalf("dt=2025-06-22/hour=15 holds %d files, want 1", len(files))
	}
	rel, _ := filepath.Rel(dir, files[0])
	if !strings.HasPrefix(rel, filepath.Join("audit", "dt=2025-06-22", "hour=15")+string(filepath.Separator)) {
		t.Fatalf("record filed at %s", rel)
	}
}

func TestHourRollover(t *testing.T) {
	dir := t.TempDir()
	var mu sync.Mutex
	now := time.Date(2025, 6, 22, 10, 59, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	setNow := func(t time.Time) { mu.Lock(); now = t; mu.Unlock() }
	s := newSink(t, dir, WithClock(clock), WithCloseAfter(time.Minute))
	h10 := time.Date(2025, 6, 22, 10, 0, 0, 0, time.UTC)
	h11 := h10.Add(time.Hour)

	steps := []struct {
		name      string
		now       time.Time
		ts        time.Time
		openHours []time.Time // hours with an open file after the write
		files10   int         // JSON files in hour=10 after the write
	}{
		{"first record of hour 10", h10.Add(59 * time.Minute), h10.Add(59 * time.Minute), []time.Time{h10}, 1},
		{"hour 11 starts, 10 kept for late records", h11.Add(10 * time.Second), h11.Add(10 * time.Second), []time.Time{h10, h11}, 1},
		{"late record of hour 10 joins its file", h11.Add(20 * time.Second), h10.Add(59*time.Minute + 59*time.Second), []time.Time{h10, h11}, 1},
		{"grace over: hour 10 closed", h11.Add(2 * time.Minute), h11.Add(2 * time.Minute), []time.Time{h11}, 1},
		{"very late record of hour 10 gets a new file", h11.Add(3 * time.Minute), h10.Add(30 * time.Minute), []time.Time{h10, h11}, 2},
		{"hour 12: both closed", h11.Add(62 * time.Minute), h11.Add(62 * time.Minute), []time.Time{h11.Add(time.Hour)}, 2},
	}
	for _, st := range steps {
		setNow(st.now)
		mustWrite(t, s, audittest.Record(st.ts))
		s.mu.Lock()
		var open []time.Time
		for h := range s.files {
			open = append(open, h)
		}
		s.mu.Unlock()
		if len(open) != len(st.openHours) {
			t.Fatalf("%s: open hours %v, want %v", st.name, open, st.openHours)
		}
		for _, h := range st.openHours {
			if _, ok := s.files[h]; !ok {
				t.Fatalf("%s: hour %s not open (open: %v)", st.name, h, open)
			}
		}
		if got := len(jsonFiles(t, dir, h10)); got != st.files10 {
			t.Fatalf("%s: hour=10 has %d files, want %d", st.name, got, st.files10)
		}
	}
	// A closed file is unlocked: compaction may take it.
	for _, path := range jsonFiles(t, dir, h10) {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			t.Errorf("%s still locked after rollover: %v", path, err)
		}
		f.Close()
	}
	recs, bad, err := ReadAll(dir)
	if err != nil || len(bad) != 0 {
		t.Fatalf("ReadAll: %v, damaged %v", err, bad)
	}
	if len(recs) != len(steps) {
		t.Fatalf("read %d records, wrote %d", len(recs), len(steps))
	}
}

func TestWriteRejects(t *testing.T) {
	ts := time.Date(2025, 6, 22, 15, 30, 0, 0, time.UTC)
	tests := []struct {
		name string
		rec  audit.Record
	}{
		{"bad timestamp", audittest.Record(ts, func(r *audit.Record) { r.Timestamp = "2025-06-22 15:30" })},
		{"no event id", audittest.Record(ts, func(r *audit.Record) { r.EventID = "" })},
		{"unknown outcome", audittest.Record(ts, func(r *audit.Record) { r.Outcome = "ok" })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s := newSink(t, dir)
			err := s.Write(context.Background(), tt.rec)
			if !apperr.Is(err, apperr.InternalError) {
				t.Fatalf("Write = %v, want internal_error", err)
			}
			recs, bad, err := ReadAll(dir)
			if err != nil || len(recs)+len(bad) != 0 {
				t.Fatalf("something was written: %v %v %v", recs, bad, err)
			}
		})
	}
	t.Run("after close", func(t *testing.T) {
		s := newSink(t, t.TempDir())
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if err := s.Write(context.Background(), audittest.Record(ts)); !errors.Is(err, ErrClosed) {
			t.Fatalf("Write after Close = %v, want ErrClosed", err)
		}
	})
}

func TestTwoSinksNeverShareAFile(t *testing.T) {
	dir := t.TempDir()
	a, b := newSink(t, dir), newSink(t, dir)
	ts := time.Date(2025, 6, 22, 15, 30, 0, 0, time.UTC)
	mustWrite(t, a, audittest.Record(ts))
	mustWrite(t, b, audittest.Record(ts))
	if got := len(jsonFiles(t, dir, ts.Truncate(time.Hour))); got != 2 {
		t.Fatalf("two sinks wrote %d files, want 2", got)
	}
}

func TestFsyncOption(t *testing.T) {
	dir := t.TempDir()
	s := newSink(t, dir, WithFsync())
	for i := range 3 {
		mustWrite(t, s, audittest.Record(time.Date(2025, 6, 22, 15, i, 0, 0, time.UTC)))
	}
	recs, bad, err := ReadAll(dir)
	if err != nil || len(bad) != 0 || len(recs) != 3 {
		t.Fatalf("ReadAll = %d records, %v, %v", len(recs), bad, err)
	}
}

const childEnv = "AACMCP_AUDIT_KILL_CHILD_DIR"

// TestKilledProcessLosesNothing re-executes the test binary as a writer that prints
// "written <event_id>" after every Write returns, SIGKILLs it mid-stream, and checks
// that every record it reported is on disk.
func TestKilledProcessLosesNothing(t *testing.T) {
	if dir := os.Getenv(childEnv); dir != "" {
		runKillChild(dir)
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledProcessLosesNothing$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	const killAfter = 500
	var told []string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if id, ok := strings.CutPrefix(sc.Text(), "written "); ok {
			told = append(told, id)
			if len(told) == killAfter {
				if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	_ = cmd.Wait()
	if len(told) < killAfter {
		t.Fatalf("child reported only %d records before exiting", len(told))
	}

	recs, bad, err := ReadAll(dir)
	if err != nil {
		t.Fatal(err)
	}
	// SIGKILL cannot interrupt a write(2) to a local file halfway, but if it ever did,
	// the damage must show as one torn last line, not as a merged or lost record.
	for _, b := range bad {
		if !errors.Is(b, ErrTornLine) {
			t.Errorf("damaged line that is not a torn tail: %v", b)
		}
	}
	if len(bad) > 1 {
		t.Errorf("%d damaged lines, at most one torn tail expected", len(bad))
	}
	onDisk := make(map[string]bool, len(recs))
	for _, r := range recs {
		onDisk[r.EventID] = true
	}
	for _, id := range told {
		if !onDisk[id] {
			t.Fatalf("record %s was reported written but is not on disk", id)
		}
	}
	// At most the record in flight when the kill landed is on disk but unreported.
	if len(recs) > len(told)+1 {
		t.Errorf("%d records on disk, %d reported", len(recs), len(told))
	}
}

func runKillChild(dir string) {
	s, err := New(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	w := bufio.NewWriter(os.Stdout)
	base := time.Date(2025, 6, 22, 15, 0, 0, 0, time.UTC)
	for i := 0; ; i++ {
		r := audittest.Record(base.Add(time.Duration(i) * time.Millisecond))
		if err := s.Write(context.Background(), r); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		// Flushed per line: the parent may only count what the child has said.
		fmt.Fprintf(w, "written %s\n", r.EventID)
		if err := w.Flush(); err != nil {
			os.Exit(0) // the parent stopped reading
		}
	}
}

func TestScanReportsDamage(t *testing.T) {
	ts := time.Date(2025, 6, 22, 15, 30, 0, 0, time.UTC)
	good := func() []byte {
		b, err := audit.MarshalLine(audittest.Record(ts))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	g1, g2 := good(), good()
	tests := []struct {
		name    string
		content []byte
		records int
		errs    []error // wanted errors.Is targets, in order; nil = a decode error
	}{
		{"clean", bytes.Join([][]byte{g1, g2}, nil), 2, nil},
		{"torn tail", append(bytes.Join([][]byte{g1, g2}, nil), g1[:40]...), 2, []error{ErrTornLine}},
		{"torn tail that happens to be valid JSON", append(append([]byte{}, g1...), g2[:len(g2)-1]...), 1, []error{ErrTornLine}},
		{"garbage line in the middle", bytes.Join([][]byte{g1, []byte("{not json\n"), g2}, nil), 2, []error{nil}},
		{"unknown field", bytes.Join([][]byte{g1, []byte(`{"event_id":"x","extra":1}` + "\n")}, nil), 1, []error{nil}},
		{"line too long", bytes.Join([][]byte{g1, bytes.Repeat([]byte("x"), MaxLineBytes+10), []byte("\n"), g2}, nil), 2, []error{ErrLineTooLong}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			pdir := partitionDir(filepath.Join(dir, Subdir), ts)
			if err := os.MkdirAll(pdir, 0o700); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(pdir, "x.json")
			if err := os.WriteFile(path, tt.content, 0o600); err != nil {
				t.Fatal(err)
			}
			recs, bad, err := ReadAll(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) != tt.records {
				t.Errorf("records = %d, want %d", len(recs), tt.records)
			}
			if len(bad) != len(tt.errs) {
				t.Fatalf("damaged = %v, want %d", bad, len(tt.errs))
			}
			for i, want := range tt.errs {
				if bad[i].Path != path {
					t.Errorf("damage path %s", bad[i].Path)
				}
				if want != nil && !errors.Is(bad[i], want) {
					t.Errorf("damage %d = %v, want %v", i, bad[i], want)
				}
				if want == nil && (errors.Is(bad[i], ErrTornLine) || errors.Is(bad[i], ErrLineTooLong)) {
					t.Errorf("damage %d = %v, want a decode error", i, bad[i])
				}
			}
		})
	}
}

func TestReadAllEmpty(t *testing.T) {
	recs, bad, err := ReadAll(filepath.Join(t.TempDir(), "nothing-here"))
	if err != nil || len(recs) != 0 || len(bad) != 0 {
		t.Fatalf("ReadAll of a missing folder = %v, %v, %v", recs, bad, err)
	}
}

func FuzzLineReader(f *testing.F) {
	line, _ := audit.MarshalLine(audittest.Record(time.Date(2025, 6, 22, 15, 30, 0, 0, time.UTC)))
	f.Add(line)
	f.Add(append(append([]byte{}, line...), line[:20]...))
	f.Add([]byte("\n\n{}\n"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		lr := newLineReader(bytes.NewReader(data), 0)
		var rebuilt []byte
		for {
			off, l, lerr, err := lr.next(false)
			if err != nil {
				break
			}
			if off != int64(len(rebuilt)) {
				t.Fatalf("offset %d, want %d", off, len(rebuilt))
			}
			rebuilt = append(rebuilt, l...)
			if !errors.Is(lerr, ErrTornLine) {
				rebuilt = append(rebuilt, '\n')
			}
			if lerr == nil {
				// Decoding outside input never panics; what decodes re-encodes to a
				// record that decodes the same.
				if r, err := audit.UnmarshalLine(l); err == nil {
					again, err := audit.MarshalLine(r)
					if err != nil {
						t.Fatal(err)
					}
					if _, err := audit.UnmarshalLine(again); err != nil {
						t.Fatalf("re-encoded record does not decode: %v", err)
					}
				}
			}
		}
		if len(data) < MaxLineBytes && !bytes.Equal(rebuilt, data) {
			t.Fatalf("lines do not rebuild the input")
		}
	})
}
