package dynamo_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/aacworkflow/aacmcp/shared/store"
)

// dropper is an http.RoundTripper in front of the real transport. When armed, the
// first request that matches reaches dynalite and is applied there, but its response
// is thrown away and the SDK sees a connection reset: exactly a response lost on the
// wire, which the SDK answers by sending the request again.
type dropper struct {
	next http.RoundTripper

	mu    sync.Mutex
	match func(op string, body string) bool
	fired []string
}

// arm makes the next request of operation op whose body contains every one of parts
// lose its response.
func (d *dropper) arm(op string, parts ...string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.fired = nil
	d.match = func(gotOp, body string) bool {
		if gotOp != op {
			return false
		}
		for _, p := range parts {
			if !strings.Contains(body, p) {
				return false
			}
		}
		return true
	}
}

// firedOps returns what was dropped since arm.
func (d *dropper) firedOps() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.fired...)
}

func (d *dropper) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		req.Body.Close()
		body = b
		req.Body = io.NopCloser(bytes.NewReader(b))
	}
	op := strings.TrimPrefix(req.Header.Get("X-Amz-Target"), "DynamoDB_20120810.")
	d.mu.Lock()
	drop := d.match != nil && d.match(op, string(body))
	if drop {
		d.match = nil // once per arm
		d.fired = append(d.fired, op)
	}
	d.mu.Unlock()

	resp, err := d.next.RoundTrip(req)
	if err != nil || !drop {
		return resp, err
	}
	// The server has applied the request; the client never learns it.
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return nil, &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
}

