package dynamo_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/store"
	"github.com/aacworkflow/aacmcp/shared/store/dynamo"
)

// crashFixture makes workspace ws with one issue and two comments by ann on it, the
// store's writes after each answer done.
func crashFixture(t *testing.T, s *dynamo.Store, ws string) (store.Issue, []store.Comment) {
	t.Helper()
	ctx := t.Context()
	if _, err := s.CreateWorkspace(ctx, store.Workspace{ID: ws, Key: "CR", Name: "crash"}); err != nil {
		t.Fatal(err)
	}
	is, err := s.CreateIssue(ctx, ws, store.NewIssue{Title: "t", Status: "open", Priority: "low", CreatedBy: "u"})
	if err != nil {
		t.Fatal(err)
	}
	var cs []store.Comment
	for _, body := range []string{"a", "b"} {
		c, err := s.CreateComment(ctx, ws, is.ID, store.NewComment{Author: "ann", Body: body})
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	if err := s.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	return is, cs
}

// TestCrashedCommentDeleteIsFinished: a delete that died after claiming the comment
// leaves its claim on the lookup item, whichever later step it reached. A repeat soon
// after must not race the (possibly still running) first delete; once the claim is
// old, a repeat finishes the job, the count dropping exactly once, and answers with
// the first delete's result.
func TestCrashedCommentDeleteIsFinished(t *testing.T) {
	e := newEnv(t, envConfig{})
	ctx := t.Context()
	var mu sync.Mutex
	now := time.Now().UTC().Truncate(time.Millisecond)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	s := dynamo.New(e.client, e.main, e.tokens, dynamo.WithClock(clock))

	crashes := []struct {
		name string
		step dynamo.CommentDeleteStep
		// what the issue shows before the repeat that finishes
		comments int
		count    int64
	}{
		{"after the claim", dynamo.CommentClaimed, 2, 2},
		{"after the count", dynamo.CommentCounted, 2, 1},
		{"before the lookup's delete", dynamo.CommentFinished, 1, 1},
	}
	for i, cr := range crashes {
		t.Run(cr.name, func(t *testing.T) {
			ws := fmt.Sprintf("ws_crash_%d", i)
			is, cs := crashFixture(t, s, ws)
			deletedAt := clock()
			if err := dynamo.CrashCommentDelete(ctx, s, ws, cs[0].ID, deletedAt, cr.step); err != nil {
				t.Fatal(err)
			}
			state := func(step string, wantComments int, wantCount int64) {
				t.Helper()
				got, err := s.GetIssue(ctx, ws, is.ID)
				if err != nil || got.CommentCount != wantCount {
					t.Errorf("%s: comment_count = %d, %v; want %d", step, got.CommentCount, err, wantCount)
				}
				page, err := s.ListComments(ctx, ws, is.ID, store.PageRequest{})
				if err != nil || len(page.Comments) != wantComments {
					t.Errorf("%s: comments = %d, %v; want %d", step, len(page.Comments), err, wantComments)
				}
			}
			steps := []struct {
				name         string
				advance      time.Duration
				wantComments int
				wantCount    int64
			}{
				{"repeat while the first delete may still run", time.Minute, cr.comments, cr.count},
				{"repeat after the crash window finishes the delete", 10 * time.Minute, 1, 1},
				{"later repeats change nothing", time.Minute, 1, 1},
			}
			for _, st := range steps {
				advance(st.advance)
				res, err := s.DeleteComment(ctx, ws, cs[0].ID, nil)
				if err != nil {
					t.Fatalf("%s: %v", st.name, err)
				}
				if err := s.Drain(ctx); err != nil {
					t.Fatal(err)
				}
				if !res.Replay || res.ID != cs[0].ID || res.Owner != "ann" || !res.DeletedAt.Equal(deletedAt) {
					t.Errorf("%s: DeleteComment = %+v, want the first delete's result as a replay", st.name, res)
				}
				state(st.name, st.wantComments, st.wantCount)
			}
			// The comment left is still the other one, and can be deleted as usual.
			if _, err := s.DeleteComment(ctx, ws, cs[1].ID, nil); err != nil {
				t.Fatal(err)
			}
			if err := s.Drain(ctx); err != nil {
				t.Fatal(err)
			}
			state("both deleted", 0, 0)
		})
	}
}

// TestCrashedIssueDeleteIsFinished: an issue delete that died after its second step
// (tombstone, children) leaves the issue item, so the issue is still found and a
// repeat finishes the job with the first delete's result; one whose key item's delete
// (after the answer) was lost leaves an orphan key item, which reads by key ignore and
// a repeat by key follows to the tombstone.
func TestCrashedIssueDeleteIsFinished(t *testing.T) {
	e := newEnv(t, envConfig{})
	ctx := t.Context()
	s := e.store
	at := time.Now().UTC().Truncate(time.Millisecond)
	gone := func(t *testing.T, ws string, is store.Issue, cs []store.Comment, want store.DeleteResult) {
		t.Helper()
		for _, ref := range []string{is.ID, is.Key} {
			if _, err := s.GetIssue(ctx, ws, ref); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("GetIssue(%s) after the delete: %v, want not_found", ref, err)
			}
			res, err := s.DeleteIssue(ctx, ws, ref, nil)
			if err != nil || !res.Replay || res.ID != want.ID || !res.DeletedAt.Equal(want.DeletedAt) {
				t.Errorf("repeated DeleteIssue(%s) = %+v, %v; want a replay of %+v", ref, res, err, want)
			}
		}
		for _, c := range cs {
			if _, err := s.GetComment(ctx, ws, c.ID); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("GetComment(%s) after the delete: %v, want not_found", c.ID, err)
			}
		}
		page, err := s.ListIssues(ctx, ws, store.IssueFilter{})
		if err != nil || len(page.Issues) != 0 {
			t.Errorf("ListIssues after the delete = %d issues, %v; want none", len(page.Issues), err)
		}
	}

	t.Run("after the tombstone and the children", func(t *testing.T) {
		ws := "ws_crash_issue_a"
		is, cs := crashFixture(t, s, ws)
		if err := dynamo.CrashIssueDelete(ctx, s, ws, is.ID, is.CreatedBy, at); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetIssue(ctx, ws, is.Key); err != nil {
			t.Fatalf("GetIssue of a half-deleted issue: %v, want it still found", err)
		}
		res, err := s.DeleteIssue(ctx, ws, is.Key, nil)
		if err != nil || res.ID != is.ID || !res.DeletedAt.Equal(at) {
			t.Fatalf("DeleteIssue finishing a crashed one = %+v, %v; want the first delete's result", res, err)
		}
		if err := s.Drain(ctx); err != nil {
			t.Fatal(err)
		}
		gone(t, ws, is, cs, res)
	})
	t.Run("the key item's delete lost", func(t *testing.T) {
		ws := "ws_crash_issue_b"
		is, cs := crashFixture(t, s, ws)
		res, err := s.DeleteIssue(ctx, ws, is.ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Drain(ctx); err != nil {
			t.Fatal(err)
		}
		if err := dynamo.PutIssueKeyItem(ctx, s, ws, is.Key, is.ID); err != nil {
			t.Fatal(err)
		}
		gone(t, ws, is, cs, res)
	})
}
