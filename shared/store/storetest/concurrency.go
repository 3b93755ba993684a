package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/store"
)

// testConcurrentUpdates: 50 writers race with the same expected_version; exactly one
// wins each round, every other gets conflict, and the winner's write is the one kept.
func testConcurrentUpdates(t *testing.T, b Backend) {
	ctx, q := t.Context(), b.Queries
	w := newWorkspace(t, q, "AAC")
	at := baseTime()
	is := newIssue(t, q, w.ID, "contended", at)
	const writers, rounds = 50, 5
	for round := range rounds {
		cur, err := q.GetIssue(ctx, w.ID, is.ID)
		must(t, "GetIssue", err)
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			winners []string
			others  []error
		)
		start := make(chan struct{})
		for g := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				title := fmt.Sprintf("round %d writer %d", round, g)
				_, changed, err := q.UpdateIssue(ctx, w.ID, is.ID, store.IssuePatch{
					Title: &title, ExpectedVersion: ptr(cur.Version), UpdatedAt: at.Add(time.Duration(round+1) * time.Minute)})
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil && changed:
					winners = append(winners, title)
				case err == nil:
					others = append(others, fmt.Errorf("%s: no error but changed=false", title))
				default:
					others = append(others, err)
				}
			}()
		}
		close(start)
		wg.Wait()
		if len(winners) != 1 {
			t.Fatalf("round %d: %d writers won (%v), want exactly 1", round, len(winners), winners)
		}
		for _, err := range others {
			// A loser read the version the winner changed, or raced it inside the
			// backend's conditional write: both are refusals it can read again after.
			if !errors.Is(err, store.ErrVersionMismatch) && !errors.Is(err, store.ErrConflict) {
				t.Errorf("round %d: a losing writer got %v, want ErrVersionMismatch or ErrConflict", round, err)
			}
		}
		after, err := q.GetIssue(ctx, w.ID, is.ID)
		must(t, "GetIssue", err)
		if after.Version != cur.Version+1 || after.Title != winners[0] {
			t.Errorf("round %d: version %d title %q, want %d %q", round, after.Version, after.Title, cur.Version+1, winners[0])
		}
	}
}
