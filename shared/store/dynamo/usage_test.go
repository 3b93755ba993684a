package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/aacworkflow/aacmcp/shared/store"
	"github.com/aacworkflow/aacmcp/shared/store/dynamo"
)

func newUsageWS() string { return "ws_usage_" + strings.ToLower(store.NewULID()) }

// wantNoUsageGuard checks that no event id is left in the counter item's guard set.
func wantNoUsageGuard(t *testing.T, s *dynamo.Store, ws, date, tool string) {
	t.Helper()
	evs, err := dynamo.UsageGuard(context.Background(), s, ws, date, tool)
	if err != nil || len(evs) != 0 {
		t.Errorf("usage guard set of %s/%s = %v, %v; want empty", date, tool, evs, err)
	}
}

func TestUpdateUsageCountsAndClearsGuard(t *testing.T) {
	e := newEnv(t, envConfig{})
	ctx := t.Context()
	tests := []struct {
		name     string
		outcomes []string
		eventID  func() string
		want     store.UsageRow
	}{
		{"one success", []string{"success"}, store.NewULID, store.UsageRow{Calls: 1}},
		{"every outcome", []string{"success", "denied", "error", "denied"}, store.NewULID, store.UsageRow{Calls: 4, Denied: 2, Errors: 1}},
		{"no event id", []string{"error", "success"}, func() string { return "" }, store.UsageRow{Calls: 2, Errors: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ws := newUsageWS()
			e.calls.Reset()
			for _, o := range tc.outcomes {
				if err := e.store.UpdateUsage(ctx, store.UsageIncrement{WorkspaceID: ws, Date: "2026-04-01", Tool: "list_issues", Outcome: o, EventID: tc.eventID()}); err != nil {
					t.Fatal(err)
				}
			}
			if err := e.store.Drain(ctx); err != nil {
				t.Fatal(err)
			}
			// The ADD and its cleanup per call, and nothing else (no event marker).
			n := int64(len(tc.outcomes))
			if got := e.calls.Calls(); got["UpdateItem"] != 2*n || e.calls.Total() != 2*n {
				t.Errorf("calls = %v, want UpdateItem=%d only", got, 2*n)
			}
			want := tc.want
			want.Date, want.Tool = "2026-04-01", "list_issues"
			wantUsage(t, e.store, ws, want)
			wantNoUsageGuard(t, e.store, ws, want.Date, want.Tool)
		})
	}
}

// holdCleanup lets every UpdateItem through except the guard cleanups, which wait
// until release is closed (or their context ends).
type holdCleanup struct {
	dynamo.API
	release chan struct{}
	started chan struct{} // one send per held cleanup
	// misplaced counts updates whose context says the opposite of where they belong:
	// a cleanup not marked as background, or an ADD marked as background.
	misplaced atomic.Int32
}

