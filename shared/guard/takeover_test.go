package guard

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/audit"
	gt "github.com/aacworkflow/aacmcp/shared/guard/guardtest"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// slowFirstStore holds the first CreateIssue (the slow call's handler) until the test
// lets it go, and counts every CreateIssue: each one is the handler running the effect.
type slowFirstStore struct {
	store.Queries
	entered  chan struct{} // closed when the first CreateIssue has started
	finish   chan struct{} // closed by the test to let the first CreateIssue go on
	fail     bool          // the first CreateIssue fails once let go
	failNext bool          // the second CreateIssue (the retry's) fails
	created  atomic.Int32
}

var errSlowFailed = errors.New("the slow call's write failed")

func (s *slowFirstStore) CreateIssue(ctx context.Context, ws string, in store.NewIssue) (store.Issue, error) {
	if n := s.created.Add(1); n > 1 {
		if n == 2 && s.failNext {
			return store.Issue{}, errSlowFailed
		}
		return s.Queries.CreateIssue(ctx, ws, in)
	}
	close(s.entered)
	select {
	case <-s.finish:
	case <-ctx.Done():
		return store.Issue{}, ctx.Err()
	}
	if s.fail {
		return store.Issue{}, errSlowFailed
	}
	return s.Queries.CreateIssue(ctx, ws, in)
}

// setClock is a clock the test moves between calls.
type setClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *setClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *setClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// logRecorder keeps every log record's level and message.
type logRecorder struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (h *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *logRecorder) WithGroup(string) slog.Handler            { return h }
func (h *logRecorder) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recs = append(h.recs, r.Clone())
	return nil
}

// at returns the messages logged at level.
func (h *logRecorder) at(level slog.Level) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, r := range h.recs {
		if r.Level == level {
			out = append(out, r.Message)
		}
	}
	return out
}

// takeoverRun is one idempotent create_issue that is held in its handler until the
// client's retry, sent once the lease has run out, has taken its key over and run.
type takeoverRun struct {
	w     *gt.World
	st    *slowFirstStore
	g     *Guard
	logs  *logRecorder
	start time.Time
	req   Request
	ctx   context.Context
	clock *setClock
}

// newTakeoverRun wires st (its failure switches set by the caller) over a fresh world.
func newTakeoverRun(t *testing.T, st *slowFirstStore) *takeoverRun {
	t.Helper()
	w := gt.NewWorld(t)
	st.Queries, st.entered, st.finish = w.Store, make(chan struct{}), make(chan struct{})
	r := &takeoverRun{w: w, st: st, logs: &logRecorder{}, start: time.Now().UTC().Truncate(time.Millisecond)}
	clk := &setClock{t: r.start}
	r.g = New(Config{Catalog: w.Catalog, Store: st, Audit: &gt.MemorySink{}, Now: clk.now, Logger: slog.New(r.logs)})
	r.req = Request{Principal: gt.Principal(gt.WS, gt.Admin, "issues:write"), Tool: "create_issue",
		Args: json.RawMessage(`{"title":"Slow","idempotency_key":"k1"}`), Transport: audit.TransportREST}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a stuck call fails instead of hanging
	t.Cleanup(cancel)
	r.ctx = ctx
	r.clock = clk
	return r
}

// race runs the slow call and its retry past the lease, then lets the slow call
// finish, and returns both answers.
func (r *takeoverRun) race(t *testing.T) (slow, retry Result) {
	t.Helper()
	slowDone := make(chan Result, 1)
	go func() { slowDone <- r.g.Call(r.ctx, r.req) }()
	select {
	case <-r.st.entered:
	case <-r.ctx.Done():
		t.Fatal("the slow call never reached its handler")
	}
	// The client gives up waiting and retries once the lease has run out.
	r.clock.set(r.start.Add(PendingLease + time.Minute))
	retry = r.g.Call(r.ctx, r.req)
	close(r.st.finish)
	select {
	case slow = <-slowDone:
	case <-r.ctx.Done():
		t.Fatal("the slow call never returned")
	}
	return slow, retry
}