func TestLostResponseAppliesOnce(t *testing.T) {
	dr := &dropper{next: http.DefaultTransport.(*http.Transport).Clone()}
	e := newEnv(t, envConfig{transport: func(cfg *aws.Config) {
		cfg.HTTPClient = &http.Client{Transport: dr}
	}})
	ctx := t.Context()
	at := time.Now().UTC().Truncate(time.Millisecond)

	// setup makes a workspace with one issue, AAC-1.
	setup := func(t *testing.T) fixture {
		t.Helper()
		ws := "ws_lost_" + strings.ToLower(store.NewULID())
		if _, err := e.store.CreateWorkspace(ctx, store.Workspace{ID: ws, Key: "AAC", Name: "lost", CreatedAt: at}); err != nil {
			t.Fatal(err)
		}
		is, err := e.store.CreateIssue(ctx, ws, store.NewIssue{Title: "t", Status: "open", Priority: "low", CreatedBy: "u", CreatedAt: at})
		if err != nil {
			t.Fatal(err)
		}
		return fixture{ws: ws, issue: is}
	}

	// deleteOneOfTwo comments on the issue twice and deletes the first comment.
	deleteOneOfTwo := func(t *testing.T, f fixture) error {
		c, err := e.store.CreateComment(ctx, f.ws, f.issue.ID, store.NewComment{Author: "u", Body: "a", CreatedAt: at})
		if err != nil {
			return err
		}
		if _, err := e.store.CreateComment(ctx, f.ws, f.issue.ID, store.NewComment{Author: "u", Body: "b", CreatedAt: at}); err != nil {
			return err
		}
		res, err := e.store.DeleteComment(ctx, f.ws, c.ID, nil)
		if err == nil && (res.Replay || res.ID != c.ID) {
			t.Errorf("DeleteComment = %+v", res)
		}
		return err
	}

	tests := []struct {
		name  string
		op    string   // DynamoDB operation whose response is lost
		parts []string // strings the request body must contain
		act   func(t *testing.T, f fixture) error
		check func(t *testing.T, f fixture)
	}{
		{
			name: "CreateIssue counter", op: "UpdateItem", parts: []string{"issue_seq"},
			act: func(t *testing.T, f fixture) error {
				is, err := e.store.CreateIssue(ctx, f.ws, store.NewIssue{Title: "second", Status: "open", Priority: "low", CreatedBy: "u", CreatedAt: at})
				if err == nil && is.Key != "AAC-2" {
					t.Errorf("key = %s, want AAC-2", is.Key)
				}
				return err
			},
			check: func(t *testing.T, f fixture) { wantNextKey(t, e.store, f.ws, "AAC-3") },
		},
		{
			name: "CreateIssue key item", op: "PutItem", parts: []string{`#KEY#AAC-2`},
			act: func(t *testing.T, f fixture) error {
				_, err := e.store.CreateIssue(ctx, f.ws, store.NewIssue{Title: "second", Status: "open", Priority: "low", CreatedBy: "u", CreatedAt: at})
				return err
			},
			check: func(t *testing.T, f fixture) {
				if is, err := e.store.GetIssue(ctx, f.ws, "AAC-2"); err != nil || is.Title != "second" {
					t.Errorf("GetIssue(AAC-2) = %+v, %v", is, err)
				}
				wantNextKey(t, e.store, f.ws, "AAC-3")
			},
		},
		{
			name: "CreateIssue issue item", op: "PutItem", parts: []string{`"title_lc"`},
			act: func(t *testing.T, f fixture) error {
				_, err := e.store.CreateIssue(ctx, f.ws, store.NewIssue{Title: "second", Status: "open", Priority: "low", CreatedBy: "u", CreatedAt: at})
				return err
			},
			check: func(t *testing.T, f fixture) {
				page, err := e.store.ListIssues(ctx, f.ws, store.IssueFilter{})
				if err != nil || len(page.Issues) != 2 {
					t.Errorf("ListIssues = %d issues, %v; want 2", len(page.Issues), err)
				}
			},
		},
		{
			name: "CreateComment comment_count", op: "UpdateItem", parts: []string{"comment_count", "+"},
			act: func(t *testing.T, f fixture) error {
				_, err := e.store.CreateComment(ctx, f.ws, f.issue.ID, store.NewComment{Author: "u", Body: "hi", CreatedAt: at})
				return err
			},
			check: func(t *testing.T, f fixture) { wantComments(t, e.store, f, 1) },
		},
		{
			name: "CreateComment comment item", op: "PutItem", parts: []string{`"body"`},
			act: func(t *testing.T, f fixture) error {
				_, err := e.store.CreateComment(ctx, f.ws, f.issue.ID, store.NewComment{Author: "u", Body: "hi", CreatedAt: at})
				return err
			},
			check: func(t *testing.T, f fixture) { wantComments(t, e.store, f, 1) },
		},
		{
			name: "DeleteComment comment_count", op: "UpdateItem", parts: []string{"comment_count", `"-`},
			act:   deleteOneOfTwo,
			check: func(t *testing.T, f fixture) { wantComments(t, e.store, f, 1) },
		},
		{
			name: "DeleteComment claim", op: "UpdateItem", parts: []string{"del_nonce", "attribute_not_exists"},
			act:   deleteOneOfTwo,
			check: func(t *testing.T, f fixture) { wantComments(t, e.store, f, 1) },
		},
		{
			name: "UpdateIssue version", op: "UpdateItem", parts: []string{"upd_nonce"},
			act: func(t *testing.T, f fixture) error {
				title := "renamed"
				is, changed, err := e.store.UpdateIssue(ctx, f.ws, f.issue.ID, store.IssuePatch{Title: &title, ExpectedVersion: aws.Int64(1), UpdatedAt: at.Add(time.Second)})
				if err == nil && (!changed || is.Version != 2 || is.Title != title) {
					t.Errorf("UpdateIssue = %+v, changed %v; want version 2, changed", is, changed)
				}
				return err
			},
			check: func(t *testing.T, f fixture) {
				if is, err := e.store.GetIssue(ctx, f.ws, f.issue.ID); err != nil || is.Version != 2 || is.Title != "renamed" {
					t.Errorf("GetIssue = %+v, %v; want version 2", is, err)
				}
			},
		},
		{
			// The retried takeover finds its own claim, no longer the record it names:
			// the nonce must admit it, or the one retry that won would be refused.
			name: "CreateIdempotency takeover", op: "PutItem", parts: []string{":supCreated"},
			act: func(t *testing.T, f fixture) error {
				k := store.IdempotencyKey{WorkspaceID: f.ws, UserID: "u", Tool: "create_issue", KeyHash: "abandoned"}
				dead := store.IdempotencyRecord{IdempotencyKey: k, State: store.IdemPending, ArgsDigest: "dead", CreatedAt: at.Add(-time.Hour), ExpiresAt: at.Add(time.Hour)}
				if err := e.store.CreateIdempotency(ctx, dead); err != nil {
					return err
				}
				read, err := e.store.GetIdempotency(ctx, k)
				if err != nil {
					return err
				}
				return e.store.CreateIdempotency(ctx, store.IdempotencyRecord{IdempotencyKey: k, State: store.IdemPending, ArgsDigest: "retry",
					CreatedAt: at, ExpiresAt: at.Add(time.Hour), Supersedes: &read})
			},
			check: func(t *testing.T, f fixture) {
				got, err := e.store.GetIdempotency(ctx, store.IdempotencyKey{WorkspaceID: f.ws, UserID: "u", Tool: "create_issue", KeyHash: "abandoned"})
				if err != nil || got.ArgsDigest != "retry" || !got.CreatedAt.Equal(at) {
					t.Errorf("GetIdempotency = %+v, %v; want the takeover's claim", got, err)
				}
			},
		},
		{
			// The retried settle finds the record its first attempt completed, no longer
			// the pending claim it names: the nonce must admit it, or the call that
			// settled would log its own claim as taken over.
			name: "UpdateIdempotency settle", op: "PutItem", parts: []string{":claimCreated"},
			act: func(t *testing.T, f fixture) error {
				claim := store.IdempotencyRecord{IdempotencyKey: lostIdemKey(f), State: store.IdemPending, ArgsDigest: "d", CreatedAt: at, ExpiresAt: at.Add(time.Hour)}
				if err := e.store.CreateIdempotency(ctx, claim); err != nil {
					return err
				}
				done := claim
				done.State, done.Result, done.ResourceID = store.IdemCompleted, []byte(`{"id":"x"}`), "x"
				return e.store.UpdateIdempotency(ctx, done)
			},
			check: func(t *testing.T, f fixture) {
				got, err := e.store.GetIdempotency(ctx, lostIdemKey(f))
				if err != nil || got.State != store.IdemCompleted || string(got.Result) != `{"id":"x"}` || !got.CreatedAt.Equal(at) {
					t.Errorf("GetIdempotency = %+v, %v; want the settled record", got, err)
				}
			},
		},
		{
			// The retried release finds nothing left to release, which is success.
			name: "DeleteIdempotency release", op: "DeleteItem", parts: []string{":claimCreated"},
			act: func(t *testing.T, f fixture) error {
				claim := store.IdempotencyRecord{IdempotencyKey: lostIdemKey(f), State: store.IdemPending, ArgsDigest: "d", CreatedAt: at, ExpiresAt: at.Add(time.Hour)}
				if err := e.store.CreateIdempotency(ctx, claim); err != nil {
					return err
				}
				return e.store.DeleteIdempotency(ctx, claim.IdempotencyKey, claim.CreatedAt)
			},
			check: func(t *testing.T, f fixture) {
				if got, err := e.store.GetIdempotency(ctx, lostIdemKey(f)); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("GetIdempotency = %+v, %v; want not_found after the release", got, err)
				}
			},
		},
		{
			name: "UpdateUsage calls", op: "UpdateItem", parts: []string{"calls", "evs"},
			act: func(t *testing.T, f fixture) error {
				return e.store.UpdateUsage(ctx, store.UsageIncrement{WorkspaceID: f.ws, Date: "2026-01-02", Tool: "get_issue", Outcome: "denied", EventID: store.NewULID()})
			},
			check: func(t *testing.T, f fixture) {
				wantUsage(t, e.store, f.ws, store.UsageRow{Date: "2026-01-02", Tool: "get_issue", Calls: 1, Denied: 1})
				// The retry was refused by the guard; the id must still leave the set.
				wantNoUsageGuard(t, e.store, f.ws, "2026-01-02", "get_issue")
			},
		},
		{
			name: "UpdateUsage guard cleanup", op: "UpdateItem", parts: []string{"DELETE evs"},
			act: func(t *testing.T, f fixture) error {
				return e.store.UpdateUsage(ctx, store.UsageIncrement{WorkspaceID: f.ws, Date: "2026-01-02", Tool: "get_issue", Outcome: "error", EventID: store.NewULID()})
			},
			check: func(t *testing.T, f fixture) {
				wantUsage(t, e.store, f.ws, store.UsageRow{Date: "2026-01-02", Tool: "get_issue", Calls: 1, Errors: 1})
				wantNoUsageGuard(t, e.store, f.ws, "2026-01-02", "get_issue")
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := setup(t)
			e.calls.Reset()
			dr.arm(tc.op, tc.parts...)
			if err := tc.act(t, f); err != nil {
				t.Fatalf("call whose response was lost: %v", err)
			}
			// Background writes (the usage guard's cleanup) are part of the call's
			// effect, and must not be in flight while the counts are read.
			if err := e.store.Drain(ctx); err != nil {
				t.Fatal(err)
			}
			if got := dr.firedOps(); len(got) != 1 {
				t.Fatalf("dropped responses = %v, want one %s (the test did not exercise a retry)", got, tc.op)
			}
			if calls, attempts := e.calls.Calls()[tc.op], e.calls.Attempts()[tc.op]; attempts != calls+1 {
				t.Errorf("%s: %d calls, %d attempts; want exactly one retry", tc.op, calls, attempts)
			}
			dr.arm("none")
			tc.check(t, f)
		})
	}
}

