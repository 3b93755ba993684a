package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// testIdempotencyTakeover: a claim with Supersedes replaces the record it names only
// while that record is stored unchanged (state and created_at); anything else held
// under the key refuses it with conflict and stays as it was.
func testIdempotencyTakeover(t *testing.T, b Backend) {
	ctx, q := t.Context(), b.Queries
	w := newWorkspace(t, q, "AAC")
	now := time.Now().UTC().Truncate(time.Millisecond)
	abandonedAt := now.Add(-10 * time.Minute)
	pending := func(k store.IdempotencyKey, digest string, at time.Time) store.IdempotencyRecord {
		return store.IdempotencyRecord{IdempotencyKey: k, State: store.IdemPending, ArgsDigest: sha(digest), CreatedAt: at, ExpiresAt: at.Add(24 * time.Hour)}
	}

	tests := []struct {
		name string
		// stored is what the key holds before the takeover (nil: nothing), as the
		// caller read it; settle, when set, changes it after that read.
		stored *store.IdempotencyRecord
		settle func(r store.IdempotencyRecord) store.IdempotencyRecord
		// supersede derives the record the claim names from what was read.
		supersede func(read store.IdempotencyRecord) *store.IdempotencyRecord
		wantCode  apperr.Code
		// wantDigest is the args digest the key holds afterwards.
		wantDigest string
	}{
		{
			name:       "abandoned claim as read",
			stored:     ptr(pending(store.IdempotencyKey{}, "dead", abandonedAt)),
			supersede:  func(r store.IdempotencyRecord) *store.IdempotencyRecord { return &r },
			wantDigest: sha("retry"),
		},
		{
			name:   "expired completed record as read",
			stored: &store.IdempotencyRecord{State: store.IdemCompleted, ArgsDigest: sha("old"), Result: []byte(`{}`), CreatedAt: now.Add(-48 * time.Hour), ExpiresAt: now.Add(-24 * time.Hour)},
			// An expired record is not_found to readers; the caller may still have seen it
			// a moment before it expired.
			supersede: func(store.IdempotencyRecord) *store.IdempotencyRecord {
				return &store.IdempotencyRecord{State: store.IdemCompleted, CreatedAt: now.Add(-48 * time.Hour)}
			},
			wantDigest: sha("retry"),
		},
		{
			name: "free key",
			supersede: func(store.IdempotencyRecord) *store.IdempotencyRecord {
				return ptr(pending(store.IdempotencyKey{}, "gone", abandonedAt))
			},
			wantDigest: sha("retry"),
		},
		{
			name:   "another claim created at another time",
			stored: ptr(pending(store.IdempotencyKey{}, "dead", abandonedAt)),
			supersede: func(r store.IdempotencyRecord) *store.IdempotencyRecord {
				r.CreatedAt = r.CreatedAt.Add(-time.Millisecond)
				return &r
			},
			wantCode:   apperr.Conflict,
			wantDigest: sha("dead"),
		},
		{
			name:   "claim settled after the read",
			stored: ptr(pending(store.IdempotencyKey{}, "slow", abandonedAt)),
			settle: func(r store.IdempotencyRecord) store.IdempotencyRecord {
				r.State, r.Result, r.ResourceID = store.IdemCompleted, []byte(`{"id":"x"}`), "x"
				return r
			},
			supersede:  func(r store.IdempotencyRecord) *store.IdempotencyRecord { return &r },
			wantCode:   apperr.Conflict,
			wantDigest: sha("slow"),
		},
		{
			name:   "live claim, not the one named",
			stored: ptr(pending(store.IdempotencyKey{}, "live", now)),
			supersede: func(store.IdempotencyRecord) *store.IdempotencyRecord {
				return ptr(pending(store.IdempotencyKey{}, "dead", abandonedAt))
			},
			wantCode:   apperr.Conflict,
			wantDigest: sha("live"),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k := store.IdempotencyKey{WorkspaceID: w.ID, UserID: "alice", Tool: "create_issue", KeyHash: sha(uid("key"))}
			var read store.IdempotencyRecord
			if tc.stored != nil {
				r := *tc.stored
				r.IdempotencyKey = k
				must(t, "CreateIdempotency (stored)", q.CreateIdempotency(ctx, r))
				read = r
				if got, err := q.GetIdempotency(ctx, k); err == nil {
					read = got // the takeover names the record exactly as the store returned it
				}
				if tc.settle != nil {
					must(t, "UpdateIdempotency (settle)", q.UpdateIdempotency(ctx, tc.settle(read)))
				}
			}
			claim := pending(k, "retry", now)
			claim.Supersedes = tc.supersede(read)
			wantCode(t, "takeover", q.CreateIdempotency(ctx, claim), tc.wantCode)

			got, err := q.GetIdempotency(ctx, k)
			must(t, "GetIdempotency after the takeover", err)
			if got.ArgsDigest != tc.wantDigest {
				t.Errorf("key holds args digest %.8s, want %.8s (%+v)", got.ArgsDigest, tc.wantDigest, got)
			}
			if got.Supersedes != nil {
				t.Errorf("GetIdempotency returned Supersedes %+v; stores never return it", got.Supersedes)
			}
			if tc.wantCode == "" && (got.State != store.IdemPending || !got.CreatedAt.Equal(now)) {
				t.Errorf("new claim = %+v, want pending created at %v", got, now)
			}
			if tc.wantCode != "" && tc.settle == nil && !got.CreatedAt.Equal(tc.stored.CreatedAt) {
				t.Errorf("refused takeover changed the stored record: %+v", got)
			}
		})
	}
}

