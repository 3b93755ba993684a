package guard_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
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
	writes     atomic.Int64
	read       chan struct{} // closed by the first DeleteIssue's read; nil: not used
	readOnce   sync.Once
	slowMember bool
	late       atomic.Bool // a check waited for a read that never came before it
}

func (s *gatedStore) ConcurrentReads() bool { return true }

func (s *gatedStore) CreateIssue(ctx context.Context, ws string, in store.NewIssue) (store.Issue, error) {
	if err := store.AwaitWriteGate(ctx); err != nil {
		return store.Issue{}, err
	}
	s.writes.Add(1)
	return s.Store.CreateIssue(ctx, ws, in)
}

// DeleteIssue is the DynamoDB store's order: read the item, judge its owner by the
// call's rule, then write, each write waiting for the gate. read is closed once the
// item has been read, so a check can wait for the handler to have started.
func (s *gatedStore) DeleteIssue(ctx context.Context, ws, id string, allow store.DeleteCheck) (store.DeleteResult, error) {
	is, err := s.Store.GetIssue(ctx, ws, id)
	if s.read != nil {
		s.readOnce.Do(func() { close(s.read) })
	}
	if err != nil {
		return store.DeleteResult{}, err
	}
	if err := allow.Allow(is.CreatedBy); err != nil {
		return store.DeleteResult{}, err
	}
	if err := store.AwaitWriteGate(ctx); err != nil {
		return store.DeleteResult{}, err
	}
	s.writes.Add(1)
	return s.Store.DeleteIssue(ctx, ws, id, allow)
}

// GetMember waits for the delete handler's read when slowMember is set: the member
// check then decides only after the handler has started.
func (s *gatedStore) GetMember(ctx context.Context, ws, user string) (store.Member, error) {
	if s.slowMember {
		awaitRead(s.read, &s.late)
	}
	return s.Store.GetMember(ctx, ws, user)
}

// awaitRead waits for the handler's read. The timeout only ends a wait that the code
// under test never ends, when the handler runs after the checks instead of beside
// them; late records it, and the test fails on that, not on how long anything took.
func awaitRead(read <-chan struct{}, late *atomic.Bool) {
	select {
	case <-read:
	case <-time.After(10 * time.Second):
		late.Store(true)
	}
}

// afterRead is a limiter that decides only once the delete handler has read its
// item, allowing or refusing the call.
type afterRead struct {
	read  <-chan struct{}
	late  *atomic.Bool
	allow bool
}

func (l afterRead) Allow(context.Context, auth.Principal, string, time.Time) (time.Duration, error) {
	awaitRead(l.read, l.late)
	if l.allow {
		return 0, nil
	}
	return time.Minute, nil
}

// TestOverlappedDelete: on a network store a delete's handler starts beside the
// limiter, the member check and the human confirmation, so its item reads cost no
// round trip of their own. Yet the permission rule judges the item by the checked
// role (an admin whose member check decides after the read may delete another's
// issue), and a call any check refuses, or whose person is yet to be asked, deletes
// nothing and gets the check's answer.
func TestOverlappedDelete(t *testing.T) {
	for _, tc := range []struct {
		name       string
		user       string
		limit      *bool // the limiter's verdict after the read; nil: no limiter
		slowMember bool
		policy     string
		want       apperr.Code
		asked      bool
		deleted    bool
	}{
		{name: "admin, limiter after the read", user: gt.Admin, limit: ptr(true), deleted: true},
		{name: "admin, member check after the read", user: gt.Admin, slowMember: true, deleted: true},
		{name: "rate limited after the read", user: gt.Admin, limit: ptr(false), want: apperr.RateLimited},
		{name: "viewer, member check after the read", user: gt.Viewer, slowMember: true, want: apperr.PermissionDenied},
		{name: "outsider", user: gt.Outsider, want: apperr.PermissionDenied},
		{name: "not the creator", user: gt.Member2, slowMember: true, want: apperr.PermissionDenied},
		{name: "the creator", user: gt.Member, limit: ptr(true), deleted: true},
		{name: "person to be asked", user: gt.Admin, limit: ptr(true), policy: "elicit", asked: true},
		{name: "person required, client cannot ask", user: gt.Admin, limit: ptr(true), policy: "require", want: apperr.HumanConfirmationRequired},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			w := gt.NewWorld(t)
			st := &gatedStore{Store: w.Store, read: make(chan struct{}), slowMember: tc.slowMember}
			keys, err := confirm.EphemeralKeyring()
			if err != nil {
				t.Fatal(err)
			}
			cfg := guard.Config{Catalog: w.Catalog, Store: st, Audit: &gt.MemorySink{}, Confirmations: st, Keyring: keys}
			if tc.limit != nil {
				cfg.Limiter = afterRead{read: st.read, late: &st.late, allow: *tc.limit}
			}
			g := guard.New(cfg)
			if tc.policy != "" {
				if err := w.Store.SetDestructiveConfirmation(ctx, gt.WS, tc.policy); err != nil {
					t.Fatal(err)
				}
			}
			is, err := w.Store.CreateIssue(ctx, gt.WS, store.NewIssue{Title: "Doomed", Status: "open", Priority: "low", Labels: []string{}, CreatedBy: gt.Member, CreatedAt: w.Now})
			if err != nil {
				t.Fatal(err)
			}
			res := g.Call(ctx, guard.Request{
				Principal: gt.Principal(gt.WS, tc.user, auth.AllScopes...), Tool: "delete_issue",
				Args: json.RawMessage(`{"issue_id":"` + is.ID + `","confirm":true}`), Transport: audit.TransportMCP,
				CanElicit: tc.policy == "elicit",
			})
			if st.late.Load() {
				t.Error("a check decided before the handler read its item: the handler did not start beside the checks")
			}
			if code(res) != tc.want || (res.InputRequired != nil) != tc.asked {
				t.Fatalf("code = %q, input required %v; want %q, %v (%v)", code(res), res.InputRequired != nil, tc.want, tc.asked, res.Err)
			}
			if (tc.want != "" || tc.asked) && res.JSON != nil {
				t.Errorf("refused call carries a result: %s", res.JSON)
			}
			_, err = w.Store.GetIssue(ctx, gt.WS, is.ID)
			if deleted := errors.Is(err, store.ErrNotFound); deleted != tc.deleted {
				t.Errorf("deleted = %v, want %v (%v)", deleted, tc.deleted, err)
			}
			if n, want := st.writes.Load(), map[bool]int64{true: 1}[tc.deleted]; n != want {
				t.Errorf("writes = %d, want %d", n, want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

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
