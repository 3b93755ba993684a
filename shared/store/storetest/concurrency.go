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

// testConcurrentDeletes: many callers delete one comment at once, then one issue. For
// the comment, exactly one of them deletes it and the rest answer with its result as a
// replay, and the count drops once. For the issue, every caller succeeds with the one
// result, and the issue is gone with its comments.
func testConcurrentDeletes(t *testing.T, b Backend) {
	ctx, q := t.Context(), b.Queries
	w := newWorkspace(t, q, "AAC")
	at := baseTime()
	is := newIssue(t, q, w.ID, "contended", at)
	var comments []store.Comment
	for i := range 3 {
		c, err := q.CreateComment(ctx, w.ID, is.ID, store.NewComment{Author: "ann", Body: fmt.Sprint(i), CreatedAt: at})
		must(t, "CreateComment", err)
		comments = append(comments, c)
	}
	const callers = 10
	race := func(del func() (store.DeleteResult, error)) []store.DeleteResult {
		var (
			wg      sync.WaitGroup
			results = make([]store.DeleteResult, callers)
			errs    = make([]error, callers)
		)
		start := make(chan struct{})
		for g := range callers {
			wg.Go(func() {
				<-start
				results[g], errs[g] = del()
			})
		}
		close(start)
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("concurrent deletes: %v", err)
		}
		for _, r := range results[1:] {
			if !sameMilli(r.DeletedAt, results[0].DeletedAt) || r.ID != results[0].ID || r.Owner != results[0].Owner {
				t.Errorf("concurrent deletes answered %+v and %+v, want one result", results[0], r)
			}
		}
		return results
	}

	got := race(func() (store.DeleteResult, error) { return q.DeleteComment(ctx, w.ID, comments[0].ID, nil) })
	fresh := 0
	for _, r := range got {
		if !r.Replay {
			fresh++
		}
	}
	if fresh != 1 {
		t.Errorf("%d of %d concurrent DeleteComment calls deleted the comment, want 1 (the rest replays)", fresh, callers)
	}
	cur, err := q.GetIssue(ctx, w.ID, is.ID)
	must(t, "GetIssue", err)
	page, err := q.ListComments(ctx, w.ID, is.ID, store.PageRequest{})
	must(t, "ListComments", err)
	if cur.CommentCount != 2 || len(page.Comments) != 2 {
		t.Errorf("after concurrent deletes of one comment: comment_count %d, %d comments; want 2 and 2", cur.CommentCount, len(page.Comments))
	}

	race(func() (store.DeleteResult, error) { return q.DeleteIssue(ctx, w.ID, is.ID, nil) })
	_, err = q.GetIssue(ctx, w.ID, is.ID)
	wantErr(t, "GetIssue after concurrent deletes", err, store.ErrNotFound)
	for _, c := range comments[1:] {
		_, err := q.GetComment(ctx, w.ID, c.ID)
		wantErr(t, "GetComment after its issue's concurrent deletes", err, store.ErrNotFound)
	}
}
