package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/aacworkflow/aacmcp/shared/store"
)

// maxCallerID bounds ids a caller may choose for comments and runs.
const maxCallerID = 128

// GetComment implements store.Reader.
func (s *Store) GetComment(ctx context.Context, ws, commentID string) (store.Comment, error) {
	c := store.Comment{ID: commentID}
	var created int64
	err := s.read(ctx).queryRow(`SELECT issue_id, author, body, created_at FROM comments WHERE workspace_id = ? AND id = ?`,
		ws, commentID).Scan(&c.IssueID, &c.Author, &c.Body, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Comment{}, notFound("comment")
	}
	if err != nil {
		return store.Comment{}, s.fail(err)
	}
	c.CreatedAt = fromNanos(created)
	return c, nil
}

// commentPos is the position of a ListComments cursor: the last comment returned.
// The issue's id is part of it (not of the fingerprint) because the issue may be
// named by id or by key, and either name must accept the cursor.
type commentPos struct {
	C   int64  `json:"c"` // created_at, unix nanos
	I   string `json:"i"` // comment id
	Iss string `json:"s"` // issue id
}

// ListComments implements store.Reader: oldest first, keyset pagination. One
// statement resolves the issue and reads the page, so both come from one snapshot
// and a missing issue (no row at all) differs from an issue without comments (one
// row of NULLs).
func (s *Store) ListComments(ctx context.Context, ws, issueIDOrKey string, p store.PageRequest) (store.CommentPage, error) {
	limit := store.PageLimit(p.Limit)
	fp := store.Fingerprint(ws, "comments")
	var pos commentPos
	var args []any
	query := `SELECT i.id, c.id, c.author, c.body, c.created_at FROM issues i
		LEFT JOIN comments c ON c.workspace_id = i.workspace_id AND c.issue_id = i.id`
	if p.Cursor != "" {
		if err := store.DecodeCursor(p.Cursor, fp, &pos); err != nil {
			return store.CommentPage{}, err
		}
		if pos.I == "" || pos.Iss == "" {
			return store.CommentPage{}, store.BadCursor()
		}
		query += ` AND (c.created_at, c.id) > (?, ?)`
		args = append(args, pos.C, pos.I)
	}
	if prefix, n, ok := store.ParseIssueKey(issueIDOrKey); ok {
		query += ` WHERE i.workspace_id = ? AND i.seq = ? AND i.key = ?`
		args = append(args, ws, n, store.IssueKey(prefix, n))
	} else {
		query += ` WHERE i.workspace_id = ? AND i.id = ?`
		args = append(args, ws, issueIDOrKey)
	}
	query += ` ORDER BY c.created_at, c.id LIMIT ?`
	args = append(args, limit+1)

	rows, err := s.read(ctx).query(query, args...)
	if err != nil {
		return store.CommentPage{}, s.fail(err)
	}
	defer rows.Close()
	page := store.CommentPage{Comments: make([]store.Comment, 0, limit)}
	found, more := false, false
	var issueID string
	for rows.Next() {
		if len(page.Comments) == limit {
			more = true
			break
		}
		var id, author, body sql.NullString
		var created sql.NullInt64
		if err := rows.Scan(&issueID, &id, &author, &body, &created); err != nil {
			return store.CommentPage{}, s.fail(err)
		}
		found = true
		if id.Valid {
			page.Comments = append(page.Comments, store.Comment{ID: id.String, IssueID: issueID, Author: author.String,
				Body: body.String, CreatedAt: fromNanos(created.Int64)})
		}
	}
	if err := rows.Err(); err != nil {
		return store.CommentPage{}, s.fail(err)
	}
	if !found {
		return store.CommentPage{}, notFound("issue")
	}
	if p.Cursor != "" && pos.Iss != issueID {
		return store.CommentPage{}, store.Invalid("cursor belongs to a different query; start again without a cursor")
	}
	if more {
		last := page.Comments[len(page.Comments)-1]
		page.NextCursor, err = store.EncodeCursor(fp, commentPos{C: nanos(last.CreatedAt), I: last.ID, Iss: issueID})
		if err != nil {
			return store.CommentPage{}, err
		}
	}
	return page, nil
}

// CreateComment implements store.Writer. The comment and the issue's comment_count
// change in one transaction.
func (s *Store) CreateComment(ctx context.Context, ws, issueIDOrKey string, in store.NewComment) (store.Comment, error) {
	if in.ID == "" {
		in.ID = store.NewULID()
	} else if len(in.ID) > maxCallerID {
		return store.Comment{}, store.Invalid("comment id is too long")
	}
	c := store.Comment{ID: in.ID, Author: in.Author, Body: in.Body, CreatedAt: s.orNow(in.CreatedAt)}
	err := s.writeIssue(ctx, ws, func(x q, touch func(string)) error {
		is, _, err := getIssue(x, ws, issueIDOrKey)
		if err != nil {
			return err
		}
		c.IssueID = is.ID
		var gone int
		err = x.queryRow(`SELECT 1 FROM tombstones WHERE workspace_id = ? AND kind = 'comment' AND id = ?`, ws, c.ID).Scan(&gone)
		if err == nil {
			return store.Errorf(store.ErrAlreadyExists, "comment id already used")
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		touch(c.IssueID)
		_, err = x.exec(`INSERT INTO comments (workspace_id, id, issue_id, author, body, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
			ws, c.ID, c.IssueID, c.Author, c.Body, nanos(c.CreatedAt))
		if isUnique(err) {
			return store.Errorf(store.ErrAlreadyExists, "comment id already used")
		}
		if err != nil {
			return err
		}
		_, err = x.exec(`UPDATE issues SET comment_count = comment_count + 1 WHERE workspace_id = ? AND id = ?`, ws, c.IssueID)
		return err
	})
	if err != nil {
		return store.Comment{}, err
	}
	return c, nil
}

// DeleteComment implements store.Writer. Comments removed with their issue have no
// tombstone of their own: no delete_comment ever answered for them.
func (s *Store) DeleteComment(ctx context.Context, ws, commentID string, allow store.DeleteCheck) (store.DeleteResult, error) {
	var out store.DeleteResult
	var refused error
	allow = keepRefusal(allow, &refused)
	err := s.writeIssue(ctx, ws, func(x q, touch func(string)) error {
		var issueID, author string
		err := x.queryRow(`SELECT issue_id, author FROM comments WHERE workspace_id = ? AND id = ?`, ws, commentID).Scan(&issueID, &author)
		if errors.Is(err, sql.ErrNoRows) {
			out, err = allow.Replay(s.commentTombstone(x, ws, commentID))
			return err
		}
		if err != nil {
			return err
		}
		if err := allow.Allow(author); err != nil {
			return err
		}
		touch(issueID)
		if _, err := x.exec(`DELETE FROM comments WHERE workspace_id = ? AND id = ?`, ws, commentID); err != nil {
			return err
		}
		if _, err := x.exec(`UPDATE issues SET comment_count = comment_count - 1 WHERE workspace_id = ? AND id = ?`,
			ws, issueID); err != nil {
			return err
		}
		out, err = s.bury(x, ws, "comment", commentID, nil, author)
		return err
	})
	return deleteAnswer(out, refused, err)
}
