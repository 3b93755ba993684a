package guard_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/guard"
	gt "github.com/aacworkflow/aacmcp/shared/guard/guardtest"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// plainRefusal is the destructive_flag_missing body before previews existed: what
// every caller the preview is not for still gets, byte for byte.
const plainRefusal = `{"error":"confirm: true required for destructive operations","code":"destructive_flag_missing"}`

// countingLimiter allows or refuses every call, or fails, and counts the calls.
type countingLimiter struct {
	retry time.Duration
	err   error
	calls int
}

func (l *countingLimiter) Allow(context.Context, auth.Principal, string, time.Time) (time.Duration, error) {
	l.calls++
	return l.retry, l.err
}

// TestPreviewOnMissingConfirm: a delete refused for a missing confirm names the
// item only to a caller who holds its read scope, is within the rate limit, is a
// member whose role may write, and could delete that very item in their own
// workspace. For everyone else the refusal is the plain one, byte for byte.
func TestPreviewOnMissingConfirm(t *testing.T) {
	ctx := context.Background()
	w := gt.NewWorld(t)
	// An issue with a title a dialog must not render as is, one comment, and a
	// second comment by Member2 on it.
	noisy, err := w.Store.CreateIssue(ctx, gt.WS, store.NewIssue{Title: "Login\x1b[31m fails\u202e on\nSafari", Status: "open", Priority: "low", Labels: []string{}, CreatedBy: gt.Member, CreatedAt: w.Now})
	if err != nil {
		t.Fatal(err)
	}
	byMax, err := w.Store.CreateComment(ctx, gt.WS, noisy.ID, store.NewComment{Author: gt.Member2, Body: "max was here", CreatedAt: w.Now})
	if err != nil {
		t.Fatal(err)
	}
	gone, err := w.Store.CreateIssue(ctx, gt.WS, store.NewIssue{Title: "Gone", Status: "open", Priority: "low", Labels: []string{}, CreatedBy: gt.Member, CreatedAt: w.Now})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Store.DeleteIssue(ctx, gt.WS, gone.ID, nil); err != nil {
		t.Fatal(err)
	}
	issue := func(id string) string { return `{"issue_id":"` + id + `"}` }
	comment := func(id string) string { return `{"comment_id":"` + id + `"}` }
	one := int64(1)
	seeded := &apperr.Preview{Kind: "issue", ID: w.Issue.ID, Key: w.Issue.Key, Title: "First", CommentCount: &one}

	read := []string{"issues:read", "issues:write", "comments:read", "comments:write"}
	cases := []struct {
		name    string
		p       *auth.Principal
		tool    string
		args    string
		limiter *countingLimiter
		want    *apperr.Preview
	}{
		{"admin, by id", gt.Principal(gt.WS, gt.Admin, read...), "delete_issue", issue(w.Issue.ID), nil, seeded},
		{"admin, by key", gt.Principal(gt.WS, gt.Admin, read...), "delete_issue", issue(w.Issue.Key), nil, seeded},
		{"author", gt.Principal(gt.WS, gt.Member, "issues:read", "issues:write"), "delete_issue", issue(w.Issue.ID), nil, seeded},
		{"title made plain", gt.Principal(gt.WS, gt.Admin, read...), "delete_issue", issue(noisy.ID), nil,
			&apperr.Preview{Kind: "issue", ID: noisy.ID, Key: noisy.Key, Title: "Login [31m fails on Safari", CommentCount: &one}},
		{"within the rate limit", gt.Principal(gt.WS, gt.Admin, read...), "delete_issue", issue(w.Issue.ID), &countingLimiter{}, seeded},
		{"comment, with its issue's key", gt.Principal(gt.WS, gt.Admin, read...), "delete_comment", comment(w.Comment.ID), nil,
			&apperr.Preview{Kind: "comment", ID: w.Comment.ID, Key: w.Issue.Key, Title: "hello"}},
		{"comment author", gt.Principal(gt.WS, gt.Member2, "comments:read", "comments:write", "issues:read"), "delete_comment", comment(byMax.ID), nil,
			&apperr.Preview{Kind: "comment", ID: byMax.ID, Key: noisy.Key, Title: "max was here"}},
		{"comment without issues:read has no key", gt.Principal(gt.WS, gt.Admin, "comments:read", "comments:write"), "delete_comment", comment(w.Comment.ID), nil,
			&apperr.Preview{Kind: "comment", ID: w.Comment.ID, Title: "hello"}},

		{"no read scope", gt.Principal(gt.WS, gt.Admin, "issues:write", "comments:read"), "delete_issue", issue(w.Issue.ID), nil, nil},
		{"comment without comments:read", gt.Principal(gt.WS, gt.Admin, "comments:write", "issues:read"), "delete_comment", comment(w.Comment.ID), nil, nil},
		{"member who could not delete it", gt.Principal(gt.WS, gt.Member2, read...), "delete_issue", issue(w.Issue.ID), nil, nil},
		{"comment by someone else", gt.Principal(gt.WS, gt.Member2, read...), "delete_comment", comment(w.Comment.ID), nil, nil},
		{"viewer", gt.Principal(gt.WS, gt.Viewer, read...), "delete_issue", issue(w.Issue.ID), nil, nil},
		{"removed member", gt.Principal(gt.WS, gt.Removed, read...), "delete_issue", issue(w.Issue.ID), nil, nil},
		{"not a member", gt.Principal(gt.WS, gt.Outsider, read...), "delete_issue", issue(w.Issue.ID), nil, nil},
		{"another workspace's issue", gt.Principal(gt.WS, gt.Admin, read...), "delete_issue", issue(w.OtherIssue.ID), nil, nil},
		{"another workspace's key", gt.Principal(gt.WS, gt.Admin, read...), "delete_issue", issue(w.OtherIssue.Key), nil, nil},
		{"tombstoned issue", gt.Principal(gt.WS, gt.Admin, read...), "delete_issue", issue(gone.ID), nil, nil},
		{"unknown issue", gt.Principal(gt.WS, gt.Admin, read...), "delete_issue", issue("00000000-0000-4000-8000-000000000000"), nil, nil},
		{"issue_id not a string", gt.Principal(gt.WS, gt.Admin, read...), "delete_issue", `{"issue_id":5}`, nil, nil},
		{"no arguments", gt.Principal(gt.WS, gt.Admin, read...), "delete_issue", `{}`, nil, nil},
		{"arguments not an object", gt.Principal(gt.WS, gt.Admin, read...), "delete_issue", `[1]`, nil, nil},
		{"confirm false", gt.Principal(gt.WS, gt.Admin, read...), "delete_issue", `{"issue_id":"` + w.Issue.ID + `","confirm":false}`, nil, seeded},
		{"rate limited", gt.Principal(gt.WS, gt.Admin, read...), "delete_issue", issue(w.Issue.ID), &countingLimiter{retry: time.Second}, nil},
		{"limiter failing", gt.Principal(gt.WS, gt.Admin, read...), "delete_issue", issue(w.Issue.ID), &countingLimiter{err: errors.New("down")}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := guard.Config{Catalog: w.Catalog, Store: w.Store, Audit: &gt.MemorySink{}}
			if tc.limiter != nil {
				cfg.Limiter = tc.limiter
			}
			res := guard.New(cfg).Call(ctx, guard.Request{Principal: tc.p, Tool: tc.tool, Args: json.RawMessage(tc.args), Transport: audit.TransportREST})
			if code(res) != apperr.DestructiveFlagMissing {
				t.Fatalf("code %q, want destructive_flag_missing", code(res))
			}
			got := res.Err.Preview
			if (got == nil) != (tc.want == nil) || got != nil && (*got != *withCount(tc.want, got) || !sameCount(got, tc.want)) {
				t.Fatalf("preview %+v, want %+v", deref(got), deref(tc.want))
			}
			body, err := json.Marshal(res.Err.Body())
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == nil && string(body) != plainRefusal {
				t.Errorf("refusal without preview is\n%s\nwant it byte for byte as before\n%s", body, plainRefusal)
			}
			r := res.Record
			if r.Outcome != audit.OutcomeDenied || r.Reason != string(apperr.DestructiveFlagMissing) || r.Confirmation != audit.ConfirmationNone {
				t.Errorf("record outcome %q reason %q confirmation %q", r.Outcome, r.Reason, r.Confirmation)
			}
			if tc.limiter != nil && tc.limiter.calls != 1 {
				t.Errorf("limiter consulted %d times, want once", tc.limiter.calls)
			}
		})
	}
}

