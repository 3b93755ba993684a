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
	"github.com/aacworkflow/aacmcp/shared/confirm"
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

// TestHumanConfirmationOverlapped: on a network store the confirmation's reads run
// beside the member check, yet it asks only about a delete the tool would perform
// (a member who may not delete the item is refused by the tool, unasked), an
// accepted answer deletes once, and its replay is confirmation_invalid.
func TestHumanConfirmationOverlapped(t *testing.T) {
	ctx := context.Background()
	w := gt.NewWorld(t)
	st := &gatedStore{Store: w.Store}
	keys, err := confirm.EphemeralKeyring()
	if err != nil {
		t.Fatal(err)
	}
	g := guard.New(guard.Config{Catalog: w.Catalog, Store: st, Audit: &gt.MemorySink{}, Confirmations: st, Keyring: keys})
	if err := w.Store.SetDestructiveConfirmation(ctx, gt.WS, "elicit"); err != nil {
		t.Fatal(err)
	}
	is, err := w.Store.CreateIssue(ctx, gt.WS, store.NewIssue{Title: "Doomed", Status: "open", Priority: "low", Labels: []string{}, CreatedBy: gt.Member, CreatedAt: w.Now})
	if err != nil {
		t.Fatal(err)
	}
	args := json.RawMessage(`{"issue_id":"` + is.ID + `","confirm":true}`)
	call := func(user, state string, answer json.RawMessage) guard.Result {
		return g.Call(ctx, guard.Request{Principal: gt.Principal(gt.WS, user, auth.AllScopes...), Tool: "delete_issue",
			Args: args, Transport: audit.TransportMCP, CanElicit: true, RequestState: state, InputResponses: answer})
	}
	exists := func() bool { _, err := w.Store.GetIssue(ctx, gt.WS, is.ID); return err == nil }

	for _, user := range []string{gt.Member2, gt.Viewer, gt.Outsider} {
		if res := call(user, "", nil); res.InputRequired != nil || code(res) != apperr.PermissionDenied || !exists() {
			t.Fatalf("%s: input required %v, err %v", user, res.InputRequired, res.Err)
		}
	}
	res := call(gt.Admin, "", nil)
	if res.InputRequired == nil || res.Err != nil {
		t.Fatalf("admin: input required %v, err %v", res.InputRequired, res.Err)
	}
	state := res.InputRequired.State
	if res := call(gt.Admin, state, answer("accept", is.Key)); res.Err != nil || exists() {
		t.Fatalf("accepted: %v (exists %v)", res.Err, exists())
	}
	if res := call(gt.Admin, state, answer("accept", is.Key)); code(res) != apperr.ConfirmationInvalid {
		t.Fatalf("replay: %v", res.Err)
	}
}