// wantNextKey checks the counter moved once per create: the next create gets want.
func wantNextKey(t *testing.T, s store.Queries, ws, want string) {
	t.Helper()
	is, err := s.CreateIssue(context.Background(), ws, store.NewIssue{Title: "probe", Status: "open", Priority: "low", CreatedBy: "u"})
	if err != nil || is.Key != want {
		t.Errorf("next CreateIssue = %q, %v; want key %s", is.Key, err, want)
	}
}

// lostIdemKey is the idempotency key the settle and release cases claim.
func lostIdemKey(f fixture) store.IdempotencyKey {
	return store.IdempotencyKey{WorkspaceID: f.ws, UserID: "u", Tool: "create_issue", KeyHash: "lost"}
}

// fixture is a workspace with one issue, AAC-1.
type fixture struct {
	ws    string
	issue store.Issue
}

// wantComments checks the issue's comment_count and its listed comments are both n.
func wantComments(t *testing.T, s store.Queries, f fixture, n int64) {
	t.Helper()
	is, err := s.GetIssue(context.Background(), f.ws, f.issue.ID)
	if err != nil || is.CommentCount != n {
		t.Errorf("comment_count = %d, %v; want %d", is.CommentCount, err, n)
	}
	page, err := s.ListComments(context.Background(), f.ws, f.issue.ID, store.PageRequest{})
	if err != nil || int64(len(page.Comments)) != n {
		t.Errorf("ListComments = %d comments, %v; want %d", len(page.Comments), err, n)
	}
}

func wantUsage(t *testing.T, s store.Queries, ws string, want store.UsageRow) {
	t.Helper()
	rows, err := s.ListUsage(context.Background(), ws, want.Date, want.Date)
	if err != nil || len(rows) != 1 || rows[0] != want {
		t.Errorf("ListUsage = %+v, %v; want [%+v]", rows, err, want)
	}
}
