package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/store"
	"github.com/aacworkflow/aacmcp/shared/store/sqlite"
)

// TestUpdateUsageConcurrent runs many increments at once, so that the background
// flusher commits them in several batches while ListUsage flushes the rest, and
// checks that each counts exactly once: duplicates of an event id (retries) are
// dropped whichever batch they land in.
func TestUpdateUsageConcurrent(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	type want struct{ calls, denied, errors int64 }
	tests := []struct {
		name     string
		callers  int
		outcomes []string
		tools    []string
		dupEvery int // every dupEvery-th caller repeats the previous caller's event id
	}{
		{name: "one tool, all successes", callers: 64, outcomes: []string{"success"}, tools: []string{"get_issue"}},
		{name: "mixed outcomes and tools", callers: 90, outcomes: []string{"success", "denied", "error"}, tools: []string{"a", "b"}},
		{name: "with retried events", callers: 60, outcomes: []string{"success", "error"}, tools: []string{"c"}, dupEvery: 3},
	}
	for ti, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ws := fmt.Sprintf("ws%d", ti)
			expect := map[string]*want{}
			incs := make([]store.UsageIncrement, tc.callers)
			for i := range incs {
				ev := fmt.Sprintf("%s-ev-%d", ws, i)
				if tc.dupEvery > 0 && i%tc.dupEvery == tc.dupEvery-1 {
					// A retry: same event (so same tool and outcome) as the caller before.
					incs[i] = incs[i-1]
					continue
				}
				incs[i] = store.UsageIncrement{WorkspaceID: ws, Date: "2026-03-01",
					Tool: tc.tools[i%len(tc.tools)], Outcome: tc.outcomes[i%len(tc.outcomes)], EventID: ev}
				w := expect[incs[i].Tool]
				if w == nil {
					w = &want{}
					expect[incs[i].Tool] = w
				}
				w.calls++
				switch incs[i].Outcome {
				case "denied":
					w.denied++
				case "error":
					w.errors++
				}
			}
			var wg sync.WaitGroup
			errs := make([]error, len(incs))
			for i, inc := range incs {
				wg.Go(func() { errs[i] = s.UpdateUsage(ctx, inc) })
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Fatalf("caller %d: %v", i, err)
				}
			}
			rows, err := s.ListUsage(ctx, ws, "2026-03-01", "2026-03-01")
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != len(expect) {
				t.Fatalf("got %d rows, want %d: %+v", len(rows), len(expect), rows)
			}
			for _, r := range rows {
				w := expect[r.Tool]
				if w == nil || r.Calls != w.calls || r.Denied != w.denied || r.Errors != w.errors {
					t.Errorf("tool %s: got calls %d denied %d errors %d, want %+v", r.Tool, r.Calls, r.Denied, r.Errors, w)
				}
			}
		})
	}
}

// TestUsageQueueDurability checks what the background flush must keep: increments
// accepted before Close are committed by it (a second store on the file sees them),
// more increments than one flush batch are all counted, a store that is closed
// refuses new ones, and RecoverUsage counts only events not counted before.
func TestUsageQueueDurability(t *testing.T) {
	ctx := context.Background()
	inc := func(ws string, i int, outcome string) store.UsageIncrement {
		return store.UsageIncrement{WorkspaceID: ws, Date: "2026-03-01", Tool: "get_issue", Outcome: outcome, EventID: fmt.Sprintf("%s-%d", ws, i)}
	}
	tests := []struct {
		name      string
		queued    int    // increments accepted before Close
		recovered []int  // event numbers then recovered, after reopening
		outcome   string // of every increment
		wantCalls int64
		wantNew   int // RecoverUsage's answer
	}{
		{name: "close commits the queue", queued: 10, outcome: "success", wantCalls: 10},
		{name: "more than a flush batch", queued: 3*4096 + 7, outcome: "denied", wantCalls: 3*4096 + 7},
		{name: "recovery skips counted events", queued: 5, recovered: []int{0, 4, 5, 6, 6}, outcome: "error", wantCalls: 7, wantNew: 2},
	}
	for ti, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "aacmcp.db")
			ws := fmt.Sprintf("ws%d", ti)
			s, err := sqlite.Open(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			for w := range 8 {
				wg.Go(func() {
					for i := w; i < tc.queued; i += 8 {
						if err := s.UpdateUsage(ctx, inc(ws, i, tc.outcome)); err != nil {
							t.Errorf("UpdateUsage %d: %v", i, err)
						}
					}
				})
			}
			wg.Wait()
			if err := s.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if err := s.UpdateUsage(ctx, inc(ws, 0, tc.outcome)); err == nil || store.IsStorage(err) {
				t.Errorf("UpdateUsage after Close = %v, want a failure of the backend", err)
			}

			s2 := openAt(t, path)
			var incs []store.UsageIncrement
			for _, i := range tc.recovered {
				incs = append(incs, inc(ws, i, tc.outcome))
			}
			n, err := s2.RecoverUsage(ctx, incs)
			if err != nil || n != tc.wantNew {
				t.Errorf("RecoverUsage = %d, %v; want %d", n, err, tc.wantNew)
			}
			rows, err := s2.ListUsage(ctx, ws, "2026-03-01", "2026-03-01")
			if err != nil || len(rows) != 1 {
				t.Fatalf("ListUsage = %+v, %v; want one row", rows, err)
			}
			r := rows[0]
			wantDenied, wantErrors := int64(0), int64(0)
			switch tc.outcome {
			case "denied":
				wantDenied = tc.wantCalls
			case "error":
				wantErrors = tc.wantCalls
			}
			if r.Calls != tc.wantCalls || r.Denied != wantDenied || r.Errors != wantErrors {
				t.Errorf("usage = %+v, want calls %d denied %d errors %d", r, tc.wantCalls, wantDenied, wantErrors)
			}
		})
	}
}

// TestUsageWatermark checks the durable watermark the replay starts from: a new
// database starts it at open time less the slack, and a flush moves it to its own
// time less the slack, in the transaction that commits the increments.
func TestUsageWatermark(t *testing.T) {
	ctx := context.Background()
	const slack = 5 * time.Minute
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	now := t0
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); now = now.Add(d) }
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "aacmcp.db"), sqlite.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	steps := []struct {
		name    string
		advance time.Duration
		queue   bool // queue an increment before flushing
		want    time.Time
	}{
		{name: "new database", want: t0.Add(-slack)},
		{name: "empty flush leaves it", advance: time.Hour, want: t0.Add(-slack)},
		{name: "flush moves it", queue: true, want: t0.Add(time.Hour - slack)},
		{name: "later flush", advance: time.Minute, queue: true, want: t0.Add(time.Hour + time.Minute - slack)},
	}
	for i, st := range steps {
		advance(st.advance)
		if st.queue {
			if err := s.UpdateUsage(ctx, store.UsageIncrement{WorkspaceID: "ws", Date: "2026-03-01", Tool: "t", Outcome: "success", EventID: fmt.Sprint("ev", i)}); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.FlushUsage(ctx); err != nil {
			t.Fatalf("%s: FlushUsage: %v", st.name, err)
		}
		got, err := s.UsageReplayFrom(ctx)
		if err != nil || !got.Equal(st.want) {
			t.Errorf("%s: UsageReplayFrom = %v, %v; want %v", st.name, got, err, st.want)
		}
	}
}

func openAt(t *testing.T, path string) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}
