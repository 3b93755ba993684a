package dynamo_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// TestRoundTrips pins the DynamoDB calls each store method makes, background writes
// included (issue 7's round-trip table reads the log of this test). A change in a count is a change in latency and
// cost: update the table on purpose, not by accident.
func TestRoundTrips(t *testing.T) {
	e := newEnv(t, envConfig{})
	ctx := t.Context()
	at := time.Now().UTC().Truncate(time.Millisecond)
	ws := "ws_calls"
	if _, err := e.store.CreateWorkspace(ctx, store.Workspace{ID: ws, Key: "AAC", Name: "calls", CreatedAt: at}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.UpdateMember(ctx, store.Member{WorkspaceID: ws, UserID: "u", Role: store.RoleAdmin}); err != nil {
		t.Fatal(err)
	}
	var issue store.Issue
	var comment store.Comment
	newIssue := store.NewIssue{Title: "a", Status: "open", Priority: "low", CreatedBy: "u"}
	hash := strings.Repeat("ab", 32)
	idem := store.IdempotencyKey{WorkspaceID: ws, UserID: "u", Tool: "create_issue", KeyHash: strings.Repeat("cd", 32)}
	released := store.IdempotencyKey{WorkspaceID: ws, UserID: "u", Tool: "create_issue", KeyHash: strings.Repeat("ef", 32)}

	tests := []struct {
		method string
		want   int64
		call   func() error
	}{
		{"GetWorkspace", 1, func() error { _, err := e.store.GetWorkspace(ctx, ws); return err }},
		{"GetMember", 1, func() error { _, err := e.store.GetMember(ctx, ws, "u"); return err }},
		{"CreateIssue", 3, func() (err error) { issue, err = e.store.CreateIssue(ctx, ws, newIssue); return err }},
		{"CreateIssue with caller id", 4, func() error {
			in := newIssue
			in.ID = store.NewIssueID()
			_, err := e.store.CreateIssue(ctx, ws, in)
			return err
		}},
		{"GetIssue by id", 1, func() error { _, err := e.store.GetIssue(ctx, ws, issue.ID); return err }},
		{"GetIssue by key", 2, func() error { _, err := e.store.GetIssue(ctx, ws, issue.Key); return err }},
		{"UpdateIssue", 2, func() error {
			s := "done"
			_, _, err := e.store.UpdateIssue(ctx, ws, issue.ID, store.IssuePatch{Status: &s})
			return err
		}},
		{"ListIssues", 1, func() error { _, err := e.store.ListIssues(ctx, ws, store.IssueFilter{}); return err }},
		{"ListIssues by status", 1, func() error {
			_, err := e.store.ListIssues(ctx, ws, store.IssueFilter{Status: "done"})
			return err
		}},
		// The fifth and sixth are after the answer: the count's guard cleared, the lookup
		// marked complete (it saves DeleteComment a read of the comment).
		{"CreateComment", 6, func() (err error) {
			comment, err = e.store.CreateComment(ctx, ws, issue.ID, store.NewComment{Author: "u", Body: "b"})
			return err
		}},
		{"GetComment", 2, func() error { _, err := e.store.GetComment(ctx, ws, comment.ID); return err }},
		{"ListComments", 2, func() error {
			_, err := e.store.ListComments(ctx, ws, issue.ID, store.PageRequest{})
			return err
		}},
		// On the request path: the lookup and tombstone read, the claim, then the count, the
		// comment and the tombstone together; after it, the lookup deleted and the guard
		// cleared.
		{"DeleteComment", 7, func() error { _, err := e.store.DeleteComment(ctx, ws, comment.ID, nil); return err }},
		{"DeleteComment repeat", 1, func() error { _, err := e.store.DeleteComment(ctx, ws, comment.ID, nil); return err }},
		{"DeleteIssue", 6, func() error { _, err := e.store.DeleteIssue(ctx, ws, issue.ID, nil); return err }},
		// The children's Query goes beside the issue's read, so a repeat pays for it too
		// (an empty read): it saves every delete a round trip.
		{"DeleteIssue repeat", 2, func() error { _, err := e.store.DeleteIssue(ctx, ws, issue.ID, nil); return err }},
		// One UpdateItem on the request path, one after it (the guard's cleanup,
		// counted here because the loop drains the background work).
		{"UpdateUsage", 2, func() error {
			return e.store.UpdateUsage(ctx, store.UsageIncrement{WorkspaceID: ws, Date: "2026-01-01", Tool: "get_issue", Outcome: "success", EventID: store.NewULID()})
		}},
		{"ListUsage", 1, func() error { _, err := e.store.ListUsage(ctx, ws, "2026-01-01", "2026-01-31"); return err }},
		{"UpdateRateCounter", 1, func() error {
			_, err := e.store.UpdateRateCounter(ctx, ws, "tok:get_issue", at.Truncate(time.Minute), time.Minute)
			return err
		}},
		{"CreateIdempotency", 1, func() error {
			return e.store.CreateIdempotency(ctx, store.IdempotencyRecord{IdempotencyKey: idem, State: store.IdemPending, CreatedAt: at, ExpiresAt: at.Add(time.Hour)})
		}},
		{"GetIdempotency", 1, func() error { _, err := e.store.GetIdempotency(ctx, idem); return err }},
		// Settling is one conditional put; the read that tells conflict from not_found
		// happens only when the condition fails.
		{"UpdateIdempotency", 1, func() error {
			return e.store.UpdateIdempotency(ctx, store.IdempotencyRecord{IdempotencyKey: idem, State: store.IdemCompleted, Result: []byte(`{}`),
				CreatedAt: at, ExpiresAt: at.Add(time.Hour)})
		}},
		// Releasing is one conditional delete, whether the claim is there or already
		// gone (a retried release): a missing item passes the condition.
		{"CreateIdempotency (to release)", 1, func() error {
			return e.store.CreateIdempotency(ctx, store.IdempotencyRecord{IdempotencyKey: released, State: store.IdemPending, CreatedAt: at, ExpiresAt: at.Add(time.Hour)})
		}},
		{"DeleteIdempotency", 1, func() error { return e.store.DeleteIdempotency(ctx, released, at) }},
		{"DeleteIdempotency repeat", 1, func() error { return e.store.DeleteIdempotency(ctx, released, at) }},
		{"CreateToken", 2, func() error {
			return e.store.CreateToken(ctx, auth.TokenRecord{Hash: hash, TokenID: "tok_calls", WorkspaceID: ws, UserID: "u", ExpiresAt: at.Add(time.Hour)})
		}},
		{"GetTokenByHash", 1, func() error { _, err := e.store.GetTokenByHash(ctx, hash); return err }},
		{"UpdateTokenRevoked", 2, func() error { _, err := e.store.UpdateTokenRevoked(ctx, "tok_calls", at); return err }},
	}
	var report strings.Builder
	for _, tc := range tests {
		e.calls.Reset()
		if err := tc.call(); err != nil {
			t.Fatalf("%s: %v", tc.method, err)
		}
		if err := e.store.Drain(ctx); err != nil {
			t.Fatalf("%s: drain: %v", tc.method, err)
		}
		got := e.calls.Calls()
		total := e.calls.Total()
		fmt.Fprintf(&report, "\n  %-28s %d  %v", tc.method, total, describe(got))
		if total != tc.want {
			t.Errorf("%s made %d calls %v, want %d", tc.method, total, got, tc.want)
		}
	}
	t.Log("DynamoDB calls per store method:" + report.String())
}

func describe(m map[string]int64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, " ")
}

// TestConcurrentCreatesGetDistinctKeys races creates in one workspace: the counter's
// conditional ADD gives every issue its own number, with no gaps.
func TestConcurrentCreatesGetDistinctKeys(t *testing.T) {
	e := newEnv(t, envConfig{})
	ctx := t.Context()
	ws := "ws_race"
	if _, err := e.store.CreateWorkspace(ctx, store.Workspace{ID: ws, Key: "RACE", Name: "race"}); err != nil {
		t.Fatal(err)
	}
	const n = 16
	keys := make([]string, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			is, err := e.store.CreateIssue(context.Background(), ws, store.NewIssue{Title: fmt.Sprint(i), Status: "open", Priority: "low", CreatedBy: "u"})
			if err != nil {
				errs <- err
				return
			}
			keys[i] = is.Key
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	slices.Sort(keys)
	var want []string
	for i := 1; i <= n; i++ {
		want = append(want, fmt.Sprintf("RACE-%d", i))
	}
	slices.Sort(want)
	if !slices.Equal(keys, want) {
		t.Errorf("keys = %v, want %v", keys, want)
	}
}