// TestSlowCallTakenOver: a call that outlives PendingLease is taken over by the
// client's retry, which runs and settles. When the slow call then finishes, with a
// result or an error, it must leave the retry's record alone: a third retry replays
// the retry's result, and the handler ran twice, not three times. The slow call's own
// caller still gets its own answer, and the lost race is logged once as a warning.
func TestSlowCallTakenOver(t *testing.T) {
	for _, tc := range []struct {
		name     string
		slowFail bool // the slow call fails, and so would release its claim
	}{
		{"slow call succeeds", false},
		{"slow call fails", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newTakeoverRun(t, &slowFirstStore{fail: tc.slowFail})
			slow, retry := r.race(t)
			if retry.Err != nil || retry.Replay {
				t.Fatalf("retry past the lease: err %v replay %v, want it to run", retry.Err, retry.Replay)
			}
			w, st, g, ctx, req, logs, start := r.w, r.st, r.g, r.ctx, r.req, r.logs, r.start
			// Its caller gets its own answer, unchanged by the lost claim.
			if tc.slowFail {
				if slow.Err == nil {
					t.Errorf("slow call answered %s, want its own error", slow.JSON)
				}
			} else if slow.Err != nil || slow.Replay || string(slow.JSON) == string(retry.JSON) {
				t.Errorf("slow call: err %v replay %v result %s, want its own result (the retry's is %s)", slow.Err, slow.Replay, slow.JSON, retry.JSON)
			}

			third := g.Call(ctx, req)
			if third.Err != nil || !third.Replay || string(third.JSON) != string(retry.JSON) {
				t.Errorf("third call: err %v replay %v result %s, want the retry's result %s replayed", third.Err, third.Replay, third.JSON, retry.JSON)
			}
			if n := st.created.Load(); n != 2 {
				t.Errorf("the handler ran %d times, want 2 (the slow call and its retry)", n)
			}
			rec, err := w.Store.GetIdempotency(context.Background(), store.IdempotencyKey{
				WorkspaceID: gt.WS, UserID: gt.Admin, Tool: "create_issue", KeyHash: sha256Hex([]byte("k1"))})
			if err != nil || rec.State != store.IdemCompleted || !rec.CreatedAt.Equal(start.Add(PendingLease+time.Minute)) {
				t.Errorf("stored record = %+v, %v; want the retry's completed record", rec, err)
			}

			warns := logs.at(slog.LevelWarn)
			if len(warns) != 1 || !strings.Contains(warns[0], "taken over") {
				t.Errorf("warnings = %q, want one about the claim taken over", warns)
			}
			// The failing slow call logs its own failure; nothing about the claim.
			for _, msg := range logs.at(slog.LevelError) {
				if strings.Contains(msg, "idempotency") {
					t.Errorf("error logged %q: losing the claim is not a failure", msg)
				}
			}
		})
	}
}

// TestSlowCallOutlivesFailedRetry: the retry that took the slow call's key over
// fails and releases it; the slow call then succeeds. Its effect is stored, so its
// result must be too: a third retry replays it instead of running the effect again.
func TestSlowCallOutlivesFailedRetry(t *testing.T) {
	r := newTakeoverRun(t, &slowFirstStore{failNext: true})
	slow, retry := r.race(t)
	if retry.Err == nil {
		t.Fatalf("retry: answered %s, want its handler's failure", retry.JSON)
	}
	st, g, ctx, req, logs := r.st, r.g, r.ctx, r.req, r.logs
	if slow.Err != nil || slow.Replay {
		t.Fatalf("slow call: err %v replay %v, want its own result", slow.Err, slow.Replay)
	}

	third := g.Call(ctx, req)
	if third.Err != nil || !third.Replay || string(third.JSON) != string(slow.JSON) {
		t.Errorf("third call: err %v replay %v result %s, want the slow call's result %s replayed", third.Err, third.Replay, third.JSON, slow.JSON)
	}
	if n := st.created.Load(); n != 2 {
		t.Errorf("the handler ran %d times, want 2 (the slow call and its failed retry)", n)
	}
	if warns := logs.at(slog.LevelWarn); len(warns) != 1 || !strings.Contains(warns[0], "taken over") {
		t.Errorf("warnings = %q, want one about the claim taken over", warns)
	}
	for _, msg := range logs.at(slog.LevelError) {
		if strings.Contains(msg, "idempotency") {
			t.Errorf("error logged %q: the result was stored", msg)
		}
	}
}
