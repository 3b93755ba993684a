// Package storetest is the conformance suite every store backend runs: one set of
// behaviours, written once, so the embedded and the DynamoDB backends cannot drift.
//
// A backend's test calls Run, and RunOAuth and RunConfirmations if it implements
// those stores, with a factory. Every subtest creates its own workspaces and tokens
// with unique ids, so a factory may hand out one shared table (or file) to all
// subtests, or a fresh one to each.
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
	"reflect"
	"runtime"
	"strings"
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
	run(t, false, newBackend,
		testWorkspaces, testMembers, testAgents, testIssueCreateAndGet, testIssueUpdate,
		testIsolation, testListIssuesFilters, testPagination250, testCursorValidation,
		testConcurrentUpdates, testConcurrentDeletes, testComments, testDeletes, testAutopilotRuns,
		testIdempotency, testIdempotencyTakeover, testIdempotencyTakeoverRace,
		testIdempotencySettle, testUsage, testRateCounters, testTokens)
}

// OAuthBackend is what RunOAuth needs: the OAuth store, the queries that create the
// workspaces and members it looks up, and the tokens table that holds access tokens.
// The three may be one value.
type OAuthBackend struct {
	Queries store.Queries
	Tokens  auth.TokenStore
	OAuth   store.OAuthStore
}

// RunOAuth is the conformance suite of store.OAuthStore, and of the OAuth fields of
// members (Email) and tokens (ClientID, GrantID). newBackend is called once per
// subtest, and subtests run in parallel. As with Run, every record gets a unique id,
// so subtests may share a table, with one exception: the OAuth policy is one global
// record, which only OAuthPolicy writes, and it expects the policy never set
// when it starts.
//
// Points it pins down beyond store.OAuthStore's comments:
//   - an expired pending request, code or grant, and a client unused for
//     store.OAuthClientLapse, is not_found for every method (Get, Update, Delete,
//     Consume, Rotate, Revoke) and absent from lists; creating one already expired
//     succeeds;
//   - Create* of a live id (hash for codes and assertions) is conflict;
//   - GetOAuthGrantByRefresh("") is not_found, although an unredeemed grant holds "";
//   - UpdateOAuthGrantRotate: nil Scopes keeps the grant's scopes; AccessTokenID is
//     appended once and DropTokenIDs removed; LastUsedAt becomes At and ExpiresAt the
//     rotation's; the store does not judge narrowing (the server does);
//   - a revoked grant stays readable (RevokedAt set) and listed until it expires;
//   - ListOAuthGrants is newest first (created_at, then id);
//   - e-mails are stored lower-cased (strings.ToLower); "" matches no member;
//     UpdateMember replaces the e-mail with the record ("" clears it);
//   - list results are never nil; their order across workspaces is not pinned.
func RunOAuth(t *testing.T, newBackend func(t *testing.T) OAuthBackend) {
	t.Helper()
	// Parallel: nothing is shared, each record has its own id (the policy has one writer).
	run(t, true, newBackend,
		testOAuthClients, testOAuthPending, testOAuthPendingSingleUse, testOAuthCodes,
		testOAuthCodeSingleUse, testOAuthGrantRotation, testOAuthGrantRotationRace,
		testOAuthGrantRevocation, testOAuthGrantExpiry, testOAuthListGrants, testOAuthPolicy,
		testOAuthMemberEmail, testOAuthMembersAcrossWorkspaces, testOAuthTokens, testOAuthAssertions)
}

// ConfirmationBackend is what a backend under the confirmation suite provides.
type ConfirmationBackend struct {
	Queries       store.Queries
	Confirmations store.Confirmations
	Lister        store.WorkspaceLister
}

// RunConfirmations pins down store.Confirmations:
//   - a workspace's policy is "flag" until set; a set value reads back and a second
//     set replaces it; either on an unknown workspace is not_found;
//   - a nonce is consumed once per workspace: the second consumption, and all but
//     one of many concurrent ones, are store.ErrNonceUsed (a conflict); the same
//     nonce in another workspace is another nonce;
//   - an expired nonce does not block a new consumption;
//   - ListWorkspaces returns every workspace by id with its policy (other tests'
//     workspaces may be among them), and nothing that is not a workspace.
func RunConfirmations(t *testing.T, newBackend func(t *testing.T) ConfirmationBackend) {
	t.Helper()
	run(t, false, newBackend,
		testConfirmationPolicy, testNonceOnce, testNonceConcurrent, testNonceExpired, testListWorkspaces)
}

// run runs each test against a backend of its own from newBackend, as a subtest
// named after the function without its "test" prefix (testNonceOnce runs as
// NonceOnce), so that a name cannot drift from what it runs. B is one of the suites'
// backend structs, whose fields are all interfaces and must all be set; parallel
// subtests call t.Parallel first.
func run[B any](t *testing.T, parallel bool, newBackend func(t *testing.T) B, tests ...func(t *testing.T, b B)) {
	t.Helper()
	for _, test := range tests {
		name := runtime.FuncForPC(reflect.ValueOf(test).Pointer()).Name()
		name = strings.TrimPrefix(name[strings.LastIndexByte(name, '.')+1:], "test")
		t.Run(name, func(t *testing.T) {
			if parallel {
				t.Parallel()
			}
			b := newBackend(t)
			v := reflect.ValueOf(b)
			for i := range v.NumField() {
				if v.Field(i).IsNil() {
					t.Fatalf("storetest: the backend factory left %T.%s nil", b, v.Type().Field(i).Name)
				}
			}
			test(t, b)
		})
	}
}
