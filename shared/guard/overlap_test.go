package guard_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/guard"
	gt "github.com/aacworkflow/aacmcp/shared/guard/guardtest"
	"github.com/aacworkflow/aacmcp/shared/store"
	"github.com/aacworkflow/aacmcp/shared/store/memory"
)

// gatedStore is a network-like store (ConcurrentReads) whose writes honour the
// write gate, as the DynamoDB store's client does; it counts the writes that
// reached it.
type gatedStore struct {
	*memory.Store
	writes atomic.Int64
}

func (s *gatedStore) ConcurrentReads() bool { return true }

func (s *gatedStore) CreateIssue(ctx context.Context, ws string, in store.NewIssue) (store.Issue, error) {
	if err := store.AwaitWriteGate(ctx); err != nil {
		return store.Issue{}, err
	}
	s.writes.Add(1)
	return s.Store.CreateIssue(ctx, ws, in)
}

// slowDeny refuses every call, after a while: the handler has long started by then.
type slowDeny struct{}

func (slowDeny) Allow(context.Context, auth.Principal, string, time.Time) (time.Duration, error) {
	time.Sleep(20 * time.Millisecond)
	return time.Minute, nil
}

// TestOverlappedChecksGateWrites: on a network store the limiter, the member check
// and the handler start together, yet a call either check refuses writes nothing and
// gets the earlier check's error, as in sequence.
func TestOverlappedChecksGateWrites(t *testing.T) {
	for _, tc := range []struct {
		name    string
		user    string
		limiter guard.Limiter
		args    string
		want    apperr.Code
		writes  int64
	}{
		{"admitted", gt.Admin, nil, `{"title":"t"}`, "", 1},
		{"rate limited", gt.Admin, slowDeny{}, `{"title":"t"}`, apperr.RateLimited, 0},
		{"viewer", gt.Viewer, nil, `{"title":"t"}`, apperr.PermissionDenied, 0},
		{"outsider", gt.Outsider, nil, `{"title":"t"}`, apperr.PermissionDenied, 0},
		{"rate limited outranks the member check", gt.Outsider, slowDeny{}, `{"title":"t"}`, apperr.RateLimited, 0},
		{"rate limited outranks bad arguments", gt.Admin, slowDeny{}, `{"title":1}`, apperr.RateLimited, 0},
		{"bad arguments", gt.Admin, nil, `{"title":1}`, apperr.InvalidArguments, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := gt.NewWorld(t)
			st := &gatedStore{Store: w.Store}
			g := guard.New(guard.Config{Catalog: w.Catalog, Store: st, Audit: &gt.MemorySink{}, Limiter: tc.limiter})
			res := g.Call(context.Background(), guard.Request{
				Principal: gt.Principal(gt.WS, tc.user, auth.AllScopes...), Tool: "create_issue",
				Args: json.RawMessage(tc.args), Transport: audit.TransportMCP,
			})
			if code(res) != tc.want {
				t.Fatalf("code = %q, want %q (%v)", code(res), tc.want, res.Err)
			}
			if tc.want != "" && res.JSON != nil {
				t.Errorf("refused call carries a result: %s", res.JSON)
			}
			if n := st.writes.Load(); n != tc.writes {
				t.Errorf("writes = %d, want %d", n, tc.writes)
			}
		})
	}
}
