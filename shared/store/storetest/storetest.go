// Package storetest is the conformance suite every store backend runs: one set of
// behaviours, written once, so the embedded and the DynamoDB backends cannot drift.
//
// A backend's test calls Run with a factory. Every subtest creates its own
// workspaces and tokens with unique ids, so a factory may hand out one shared table
// (or file) to all subtests, or a fresh one to each.
//
// Times passed to the store are whole milliseconds; backends must return them
// unchanged (compared with time.Equal), in UTC or not.
//
// Points the suite pins down beyond store.go's comments:
//   - cursors: encode with store.EncodeCursor and decode with store.DecodeCursor,
//     issue lists fingerprinted by IssueFilter.Fingerprint(ws) (limit excluded, so
//     the page size may change between pages); a comment cursor used on another
//     issue, an issue cursor used on comments, or any garbage is invalid_arguments;
//     page sizes go through store.PageLimit (0 = 25, clamp 1..100);
//   - ListIssues orders by updated_at then id, both descending; the query filter is
//     a case-insensitive (Unicode) substring of title or description, never a
//     pattern; the label filter is an exact match;
//   - GetIssue and every method taking idOrKey accept "AAC-1", "aac-1" or the UUID;
//     a key names only an issue of the caller's workspace (keys repeat across
//     workspaces); keys are never reused after a delete;
//   - comments removed with their issue leave no tombstone: DeleteComment of one is
//     not_found (no delete_comment ever answered for it);
//   - CreateToken is conflict when the hash or the token id exists; ListTokens is
//     newest first (created_at, then token id); a second revoke keeps the first time;
//     ClientID and GrantID round-trip through every token read;
//   - a member's Email is stored lower-cased (strings.ToLower) and replaced with the
//     record by UpdateMember ("" clears it);
//   - DeleteIdempotency of an absent key succeeds; an expired record is not_found
//     and does not block a new claim; a claim with Supersedes naming a record that
//     is gone claims the free key;
//   - UpdateIdempotency and DeleteIdempotency treat a key holding only another
//     call's expired record as holding nothing (not_found, nil), and release their
//     own claim even once it expired;
//   - rate counters are per (workspace, key, window start): an earlier window keeps
//     its own count.
package storetest

import (
	"testing"

	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// Backend is what a backend under test provides.
type Backend struct {
	Queries store.Queries
	Tokens  auth.TokenStore
}

// Run runs the whole suite against backends made by newBackend. newBackend is called
// once per subtest; it should register its own cleanup with t.Cleanup.
func Run(t *testing.T, newBackend func(t *testing.T) Backend) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, b Backend)
	}{
		{"Workspaces", testWorkspaces},
		{"Members", testMembers},
		{"Agents", testAgents},
		{"IssueCreateAndGet", testIssueCreateAndGet},
		{"IssueUpdate", testIssueUpdate},
		{"Isolation", testIsolation},
		{"ListIssuesFilters", testListFilters},
		{"Pagination250", testPagination},
		{"CursorValidation", testCursorValidation},
		{"ConcurrentUpdates", testConcurrentUpdates},
		{"Comments", testComments},
		{"Deletes", testDeletes},
		{"AutopilotRuns", testAutopilotRuns},
		{"Idempotency", testIdempotency},
		{"IdempotencyTakeover", testIdempotencyTakeover},
		{"IdempotencyTakeoverRace", testIdempotencyTakeoverRace},
		{"IdempotencySettle", testIdempotencySettle},
		{"Usage", testUsage},
		{"RateCounters", testRateCounters},
		{"Tokens", testTokens},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newBackend(t)
			if b.Queries == nil || b.Tokens == nil {
				t.Fatal("storetest: backend factory returned a nil Queries or Tokens")
			}
			tc.fn(t, b)
		})
	}
}
