package sqlite_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/aacworkflow/aacmcp/shared/store"
)

// TestUpdateUsageConcurrent runs many increments at once, so that they are committed
// in groups, and checks that each counts exactly once: duplicates of an event id
// (retries) are dropped whichever group they land in, and every caller gets its own
// answer.
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
