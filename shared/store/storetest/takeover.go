package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

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
		wantErr   error
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
			wantErr:    store.ErrConflict,
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
			wantErr:    store.ErrConflict,
			wantDigest: sha("slow"),
		},
		{
			name:   "live claim, not the one named",
			stored: ptr(pending(store.IdempotencyKey{}, "live", now)),
			supersede: func(store.IdempotencyRecord) *store.IdempotencyRecord {
				return ptr(pending(store.IdempotencyKey{}, "dead", abandonedAt))
			},
			wantErr:    store.ErrConflict,
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
			wantErr(t, "takeover", q.CreateIdempotency(ctx, claim), tc.wantErr)

			got, err := q.GetIdempotency(ctx, k)
			must(t, "GetIdempotency after the takeover", err)
			if got.ArgsDigest != tc.wantDigest {
				t.Errorf("key holds args digest %.8s, want %.8s (%+v)", got.ArgsDigest, tc.wantDigest, got)
			}
			if got.Supersedes != nil {
				t.Errorf("GetIdempotency returned Supersedes %+v; stores never return it", got.Supersedes)
			}
			if tc.wantErr == nil && (got.State != store.IdemPending || !got.CreatedAt.Equal(now)) {
				t.Errorf("new claim = %+v, want pending created at %v", got, now)
			}
			if tc.wantErr != nil && tc.settle == nil && !got.CreatedAt.Equal(tc.stored.CreatedAt) {
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
			if !errors.Is(err, store.ErrConflict) {
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

// testIdempotencySettle: a call settles or releases its claim only while the key still
// holds that claim (pending, same created_at). A call that outlived its lease finds
// its key taken over by a retry, running or settled: it gets conflict and the retry's
// record stays exactly as it was, or a third retry would replay the wrong result or
// run the effect again.
func testIdempotencySettle(t *testing.T, b Backend) {
	ctx, q := t.Context(), b.Queries
	w := newWorkspace(t, q, "AAC")
	now := time.Now().UTC().Truncate(time.Millisecond)
	result := []byte(`{"id":"0190c3d2-0000-7000-8000-00000000000a"}`)

	// takeOver is a retry that claims the key from the record it read, with a claim
	// that expires at expires.
	takeOver := func(t *testing.T, read store.IdempotencyRecord, expires time.Time) store.IdempotencyRecord {
		t.Helper()
		r := store.IdempotencyRecord{IdempotencyKey: read.IdempotencyKey, State: store.IdemPending, ArgsDigest: sha("retry"),
			CreatedAt: now, ExpiresAt: expires, Supersedes: &read}
		must(t, "CreateIdempotency (takeover)", q.CreateIdempotency(ctx, r))
		r.Supersedes = nil
		return r
	}
	settle := func(t *testing.T, r store.IdempotencyRecord) store.IdempotencyRecord {
		t.Helper()
		r.State, r.Result, r.ResourceID = store.IdemCompleted, []byte(`{"id":"winner"}`), "winner"
		must(t, "UpdateIdempotency (the retry settles)", q.UpdateIdempotency(ctx, r))
		return r
	}
	live := now.Add(24 * time.Hour)
	// retryReleased is a meanwhile: the retry takes the key over, fails and
	// releases it, leaving nothing.
	retryReleased := func(t *testing.T, read store.IdempotencyRecord) *store.IdempotencyRecord {
		t.Helper()
		r := takeOver(t, read, live)
		must(t, "DeleteIdempotency (the retry releases)", q.DeleteIdempotency(ctx, r.IdempotencyKey, r.CreatedAt))
		return nil
	}

	tests := []struct {
		name string
		// expired: the slow call's claim was made 48 h ago and expired 24 h ago;
		// otherwise it was made 10 minutes ago, past the lease.
		expired bool
		// meanwhile is what other calls do to the key while the slow call runs, given
		// the claim as they read it; it returns the record they leave (nil: none
		// live). Without it the key keeps the slow call's claim.
		meanwhile func(t *testing.T, read store.IdempotencyRecord) *store.IdempotencyRecord
		release   bool // the slow call failed and releases its claim; else it settles it
		wantErr   error
	}{
		{name: "settle own claim"},
		{name: "release own claim", release: true},
		{
			name: "settle after a takeover, retry running",
			meanwhile: func(t *testing.T, read store.IdempotencyRecord) *store.IdempotencyRecord {
				return ptr(takeOver(t, read, live))
			},
			wantErr: store.ErrConflict,
		},
		{
			name: "settle after a takeover, retry settled",
			meanwhile: func(t *testing.T, read store.IdempotencyRecord) *store.IdempotencyRecord {
				return ptr(settle(t, takeOver(t, read, live)))
			},
			wantErr: store.ErrConflict,
		},
		{
			name: "release after a takeover, retry running",
			meanwhile: func(t *testing.T, read store.IdempotencyRecord) *store.IdempotencyRecord {
				return ptr(takeOver(t, read, live))
			},
			release: true,
			wantErr: store.ErrConflict,
		},
		{
			name: "release after a takeover, retry settled",
			meanwhile: func(t *testing.T, read store.IdempotencyRecord) *store.IdempotencyRecord {
				return ptr(settle(t, takeOver(t, read, live)))
			},
			release: true,
			wantErr: store.ErrConflict,
		},
		{
			name:      "settle after a takeover the retry released",
			meanwhile: retryReleased,
			wantErr:   store.ErrNotFound,
		},
		{
			name:      "release after a takeover the retry released",
			meanwhile: retryReleased,
			release:   true,
		},
		{
			// Another call's record that has expired holds nothing: settling finds no
			// record, releasing has nothing to release.
			name: "settle after a takeover whose record expired",
			meanwhile: func(t *testing.T, read store.IdempotencyRecord) *store.IdempotencyRecord {
				takeOver(t, read, now.Add(-time.Minute))
				return nil
			},
			wantErr: store.ErrNotFound,
		},
		{
			name: "release after a takeover whose record expired",
			meanwhile: func(t *testing.T, read store.IdempotencyRecord) *store.IdempotencyRecord {
				takeOver(t, read, now.Add(-time.Minute))
				return nil
			},
			release: true,
		},
		{
			// An expired claim does not block a new one (no Supersedes needed).
			name:    "settle after the claim expired and the key was claimed anew",
			expired: true,
			meanwhile: func(t *testing.T, read store.IdempotencyRecord) *store.IdempotencyRecord {
				r := store.IdempotencyRecord{IdempotencyKey: read.IdempotencyKey, State: store.IdemPending, ArgsDigest: sha("new"), CreatedAt: now, ExpiresAt: live}
				must(t, "CreateIdempotency (new claim)", q.CreateIdempotency(ctx, r))
				return &r
			},
			wantErr: store.ErrConflict,
		},
		{
			name:    "release after the claim expired and the key was claimed anew",
			expired: true,
			meanwhile: func(t *testing.T, read store.IdempotencyRecord) *store.IdempotencyRecord {
				r := store.IdempotencyRecord{IdempotencyKey: read.IdempotencyKey, State: store.IdemPending, ArgsDigest: sha("new"), CreatedAt: now, ExpiresAt: live}
				must(t, "CreateIdempotency (new claim)", q.CreateIdempotency(ctx, r))
				return &r
			},
			release: true,
			wantErr: store.ErrConflict,
		},
		{name: "release own expired claim", expired: true, release: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k := store.IdempotencyKey{WorkspaceID: w.ID, UserID: "alice", Tool: "create_issue", KeyHash: sha(uid("slow"))}
			slow := store.IdempotencyRecord{IdempotencyKey: k, State: store.IdemPending, ArgsDigest: sha("slow"),
				CreatedAt: now.Add(-10 * time.Minute), ExpiresAt: live}
			if tc.expired {
				slow.CreatedAt, slow.ExpiresAt = now.Add(-48*time.Hour), now.Add(-24*time.Hour)
			}
			must(t, "CreateIdempotency (the slow call's claim)", q.CreateIdempotency(ctx, slow))
			read := slow
			if got, err := q.GetIdempotency(ctx, k); err == nil {
				read = got // a retry names the record exactly as the store returned it
			}

			want := ptr(slow)
			if tc.meanwhile != nil {
				want = tc.meanwhile(t, read)
			}

			var err error
			if tc.release {
				err = q.DeleteIdempotency(ctx, k, slow.CreatedAt)
			} else {
				done := slow
				done.State, done.Result, done.ResourceID = store.IdemCompleted, result, "slow"
				err = q.UpdateIdempotency(ctx, done)
			}
			wantErr(t, "the slow call's settle or release", err, tc.wantErr)

			if tc.meanwhile == nil && tc.wantErr == nil {
				if tc.release {
					want = nil
				} else {
					want.State, want.Result, want.ResourceID = store.IdemCompleted, result, "slow"
				}
			}
			got, err := q.GetIdempotency(ctx, k)
			if want == nil {
				wantErr(t, "GetIdempotency afterwards", err, store.ErrNotFound)
				return
			}
			must(t, "GetIdempotency afterwards", err)
			if got.State != want.State || got.ArgsDigest != want.ArgsDigest || !got.CreatedAt.Equal(want.CreatedAt) ||
				!bytes.Equal(got.Result, want.Result) || got.ResourceID != want.ResourceID {
				t.Errorf("key holds %+v (result %s), want %+v (result %s)", got, got.Result, *want, want.Result)
			}
		})
	}
}