// TestPreviewReadsNothingItMustNot: a token without the read scope costs no store
// read, and a throttled caller no member or item read; the member record is read
// before the item, so a non-member's refusal never depends on what exists.
func TestPreviewReadsNothingItMustNot(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		user    string
		scopes  []string
		limiter guard.Limiter
		want    []string
	}{
		{"no read scope", gt.Admin, []string{"issues:write"}, nil, nil},
		{"throttled", gt.Admin, []string{"issues:write", "issues:read"}, denyAll{retry: time.Second}, nil},
		{"not a member", gt.Outsider, []string{"issues:write", "issues:read"}, nil, []string{"member"}},
		{"admin", gt.Admin, []string{"issues:write", "issues:read"}, nil, []string{"member", "issue"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := gt.NewWorld(t)
			st := &readLog{Store: w.Store}
			g := guard.New(guard.Config{Catalog: w.Catalog, Store: st, Audit: &gt.MemorySink{}, Limiter: tc.limiter})
			res := g.Call(ctx, guard.Request{Principal: gt.Principal(gt.WS, tc.user, tc.scopes...), Tool: "delete_issue",
				Args: json.RawMessage(`{"issue_id":"` + w.Issue.ID + `"}`), Transport: audit.TransportMCP})
			if code(res) != apperr.DestructiveFlagMissing {
				t.Fatalf("code %q", code(res))
			}
			st.mu.Lock()
			defer st.mu.Unlock()
			if len(st.reads) != len(tc.want) {
				t.Fatalf("reads %v, want %v", st.reads, tc.want)
			}
			for i := range tc.want {
				if st.reads[i] != tc.want[i] {
					t.Fatalf("reads %v, want %v", st.reads, tc.want)
				}
			}
		})
	}
}

func deref(p *apperr.Preview) any {
	if p == nil {
		return nil
	}
	v := *p
	if v.CommentCount != nil {
		return struct {
			apperr.Preview
			Count int64
		}{v, *v.CommentCount}
	}
	return v
}

// withCount is want with got's comment-count pointer, so that == compares the
// other fields; sameCount compares the counts themselves.
func withCount(want, got *apperr.Preview) *apperr.Preview {
	w := *want
	w.CommentCount = got.CommentCount
	return &w
}

func sameCount(a, b *apperr.Preview) bool {
	if a.CommentCount == nil || b.CommentCount == nil {
		return a.CommentCount == nil && b.CommentCount == nil
	}
	return *a.CommentCount == *b.CommentCount
}