// testIdempotencyTakeoverRace: retries that read the same abandoned claim take it over
// at the same moment; exactly one claim wins each round and every other gets conflict.
func testIdempotencyTakeoverRace(t *testing.T, b Backend) {
	ctx, q := t.Context(), b.Queries
	w := newWorkspace(t, q, "AAC")
	const retries, rounds = 20, 5
	for round := range rounds {
		now := time.Now().UTC().Truncate(time.Millisecond)
		k := store.IdempotencyKey{WorkspaceID: w.ID, UserID: "alice", Tool: "create_issue", KeyHash: sha(uid("race"))}
		dead := store.IdempotencyRecord{IdempotencyKey: k, State: store.IdemPending, ArgsDigest: sha("dead"),
			CreatedAt: now.Add(-10 * time.Minute), ExpiresAt: now.Add(24 * time.Hour)}
		must(t, "CreateIdempotency (abandoned)", q.CreateIdempotency(ctx, dead))
		read, err := q.GetIdempotency(ctx, k)
		must(t, "GetIdempotency", err)

		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			winners []string
			others  []error
		)
		start := make(chan struct{})
		for i := range retries {
			digest := sha(fmt.Sprintf("round %d retry %d", round, i))
			wg.Go(func() {
				<-start
				err := q.CreateIdempotency(ctx, store.IdempotencyRecord{IdempotencyKey: k, State: store.IdemPending, ArgsDigest: digest,
					CreatedAt: now, ExpiresAt: now.Add(24 * time.Hour), Supersedes: &read})
				mu.Lock()
				defer mu.Unlock()
				if err == nil {
					winners = append(winners, digest)
				} else {
					others = append(others, err)
				}
			})
		}
		close(start)
		wg.Wait()
		if len(winners) != 1 {
			t.Fatalf("round %d: %d takeovers won, want exactly 1", round, len(winners))
		}
		for _, err := range others {
			if apperr.CodeOf(err) != apperr.Conflict {
				t.Errorf("round %d: a losing takeover got %v, want conflict", round, err)
			}
		}
		got, err := q.GetIdempotency(ctx, k)
		must(t, "GetIdempotency after the race", err)
		if got.ArgsDigest != winners[0] {
			t.Errorf("round %d: key holds %.8s, want the winner's claim %.8s", round, got.ArgsDigest, winners[0])
		}
	}
}
