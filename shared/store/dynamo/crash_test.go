package dynamo_test

import (
	"sync"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/store"
	"github.com/aacworkflow/aacmcp/shared/store/dynamo"
)

// TestCrashedCommentDeleteIsFinished: a delete that died after writing its tombstone
// leaves the comment in place. A repeat soon after must not race the (possibly still
// running) first delete; once the tombstone is old, a repeat finishes the job and the
// count drops exactly once.
func TestCrashedCommentDeleteIsFinished(t *testing.T) {
	e := newEnv(t, envConfig{})
	ctx := t.Context()
	var mu sync.Mutex
	now := time.Now().UTC().Truncate(time.Millisecond)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	s := dynamo.New(e.client, e.main, e.tokens, dynamo.WithClock(clock))

	ws := "ws_crash"
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
	deletedAt := clock()
	if err := dynamo.CrashAfterCommentTombstone(ctx, s, ws, cs[0].ID, "ann", deletedAt); err != nil {
		t.Fatal(err)
	}
	state := func(wantComments int, wantCount int64) {
		t.Helper()
		got, err := s.GetIssue(ctx, ws, is.ID)
		if err != nil || got.CommentCount != wantCount {
			t.Errorf("comment_count = %d, %v; want %d", got.CommentCount, err, wantCount)
		}
		page, err := s.ListComments(ctx, ws, is.ID, store.PageRequest{})
		if err != nil || len(page.Comments) != wantComments {
			t.Errorf("comments = %d, %v; want %d", len(page.Comments), err, wantComments)
		}
	}

	steps := []struct {
		name         string
		advance      time.Duration
		wantComments int
		wantCount    int64
	}{
		{"repeat while the first delete may still run", time.Minute, 2, 2},
		{"repeat after the crash window finishes the delete", 10 * time.Minute, 1, 1},
		{"later repeats change nothing", time.Minute, 1, 1},
	}
	for _, st := range steps {
		advance(st.advance)
		res, err := s.DeleteComment(ctx, ws, cs[0].ID, nil)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if !res.Replay || res.ID != cs[0].ID || res.Owner != "ann" || !res.DeletedAt.Equal(deletedAt) {
			t.Errorf("%s: DeleteComment = %+v, want the tombstone's result as a replay", st.name, res)
		}
		state(st.wantComments, st.wantCount)
	}
}
