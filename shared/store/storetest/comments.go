package storetest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/store"
)

func testComments(t *testing.T, b Backend) {
	ctx, q := t.Context(), b.Queries
	w := newWorkspace(t, q, "AAC")
	at := baseTime()
	is := newIssue(t, q, w.ID, "talked about", at)

	var made []store.Comment
	for i, ref := range []string{is.ID, "AAC-1", "aac-1"} {
		in := store.NewComment{Author: "alice", Body: "comment " + string(rune('a'+i)), CreatedAt: at.Add(time.Duration(i) * time.Second)}
		c, err := q.CreateComment(ctx, w.ID, ref, in)
		must(t, "CreateComment via "+ref, err)
		if c.ID == "" || c.IssueID != is.ID || c.Author != in.Author || c.Body != in.Body || !c.CreatedAt.Equal(in.CreatedAt) {
			t.Errorf("CreateComment returned %+v for %+v", c, in)
		}
		made = append(made, c)
	}
	chosen, err := q.CreateComment(ctx, w.ID, is.ID, store.NewComment{ID: uid("cmt"), Author: "bob", Body: "mine", CreatedAt: at.Add(time.Minute)})
	must(t, "CreateComment with a caller id", err)
	made = append(made, chosen)
	_, err = q.CreateComment(ctx, w.ID, is.ID, store.NewComment{ID: chosen.ID, Author: "bob", Body: "again", CreatedAt: at.Add(time.Minute)})
	wantErr(t, "CreateComment with an existing id", err, store.ErrAlreadyExists)

	got, err := q.GetIssue(ctx, w.ID, is.ID)
	must(t, "GetIssue", err)
	if got.CommentCount != 4 || got.Version != 1 {
		t.Errorf("after 4 comments: comment_count %d version %d, want 4 and 1 (comments do not bump the version)", got.CommentCount, got.Version)
	}

	c, err := q.GetComment(ctx, w.ID, made[1].ID)
	must(t, "GetComment", err)
	if c.ID != made[1].ID || c.Body != made[1].Body || c.Author != made[1].Author || c.IssueID != is.ID || !c.CreatedAt.Equal(made[1].CreatedAt) {
		t.Errorf("GetComment = %+v, want %+v", c, made[1])
	}

	var listed []string
	cur := ""
	for pages := 0; ; pages++ {
		page, err := q.ListComments(ctx, w.ID, "AAC-1", store.PageRequest{Limit: 3, Cursor: cur})
		must(t, "ListComments", err)
		for _, c := range page.Comments {
			listed = append(listed, c.ID)
		}
		if page.NextCursor == "" {
			if pages != 1 {
				t.Errorf("4 comments at limit 3 took %d pages, want 2", pages+1)
			}
			break
		}
		cur = page.NextCursor
	}
	want := []string{made[0].ID, made[1].ID, made[2].ID, made[3].ID}
	if !slices.Equal(listed, want) {
		t.Errorf("ListComments = %v, want oldest first %v", listed, want)
	}

	res, err := q.DeleteComment(ctx, w.ID, made[0].ID, nil)
	must(t, "DeleteComment", err)
	if res.Kind != "comment" || res.ID != made[0].ID || res.Replay || res.DeletedAt.IsZero() || res.Owner != made[0].Author {
		t.Errorf("DeleteComment = %+v, want owner %q", res, made[0].Author)
	}
	again, err := q.DeleteComment(ctx, w.ID, made[0].ID, nil)
	must(t, "DeleteComment repeated", err)
	// The owner comes back on the repeat: the caller judges a repeat by the same
	// permission rule as the first delete, and the comment itself is gone.
	if !again.Replay || again.ID != res.ID || again.Kind != "comment" || !sameMilli(again.DeletedAt, res.DeletedAt) || again.Owner != res.Owner {
		t.Errorf("repeated DeleteComment = %+v, want a replay of %+v", again, res)
	}
	// The store resolves the tombstone and judges the repeat by the same check as
	// the first delete, with the owner it kept; a refusal changes nothing.
	wantRefused(t, "repeated DeleteComment", res.Owner, func(allow store.DeleteCheck) error {
		_, err := q.DeleteComment(ctx, w.ID, made[0].ID, allow)
		return err
	})
	wantRefused(t, "DeleteComment of a live comment", made[1].Author, func(allow store.DeleteCheck) error {
		_, err := q.DeleteComment(ctx, w.ID, made[1].ID, allow)
		return err
	})
	_, err = q.GetComment(ctx, w.ID, made[1].ID)
	must(t, "GetComment of a comment whose delete was refused", err)
	other := newWorkspace(t, q, "OTH")
	wantUnasked(t, "DeleteComment from another workspace", store.ErrNotFound, func(allow store.DeleteCheck) error {
		_, err := q.DeleteComment(ctx, other.ID, made[0].ID, allow)
		return err
	})
	_, err = q.GetComment(ctx, w.ID, made[0].ID)
	wantErr(t, "GetComment after delete", err, store.ErrNotFound)
	got, err = q.GetIssue(ctx, w.ID, is.ID)
	must(t, "GetIssue", err)
	if got.CommentCount != 3 {
		t.Errorf("comment_count after one delete and its repeat = %d, want 3", got.CommentCount)
	}
	page, err := q.ListComments(ctx, w.ID, is.ID, store.PageRequest{})
	must(t, "ListComments", err)
	if len(page.Comments) != 3 || page.Comments[0].ID != made[1].ID {
		t.Errorf("ListComments after delete: %d comments", len(page.Comments))
	}

	_, err = q.DeleteComment(ctx, w.ID, uid("cmt"), nil)
	wantErr(t, "DeleteComment of an unknown id", err, store.ErrNotFound)
	_, err = q.CreateComment(ctx, w.ID, newUUID(), store.NewComment{Author: "a", Body: "b", CreatedAt: at})
	wantErr(t, "CreateComment on an unknown issue", err, store.ErrNotFound)
	_, err = q.ListComments(ctx, w.ID, "AAC-9", store.PageRequest{})
	wantErr(t, "ListComments of an unknown issue", err, store.ErrNotFound)
	empty := newIssue(t, q, w.ID, "quiet", at)
	page, err = q.ListComments(ctx, w.ID, empty.ID, store.PageRequest{})
	must(t, "ListComments of an issue without comments", err)
	if page.Comments == nil || len(page.Comments) != 0 || page.NextCursor != "" {
		t.Errorf("ListComments of a quiet issue = %+v, want empty non-nil and no cursor", page)
	}
}

