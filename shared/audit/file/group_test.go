package file

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/audit/audittest"
)

// gatedWrites replaces the sink's write(2): the first call blocks until release is
// closed, so that the test can queue Writes behind it and know exactly which group
// each one joins; the second call goes to fail, if set, and every other to the file.
type gatedWrites struct {
	entered chan struct{} // closed when the first call has begun
	release chan struct{}
	fail    func(f *os.File, b []byte) (int, error)

	mu    sync.Mutex
	calls [][]byte // what each call was asked to write
}

func gate(s *Sink, fail func(f *os.File, b []byte) (int, error)) *gatedWrites {
	g := &gatedWrites{entered: make(chan struct{}), release: make(chan struct{}), fail: fail}
	s.writeFile = func(f *os.File, b []byte) (int, error) {
		g.mu.Lock()
		g.calls = append(g.calls, bytes.Clone(b))
		n := len(g.calls)
		g.mu.Unlock()
		if n == 1 {
			close(g.entered)
			<-g.release
		} else if n == 2 && g.fail != nil {
			return g.fail(f, b)
		}
		return f.Write(b)
	}
	return g
}

func (g *gatedWrites) call(i int) []byte {
	g.mu.Lock()
	defer g.mu.Unlock()
	if i >= len(g.calls) {
		return nil
	}
	return g.calls[i]
}