func (h *holdCleanup) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opt ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	cleanup := strings.HasPrefix(aws.ToString(in.UpdateExpression), "DELETE evs")
	if cleanup != dynamo.InBackground(ctx) {
		h.misplaced.Add(1)
	}
	if cleanup {
		h.started <- struct{}{}
		select {
		case <-h.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return h.API.UpdateItem(ctx, in, opt...)
}

// TestUpdateUsageCleanupAfterReturn shows the cleanup is off the request path:
// UpdateUsage returns while it is held, with the count already applied, and Drain
// waits for it.
func TestUpdateUsageCleanupAfterReturn(t *testing.T) {
	h := &holdCleanup{release: make(chan struct{}), started: make(chan struct{}, 1)}
	e := newEnv(t, envConfig{opts: []dynamo.Option{dynamo.WithAPI(func(a dynamo.API) dynamo.API { h.API = a; return h })}})
	ctx := t.Context()
	ws := newUsageWS()
	ev := store.NewULID()
	if err := e.store.UpdateUsage(ctx, store.UsageIncrement{WorkspaceID: ws, Date: "2026-04-02", Tool: "get_issue", Outcome: "success", EventID: ev}); err != nil {
		t.Fatal(err)
	}
	<-h.started
	wantUsage(t, e.store, ws, store.UsageRow{Date: "2026-04-02", Tool: "get_issue", Calls: 1})
	evs, err := dynamo.UsageGuard(ctx, e.store, ws, "2026-04-02", "get_issue")
	if err != nil || len(evs) != 1 || evs[0] != ev {
		t.Fatalf("guard set while the cleanup is held = %v, %v; want [%s]", evs, err, ev)
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := e.store.Drain(cancelled); !errors.Is(err, context.Canceled) {
		t.Errorf("Drain with a cancelled context while a cleanup is held = %v, want context.Canceled", err)
	}

	close(h.release)
	if err := e.store.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	wantNoUsageGuard(t, e.store, ws, "2026-04-02", "get_issue")
	if n := h.misplaced.Load(); n != 0 {
		t.Errorf("%d updates with the wrong InBackground mark", n)
	}
}

// TestUpdateUsageAfterClose: after Close no goroutine is left behind, so the cleanup
// is done by the time UpdateUsage returns.
func TestUpdateUsageAfterClose(t *testing.T) {
	e := newEnv(t, envConfig{})
	ctx := t.Context()
	ws := newUsageWS()
	if err := e.store.UpdateUsage(ctx, store.UsageIncrement{WorkspaceID: ws, Date: "2026-04-03", Tool: "get_issue", Outcome: "denied", EventID: store.NewULID()}); err != nil {
		t.Fatal(err)
	}
	if err := e.store.Close(); err != nil {
		t.Fatal(err)
	}
	wantNoUsageGuard(t, e.store, ws, "2026-04-03", "get_issue")
	if err := e.store.UpdateUsage(ctx, store.UsageIncrement{WorkspaceID: ws, Date: "2026-04-03", Tool: "get_issue", Outcome: "success", EventID: store.NewULID()}); err != nil {
		t.Fatal(err)
	}
	wantNoUsageGuard(t, e.store, ws, "2026-04-03", "get_issue")
	wantUsage(t, e.store, ws, store.UsageRow{Date: "2026-04-03", Tool: "get_issue", Calls: 2, Denied: 1})
}

// TestUpdateUsageConcurrent: counts are exact when many calls race on the same items,
// and every guard entry is gone once the background work is drained.
func TestUpdateUsageConcurrent(t *testing.T) {
	e := newEnv(t, envConfig{})
	ctx := t.Context()
	ws := newUsageWS()
	const workers, perWorker = 8, 12
	tools := []string{"get_issue", "list_issues"}
	outcomes := []string{"success", "success", "denied", "error"}
	var wg sync.WaitGroup
	errs := make(chan error, workers*perWorker)
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				u := store.UsageIncrement{WorkspaceID: ws, Date: "2026-04-04", Tool: tools[(w+i)%len(tools)],
					Outcome: outcomes[i%len(outcomes)], EventID: store.NewULID()}
				if err := e.store.UpdateUsage(ctx, u); err != nil {
					errs <- fmt.Errorf("worker %d call %d: %w", w, i, err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := e.store.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	want := map[string]store.UsageRow{}
	for w := range workers {
		for i := range perWorker {
			tool := tools[(w+i)%len(tools)]
			r := want[tool]
			r.Date, r.Tool = "2026-04-04", tool
			r.Calls++
			switch outcomes[i%len(outcomes)] {
			case "denied":
				r.Denied++
			case "error":
				r.Errors++
			}
			want[tool] = r
		}
	}
	rows, err := e.store.ListUsage(ctx, ws, "2026-04-04", "2026-04-04")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(want) {
		t.Fatalf("rows = %+v, want %d rows", rows, len(want))
	}
	for _, r := range rows {
		if r != want[r.Tool] {
			t.Errorf("row %+v, want %+v", r, want[r.Tool])
		}
		wantNoUsageGuard(t, e.store, ws, r.Date, r.Tool)
	}
}

// BenchmarkUpdateUsage is the time a tool call waits for its usage counter against
// the local dynalite (round trips dominate; background cleanups are drained outside
// the timer at the end).
func BenchmarkUpdateUsage(b *testing.B) {
	e := newEnv(b, envConfig{})
	ctx := context.Background()
	ws := newUsageWS()
	for b.Loop() {
		if err := e.store.UpdateUsage(ctx, store.UsageIncrement{WorkspaceID: ws, Date: "2026-04-05", Tool: "get_issue", Outcome: "success", EventID: store.NewULID()}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if err := e.store.Drain(ctx); err != nil {
		b.Fatal(err)
	}
}