// errRefused is what the DeleteChecks below answer.
var errRefused = errors.New("storetest: refused")

// wantRefused runs del with a check that records the owner it is asked about and
// refuses: del must return that very error, having asked about owner once.
func wantRefused(t *testing.T, what, owner string, del func(store.DeleteCheck) error) {
	t.Helper()
	var asked []string
	err := del(func(o string) error {
		asked = append(asked, o)
		return errRefused
	})
	if err != errRefused { // the check's own error, not wrapped
		t.Errorf("%s with a refusing check: %v, want the check's own error", what, err)
	}
	if !slices.Equal(asked, []string{owner}) {
		t.Errorf("%s: check asked about %q, want once about %q", what, asked, owner)
	}
}

// wantUnasked runs del with a check that must not be asked: existence comes first.
func wantUnasked(t *testing.T, what string, kind error, del func(store.DeleteCheck) error) {
	t.Helper()
	err := del(func(o string) error {
		t.Errorf("%s: check asked about %q for an item that does not exist", what, o)
		return errRefused
	})
	wantErr(t, what, err, kind)
}

func sameMilli(a, b time.Time) bool {
	return a.Truncate(time.Millisecond).Equal(b.Truncate(time.Millisecond))
}

func testDeletes(t *testing.T, b Backend) {
	ctx, q := t.Context(), b.Queries
	w := newWorkspace(t, q, "AAC")
	at := baseTime()
	is := newIssue(t, q, w.ID, "doomed", at)
	var comments []store.Comment
	for i := range 2 {
		c, err := q.CreateComment(ctx, w.ID, is.ID, store.NewComment{Author: "alice", Body: "bye", CreatedAt: at.Add(time.Duration(i) * time.Second)})
		must(t, "CreateComment", err)
		comments = append(comments, c)
	}
	keep := newIssue(t, q, w.ID, "kept", at)

	res, err := q.DeleteIssue(ctx, w.ID, is.ID, nil)
	must(t, "DeleteIssue", err)
	if res.Kind != "issue" || res.ID != is.ID || res.Replay || res.DeletedAt.IsZero() || res.Owner != is.CreatedBy || res.Owner == "" {
		t.Errorf("DeleteIssue = %+v, want owner %q", res, is.CreatedBy)
	}
	for _, ref := range []string{is.ID, "AAC-1"} {
		_, err = q.GetIssue(ctx, w.ID, ref)
		wantErr(t, "GetIssue after delete via "+ref, err, store.ErrNotFound)
	}
	for _, c := range comments {
		_, err = q.GetComment(ctx, w.ID, c.ID)
		wantErr(t, "GetComment of a comment of a deleted issue", err, store.ErrNotFound)
		// It was removed with its issue, not by a delete_comment: nothing to replay.
		_, err = q.DeleteComment(ctx, w.ID, c.ID, nil)
		wantErr(t, "DeleteComment of a comment removed with its issue", err, store.ErrNotFound)
	}
	for _, ref := range []string{is.ID, "AAC-1", "aac-1"} {
		again, err := q.DeleteIssue(ctx, w.ID, ref, nil)
		if err != nil {
			t.Errorf("repeated DeleteIssue via %s: %v", ref, err)
			continue
		}
		if !again.Replay || again.ID != is.ID || again.Kind != "issue" || !sameMilli(again.DeletedAt, res.DeletedAt) || again.Owner != res.Owner {
			t.Errorf("repeated DeleteIssue via %s = %+v, want a replay of %+v", ref, again, res)
		}
	}
	for _, ref := range []string{is.ID, "AAC-1", "aac-1"} {
		wantRefused(t, "repeated DeleteIssue via "+ref, res.Owner, func(allow store.DeleteCheck) error {
			_, err := q.DeleteIssue(ctx, w.ID, ref, allow)
			return err
		})
	}
	for _, ref := range []string{keep.ID, "AAC-2"} {
		wantRefused(t, "DeleteIssue of a live issue via "+ref, keep.CreatedBy, func(allow store.DeleteCheck) error {
			_, err := q.DeleteIssue(ctx, w.ID, ref, allow)
			return err
		})
	}
	if _, err := q.GetIssue(ctx, w.ID, keep.ID); err != nil {
		t.Errorf("GetIssue of an issue whose delete was refused: %v", err)
	}
	other := newWorkspace(t, q, "OTH")
	for _, tc := range []struct{ ws, ref string }{{w.ID, "AAC-99"}, {w.ID, newUUID()}, {other.ID, is.ID}, {other.ID, "AAC-1"}} {
		wantUnasked(t, "DeleteIssue in "+tc.ws+" of "+tc.ref, store.ErrNotFound, func(allow store.DeleteCheck) error {
			_, err := q.DeleteIssue(ctx, tc.ws, tc.ref, allow)
			return err
		})
	}
	_, _, err = q.UpdateIssue(ctx, w.ID, is.ID, store.IssuePatch{Title: ptr("zombie"), UpdatedAt: at})
	wantErr(t, "UpdateIssue of a deleted issue", err, store.ErrNotFound)
	_, err = q.CreateComment(ctx, w.ID, "AAC-1", store.NewComment{Author: "a", Body: "b", CreatedAt: at})
	wantErr(t, "CreateComment on a deleted issue", err, store.ErrNotFound)
	_, err = q.ListComments(ctx, w.ID, is.ID, store.PageRequest{})
	wantErr(t, "ListComments of a deleted issue", err, store.ErrNotFound)
	page, err := q.ListIssues(ctx, w.ID, store.IssueFilter{})
	must(t, "ListIssues", err)
	if got := ids(page.Issues); !slices.Equal(got, []string{keep.ID}) {
		t.Errorf("ListIssues after delete = %v, want only %s", got, keep.ID)
	}

	// Keys are never reused: a new issue does not become AAC-1 again.
	next := newIssue(t, q, w.ID, "later", at)
	if next.Key != "AAC-3" {
		t.Errorf("key after a delete = %q, want AAC-3", next.Key)
	}
	res, err = q.DeleteIssue(ctx, w.ID, "aac-3", nil)
	must(t, "DeleteIssue by key", err)
	if res.ID != next.ID || res.Replay {
		t.Errorf("DeleteIssue by key = %+v, want %s", res, next.ID)
	}
	for _, ref := range []string{newUUID(), "AAC-99", "nope"} {
		_, err = q.DeleteIssue(ctx, w.ID, ref, nil)
		wantErr(t, "DeleteIssue of unknown "+ref, err, store.ErrNotFound)
	}
}