// waitQueued waits until n Writes wait in s's queue. It only waits; a sink that never
// queues them makes the test time out.
func waitQueued(t *testing.T, s *Sink, n int) {
	t.Helper()
	for {
		s.mu.Lock()
		q := len(s.queue)
		s.mu.Unlock()
		if q >= n {
			return
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// startWrites starts one Write per record, each once the one before it is queued, so
// the queue holds them in the order given. It returns their results, in that order.
func startWrites(t *testing.T, s *Sink, recs []audit.Record, alreadyQueued int) func() []error {
	t.Helper()
	errs := make([]error, len(recs))
	var wg sync.WaitGroup
	for i, r := range recs {
		wg.Go(func() { errs[i] = s.Write(context.Background(), r) })
		waitQueued(t, s, alreadyQueued+i+1)
	}
	return func() []error { wg.Wait(); return errs }
}

// lineIDs returns the event ids of the whole lines in b, in order.
func lineIDs(t *testing.T, b []byte) []string {
	t.Helper()
	var ids []string
	for l := range bytes.Lines(b) {
		r, err := audit.UnmarshalLine(l)
		if err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		ids = append(ids, r.EventID)
	}
	return ids
}

func eventIDs(recs []audit.Record) []string {
	ids := make([]string, len(recs))
	for i, r := range recs {
		ids[i] = r.EventID
	}
	return ids
}

// TestGroupCommitOrderAndHours queues Writes for two hours behind a write in progress
// and checks that they go out as one write(2) per hour, in queue order, and that
// every caller is answered.
func TestGroupCommitOrderAndHours(t *testing.T) {
	dir := t.TempDir()
	s := newSink(t, dir)
	g := gate(s, nil)
	h15 := time.Date(2025, 6, 22, 15, 0, 0, 0, time.UTC)
	h16 := h15.Add(time.Hour)

	first := make(chan error, 1)
	go func() { first <- s.Write(context.Background(), audittest.Record(h15.Add(time.Minute))) }()
	<-g.entered
	var recs []audit.Record
	for i := range 6 {
		h := h15
		if i%2 == 1 {
			h = h16
		}
		recs = append(recs, audittest.Record(h.Add(time.Duration(i)*time.Second)))
	}
	wait := startWrites(t, s, recs, 0)
	close(g.release)
	if err := <-first; err != nil {
		t.Fatalf("leader: %v", err)
	}
	for i, err := range wait() {
		if err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	want := map[time.Time][]string{h15: eventIDs([]audit.Record{recs[0], recs[2], recs[4]}), h16: eventIDs([]audit.Record{recs[1], recs[3], recs[5]})}
	// The queued group took one write(2) per hour, hours in order of first arrival.
	for i, h := range []time.Time{h15, h16} {
		if got := lineIDs(t, g.call(1+i)); !slices.Equal(got, want[h]) {
			t.Errorf("write %d (hour %s) = %v, want %v", 1+i, h.Format("15"), got, want[h])
		}
	}
	if got := g.call(3); got != nil {
		t.Errorf("unexpected extra write %q", got)
	}
	// The files hold the same lines in the same order, after the leader's own.
	for h, ids := range want {
		files := jsonFiles(t, dir, h)
		if len(files) != 1 {
			t.Fatalf("hour %s: %d files", h, len(files))
		}
		b, err := os.ReadFile(files[0])
		if err != nil {
			t.Fatal(err)
		}
		got := lineIDs(t, b)
		if h == h15 {
			got = got[1:]
		}
		if !slices.Equal(got, ids) {
			t.Errorf("hour %s file = %v, want %v", h.Format("15"), got, ids)
		}
	}
}

// TestGroupWriteErrorReachesEveryCaller fails the write(2) of a group of queued
// Writes and checks that every caller of that group gets the error, the caller of the
// group before does not, and the file is given up for a new one.
func TestGroupWriteErrorReachesEveryCaller(t *testing.T) {
	injected := errors.New("injected: no space left on device")
	tests := []struct {
		name string
		fail func(f *os.File, b []byte) (int, error)
		torn bool // the failed write left part of the group in the file
	}{
		{"nothing written", func(*os.File, []byte) (int, error) { return 0, injected }, false},
		{"short write", func(f *os.File, b []byte) (int, error) {
			n, err := f.Write(b[:len(b)/2+1])
			return n, errors.Join(err, injected)
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s := newSink(t, dir)
			g := gate(s, tt.fail)
			ts := time.Date(2025, 6, 22, 15, 30, 0, 0, time.UTC)
			hour := ts.Truncate(time.Hour)

			leader := audittest.Record(ts)
			first := make(chan error, 1)
			go func() { first <- s.Write(context.Background(), leader) }()
			<-g.entered
			var group []audit.Record
			for i := range 5 {
				group = append(group, audittest.Record(ts.Add(time.Duration(i+1)*time.Second)))
			}
			wait := startWrites(t, s, group, 0)
			close(g.release)
			if err := <-first; err != nil {
				t.Fatalf("the group before the failure: %v", err)
			}
			for i, err := range wait() {
				if !apperr.Is(err, apperr.InternalError) || !errors.Is(err, injected) {
					t.Errorf("caller %d of the failed group got %v, want internal_error wrapping the injected error", i, err)
				}
			}
			if got := lineIDs(t, g.call(1)); !slices.Equal(got, eventIDs(group)) {
				t.Fatalf("the group was not one write(2): %v", got)
			}

			// The file that may hold a partial line is closed; the next record
			// starts a new one.
			s.mu.Lock()
			_, open := s.files[hour]
			s.mu.Unlock()
			if open {
				t.Fatal("the file of the failed write is still in use")
			}
			after := audittest.Record(ts.Add(time.Minute))
			mustWrite(t, s, after)
			if n := len(jsonFiles(t, dir, hour)); n != 2 {
				t.Fatalf("%d files after the failure, want 2", n)
			}

			recs, bad, err := ReadAll(dir)
			if err != nil {
				t.Fatal(err)
			}
			got := eventIDs(recs)
			for _, id := range []string{leader.EventID, after.EventID} {
				if !slices.Contains(got, id) {
					t.Errorf("record %s, answered as written, is missing", id)
				}
			}
			if tt.torn {
				if len(bad) != 1 || !errors.Is(bad[0], ErrTornLine) {
					t.Fatalf("damage = %v, want one torn tail", bad)
				}
			} else if len(bad) != 0 || len(recs) != 2 {
				t.Fatalf("read %d records and damage %v, want the 2 answered as written", len(recs), bad)
			}
		})
	}
}

// TestCloseWaitsForQueuedWrites closes the sink while a group is being written and
// more Writes wait: Close returns after all of them are in the file, and Writes that
// come after Close fail.
func TestCloseWaitsForQueuedWrites(t *testing.T) {
	dir := t.TempDir()
	s := newSink(t, dir)
	g := gate(s, nil)
	ts := time.Date(2025, 6, 22, 15, 30, 0, 0, time.UTC)

	first := make(chan error, 1)
	go func() { first <- s.Write(context.Background(), audittest.Record(ts)) }()
	<-g.entered
	var queued []audit.Record
	for i := range 4 {
		queued = append(queued, audittest.Record(ts.Add(time.Duration(i+1)*time.Second)))
	}
	wait := startWrites(t, s, queued, 0)

	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	for {
		s.mu.Lock()
		c := s.closed
		s.mu.Unlock()
		if c {
			break
		}
		time.Sleep(100 * time.Microsecond)
	}
	if err := s.Write(context.Background(), audittest.Record(ts)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Write after Close began = %v, want ErrClosed", err)
	}
	close(g.release)
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	for i, err := range wait() {
		if err != nil {
			t.Fatalf("queued write %d: %v", i, err)
		}
	}
	recs, bad, err := ReadAll(dir)
	if err != nil || len(bad) != 0 || len(recs) != 1+len(queued) {
		t.Fatalf("ReadAll = %d records, %v, %v; want %d", len(recs), bad, err, 1+len(queued))
	}
}

// TestGroupCommitConcurrentWriters hammers the sink from many goroutines, with and
// without fsync, across two hours: exactly the records written are read back, each
// line whole, and each goroutine's records appear in its own order (a goroutine's
// next Write queues only after its previous one was answered).
func TestGroupCommitConcurrentWriters(t *testing.T) {
	tests := []struct {
		name       string
		goroutines int
		perG       int
		opts       []Option
	}{
		{"page cache", 32, 100, nil},
		{"fsync", 8, 20, []Option{WithFsync()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s := newSink(t, dir, tt.opts...)
			ts := time.Date(2025, 6, 22, 15, 59, 0, 0, time.UTC)
			var wg sync.WaitGroup
			errs := make(chan error, tt.goroutines)
			for gi := range tt.goroutines {
				wg.Go(func() {
					for i := range tt.perG {
						// Alternate between the two hours around 16:00.
						r := audittest.Record(ts.Add(time.Duration(i%2)*time.Minute+time.Duration(i)*time.Millisecond), func(r *audit.Record) {
							r.RequestID = fmt.Sprintf("g%03d-i%04d", gi, i)
						})
						if err := s.Write(context.Background(), r); err != nil {
							errs <- err
							return
						}
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

			total := 0
			seen := make(map[string]bool)
			for _, h := range []time.Time{ts.Truncate(time.Hour), ts.Truncate(time.Hour).Add(time.Hour)} {
				files := jsonFiles(t, dir, h)
				if len(files) != 1 {
					t.Fatalf("hour %s: %d files, want 1", h, len(files))
				}
				b, err := os.ReadFile(filepath.Clean(files[0]))
				if err != nil {
					t.Fatal(err)
				}
				if len(b) == 0 || b[len(b)-1] != '\n' {
					t.Fatalf("%s does not end with a newline", files[0])
				}
				last := make(map[string]string) // goroutine -> last request id seen
				for l := range bytes.Lines(b) {
					r, err := audit.UnmarshalLine(l)
					if err != nil {
						t.Fatalf("damaged line %q: %v", l, err)
					}
					if seen[r.RequestID] {
						t.Fatalf("record %s written twice", r.RequestID)
					}
					seen[r.RequestID] = true
					gid, _, _ := strings.Cut(r.RequestID, "-")
					if prev := last[gid]; prev >= r.RequestID {
						t.Fatalf("%s after %s in one file", r.RequestID, prev)
					}
					last[gid] = r.RequestID
					total++
				}
			}
			if total != tt.goroutines*tt.perG {
				t.Fatalf("read %d records, wrote %d", total, tt.goroutines*tt.perG)
			}
		})
	}
}

// BenchmarkSinkWrite measures Write from concurrent callers, as the server makes it
// (one goroutine per request). With -cpu or GOMAXPROCS above 1, callers overlap and
// group commit shares write(2)s and fsyncs among them.
func BenchmarkSinkWrite(b *testing.B) {
	for _, bc := range []struct {
		name string
		opts []Option
	}{
		{"page-cache", nil},
		{"fsync", []Option{WithFsync()}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ts := time.Date(2025, 6, 22, 15, 30, 0, 0, time.UTC)
			s, err := New(b.TempDir(), append(bc.opts, WithClock(func() time.Time { return ts }))...)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			r := audittest.Record(ts)
			b.ReportAllocs()
			b.SetParallelism(8) // many requests in flight per core, as in the server
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := s.Write(context.Background(), r); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
