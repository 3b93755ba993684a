package guard

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/audit"
	gt "github.com/aacworkflow/aacmcp/shared/guard/guardtest"
	"github.com/aacworkflow/aacmcp/shared/store"
	"github.com/aacworkflow/aacmcp/shared/store/memory"
)

// usageLog is a store that records the usage increments it is handed, the state of
// the context each came with, and whether it declares network round trips.
type usageLog struct {
	*memory.Store
	parallel bool

	mu      sync.Mutex
	incs    []store.UsageIncrement
	ctxErrs []error
}

func (s *usageLog) ConcurrentReads() bool { return s.parallel }

func (s *usageLog) UpdateUsage(ctx context.Context, inc store.UsageIncrement) error {
	s.mu.Lock()
	s.incs = append(s.incs, inc)
	s.ctxErrs = append(s.ctxErrs, ctx.Err())
	s.mu.Unlock()
	return s.Store.UpdateUsage(ctx, inc)
}

// checkedSink records what it is asked to write and the state of the context, and
// fails every write when fail is set.
type checkedSink struct {
	fail bool

	mu      sync.Mutex
	recs    []audit.Record
	ctxErrs []error
}

func (s *checkedSink) Write(ctx context.Context, r audit.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recs = append(s.recs, r)
	s.ctxErrs = append(s.ctxErrs, ctx.Err())
	if s.fail {
		return errors.New("sink down")
	}
	return nil
}

// TestFinishDeliversRecordAndUsage: whether the usage update runs inline (in-process
// store) or beside the audit write (network store), every call writes exactly one
// record and hands exactly one increment, bearing the record's event id, to the
// store; both see a live context even when the caller's is already cancelled; and a
// failed audit write turns a success into internal_error without losing the count.
func TestFinishDeliversRecordAndUsage(t *testing.T) {
	for _, tc := range []struct {
		name       string
		parallel   bool
		sinkFails  bool
		principal  bool
		wantCode   apperr.Code
		wantCounts int
	}{
		{"inline", false, false, true, "", 1},
		{"parallel", true, false, true, "", 1},
		{"inline, sink down", false, true, true, apperr.InternalError, 1},
		{"parallel, sink down", true, true, true, apperr.InternalError, 1},
		{"inline, no principal", false, false, false, apperr.InvalidToken, 0},
		{"parallel, no principal", true, false, false, apperr.InvalidToken, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := gt.NewWorld(t)
			st := &usageLog{Store: w.Store, parallel: tc.parallel}
			sink := &checkedSink{fail: tc.sinkFails}
			g := New(Config{Catalog: w.Catalog, Store: st, Audit: sink})
			args, _ := json.Marshal(map[string]string{"issue_id": w.Issue.Key})
			req := Request{Tool: "get_issue", Args: args, Transport: audit.TransportMCP}
			if tc.principal {
				req.Principal = gt.Principal(gt.WS, gt.Admin, "issues:read")
			}
			// A caller that went away: the pipeline's reads fail fast or not, but
			// the record and the count must still be delivered.
			ctx, cancel := context.WithCancel(context.Background())
			c := g.newCall(req)
			res := g.run(ctx, c)
			cancel()
			g.finish(ctx, c, &res, true)

			var got apperr.Code
			if res.Err != nil {
				got = res.Err.Code
			}
			if got != tc.wantCode {
				t.Fatalf("code %q, want %q (%v)", got, tc.wantCode, res.Err)
			}
			if tc.wantCode != "" && res.JSON != nil {
				t.Errorf("failed call carries a result: %s", res.JSON)
			}
			sink.mu.Lock()
			defer sink.mu.Unlock()
			st.mu.Lock()
			defer st.mu.Unlock()
			if len(sink.recs) != 1 {
				t.Fatalf("%d audit writes, want 1", len(sink.recs))
			}
			if sink.ctxErrs[0] != nil {
				t.Errorf("audit write saw a cancelled context: %v", sink.ctxErrs[0])
			}
			if len(st.incs) != tc.wantCounts {
				t.Fatalf("%d usage increments, want %d", len(st.incs), tc.wantCounts)
			}
			if tc.wantCounts == 1 {
				inc, rec := st.incs[0], sink.recs[0]
				if inc.EventID != rec.EventID || inc.WorkspaceID != gt.WS || inc.Tool != "get_issue" ||
					inc.Outcome != rec.Outcome || inc.Date != rec.Timestamp[:len(time.DateOnly)] {
					t.Errorf("increment %+v does not match record %+v", inc, rec)
				}
				if st.ctxErrs[0] != nil {
					t.Errorf("usage update saw a cancelled context: %v", st.ctxErrs[0])
				}
			}
			if res.Record.EventID != sink.recs[0].EventID {
				t.Errorf("result names record %s, sink got %s", res.Record.EventID, sink.recs[0].EventID)
			}
		})
	}
}

type ctxKey struct{}

// TestDetach: the detached context keeps values and deadline, never inherits a
// cancellation, and its cancel only releases what detach made.
func TestDetach(t *testing.T) {
	base := context.WithValue(context.Background(), ctxKey{}, "v")
	deadline := time.Now().Add(time.Hour)
	for _, tc := range []struct {
		name         string
		ctx          func() (context.Context, context.CancelFunc)
		wantDeadline bool
	}{
		{"never cancelled", func() (context.Context, context.CancelFunc) { return base, func() {} }, false},
		{"cancelled", func() (context.Context, context.CancelFunc) { return context.WithCancel(base) }, false},
		{"deadline", func() (context.Context, context.CancelFunc) { return context.WithDeadline(base, deadline) }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := tc.ctx()
			d := detach(ctx)
			cancel()
			if err := d.Err(); err != nil {
				t.Errorf("detached context inherited %v", err)
			}
			if v, _ := d.Value(ctxKey{}).(string); v != "v" {
				t.Errorf("value lost: %q", v)
			}
			dl, ok := d.Deadline()
			if ok != tc.wantDeadline || (ok && !dl.Equal(deadline)) {
				t.Errorf("deadline %v %v, want %v %v", dl, ok, deadline, tc.wantDeadline)
			}
			d.cancel()
			if tc.wantDeadline && d.Err() == nil {
				t.Error("cancel did not end the detached deadline context")
			}
		})
	}
}