func testAutopilotRuns(t *testing.T, b Backend) {
	ctx, q := t.Context(), b.Queries
	w := newWorkspace(t, q, "AAC")
	at := baseTime()
	is := newIssue(t, q, w.ID, "automate me", at)
	run, err := q.CreateAutopilotRun(ctx, w.ID, store.AutopilotRun{IssueID: is.ID, IssueKey: is.Key, Status: store.RunQueued,
		Instructions: "fix it", RequestedBy: "alice", CreatedAt: at, UpdatedAt: at})
	must(t, "CreateAutopilotRun", err)
	if run.ID == "" || run.IssueID != is.ID || run.IssueKey != "AAC-1" || run.Status != store.RunQueued ||
		run.Instructions != "fix it" || run.RequestedBy != "alice" || !run.CreatedAt.Equal(at) {
		t.Errorf("CreateAutopilotRun = %+v", run)
	}
	later := at.Add(time.Minute)
	upd, err := q.UpdateAutopilotRun(ctx, w.ID, store.AutopilotRun{ID: run.ID, Status: store.RunDispatchFailed, Attempts: 3, Error: "webhook 503", UpdatedAt: later})
	must(t, "UpdateAutopilotRun", err)
	if upd.ID != run.ID || upd.Status != store.RunDispatchFailed || upd.Attempts != 3 || upd.Error != "webhook 503" ||
		!upd.UpdatedAt.Equal(later) || upd.Instructions != "fix it" || upd.IssueID != is.ID || !upd.CreatedAt.Equal(at) {
		t.Errorf("UpdateAutopilotRun = %+v", upd)
	}
	_, err = q.UpdateAutopilotRun(ctx, w.ID, store.AutopilotRun{ID: uid("run"), Status: store.RunDispatched, UpdatedAt: later})
	wantErr(t, "UpdateAutopilotRun of an unknown run", err, store.ErrNotFound)
	other := newWorkspace(t, q, "AAC")
	_, err = q.UpdateAutopilotRun(ctx, other.ID, store.AutopilotRun{ID: run.ID, Status: store.RunDispatched, UpdatedAt: later})
	wantErr(t, "UpdateAutopilotRun from another workspace", err, store.ErrNotFound)
	_, err = q.CreateAutopilotRun(ctx, w.ID, store.AutopilotRun{IssueID: newUUID(), IssueKey: "AAC-9", Status: store.RunQueued, RequestedBy: "alice", CreatedAt: at, UpdatedAt: at})
	wantErr(t, "CreateAutopilotRun on an unknown issue", err, store.ErrNotFound)
}
