package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aacworkflow/aacmcp/shared/store"
)

const issueCols = `id, seq, key, title, description, status, priority, labels,
	assignee_type, assignee_id, created_by, created_at, updated_at, version, comment_count`

// issueColsI is issueCols qualified with the alias i, for joins.
var issueColsI = func() string {
	cols := strings.Split(issueCols, ",")
	for i, c := range cols {
		cols[i] = "i." + strings.TrimSpace(c)
	}
	return strings.Join(cols, ", ")
}()

type scanner interface{ Scan(dest ...any) error }

// scanIssue reads one row of issueCols; seq is the number in the key.
func scanIssue(r scanner) (is store.Issue, seq int64, err error) {
	var labels string
	var aType, aID sql.NullString
	var created, updated int64
	err = r.Scan(&is.ID, &seq, &is.Key, &is.Title, &is.Description, &is.Status, &is.Priority, &labels,
		&aType, &aID, &is.CreatedBy, &created, &updated, &is.Version, &is.CommentCount)
	if err != nil {
		return store.Issue{}, 0, err
	}
	if is.Labels, err = decodeLabels(labels); err != nil {
		return store.Issue{}, 0, err
	}
	if aID.Valid {
		is.Assignee = &store.Assignee{Type: aType.String, ID: aID.String}
	}
	is.CreatedAt = fromNanos(created)
	is.UpdatedAt = fromNanos(updated)
	return is, seq, nil
}

// getIssue finds an issue of ws by UUID or by key (prefix case-insensitive).
func getIssue(x q, ws, idOrKey string) (store.Issue, int64, error) {
	var r row
	if prefix, n, ok := store.ParseIssueKey(idOrKey); ok {
		r = x.queryRow(`SELECT `+issueCols+` FROM issues WHERE workspace_id = ? AND seq = ? AND key = ?`,
			ws, n, store.IssueKey(prefix, n))
	} else {
		r = x.queryRow(`SELECT `+issueCols+` FROM issues WHERE workspace_id = ? AND id = ?`, ws, idOrKey)
	}
	is, seq, err := scanIssue(r)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Issue{}, 0, notFound("issue")
	}
	return is, seq, err
}

// GetIssue implements store.Reader.
func (s *Store) GetIssue(ctx context.Context, ws, idOrKey string) (store.Issue, error) {
	g, use := s.issueSnapshot()
	if use {
		if is, ok := s.cache.issue(cacheKey{ws, idOrKey}); ok {
			return is, nil
		}
	}
	is, _, err := getIssue(s.read(ctx), ws, idOrKey)
	if err != nil {
		return store.Issue{}, s.fail(err)
	}
	if use {
		s.cache.putIssue(g, cacheKey{ws, idOrKey}, is)
	}
	return is, nil
}

// decodeLabels reads the labels column: the JSON array labelsJSON wrote, never nil.
// What labelsJSON writes for ordinary labels, ["a","b"] with no space and no escape,
// is split here without encoding/json (which was most of the cost of decoding a
// row); the labels share the column's string. Anything else (escapes, spaces,
// invalid UTF-8, a malformed value) goes to encoding/json, so the result is always
// what json.Unmarshal gives, malformed input included (a fuzz test holds the two
// to each other).
func decodeLabels(s string) ([]string, error) {
	if labels, ok := splitPlainLabels(s); ok {
		return labels, nil
	}
	var labels []string
	if err := json.Unmarshal([]byte(s), &labels); err != nil {
		return nil, fmt.Errorf("sqlite: labels column: %w", err)
	}
	if labels == nil {
		labels = []string{}
	}
	return labels, nil
}

// splitPlainLabels decodes s when it is a JSON array of strings in compact form
// whose strings hold no escape and no control character and are valid UTF-8: then
// each label is exactly the bytes between its quotes. ok=false means "not that
// form", not "malformed".
func splitPlainLabels(s string) (labels []string, ok bool) {
	if len(s) < 2 || s[0] != '[' || s[len(s)-1] != ']' {
		return nil, false
	}
	body := s[1 : len(s)-1]
	if body == "" {
		return []string{}, true
	}
	labels = make([]string, 0, strings.Count(body, `","`)+1)
	for {
		// body is `"label"` or `"label",...`
		if len(body) < 2 || body[0] != '"' {
			return nil, false
		}
		end := 1
		for end < len(body) && body[end] != '"' {
			if c := body[end]; c == '\\' || c < 0x20 {
				return nil, false
			}
			end++
		}
		if end == len(body) {
			return nil, false
		}
		l := body[1:end]
		if !utf8.ValidString(l) {
			return nil, false
		}
		labels = append(labels, l)
		body = body[end+1:]
		if body == "" {
			return labels, true
		}
		if body[0] != ',' {
			return nil, false
		}
		body = body[1:]
	}
}

func labelsJSON(labels []string) (string, error) {
	if labels == nil {
		labels = []string{}
	}
	b, err := json.Marshal(labels)
	return string(b), err
}

func fold(s string) string { return strings.ToLower(s) }

// writeLabels replaces the label rows of an issue; they carry its updated_at, so
// every change of the issue rewrites them.
// deleteLabelsSQL removes an issue's label rows before they are written again.
// INDEXED BY because without statistics the planner of the SQLite aacmcp embeds
// (modernc.org/sqlite) searches issue_labels_by_updated on workspace_id alone, a
// scan of every label row of the workspace: 78% of an update_issue at 10,000
// issues (bench/REPORT.md section 7; TestLabelDeletePlan).
const deleteLabelsSQL = `DELETE FROM issue_labels INDEXED BY issue_labels_by_issue WHERE workspace_id = ? AND issue_id = ?`

// touchLabelsSQL moves an issue's label rows to its new updated_at.
const touchLabelsSQL = `UPDATE issue_labels INDEXED BY issue_labels_by_issue SET updated_at = ? WHERE workspace_id = ? AND issue_id = ?`

func writeLabels(x q, ws, issueID string, labels []string, updated time.Time) error {
	if _, err := x.exec(deleteLabelsSQL, ws, issueID); err != nil {
		return err
	}
	for _, l := range labels {
		if _, err := x.exec(`INSERT OR IGNORE INTO issue_labels (workspace_id, label, issue_id, updated_at) VALUES (?, ?, ?, ?)`,
			ws, l, issueID, nanos(updated)); err != nil {
			return err
		}
	}
	return nil
}

// CreateIssue implements store.Writer.
func (s *Store) CreateIssue(ctx context.Context, ws string, in store.NewIssue) (store.Issue, error) {
	if in.ID == "" {
		in.ID = store.NewIssueID()
	} else if !store.ValidIssueID(in.ID) {
		return store.Issue{}, store.Invalid("issue id must be a UUID")
	}
	created := s.orNow(in.CreatedAt)
	labels, err := labelsJSON(in.Labels)
	if err != nil {
		return store.Issue{}, err
	}
	is := in.Issue(created)
	err = s.writeIssue(ctx, ws, func(x q, touch func(string)) error {
		var seq int64
		var prefix string
		err := x.queryRow(`UPDATE workspaces SET issue_seq = issue_seq + 1 WHERE id = ? RETURNING issue_seq, key`, ws).
			Scan(&seq, &prefix)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("workspace")
		}
		if err != nil {
			return err
		}
		// An id that was deleted keeps answering deletes with its tombstone; reusing it
		// would make that answer lie.
		var gone int
		err = x.queryRow(`SELECT 1 FROM tombstones WHERE workspace_id = ? AND kind = 'issue' AND id = ?`, ws, in.ID).Scan(&gone)
		if err == nil {
			return store.Errorf(store.ErrAlreadyExists, "issue id already used")
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		is.Key = store.IssueKey(prefix, seq)
		touch(is.ID)
		_, err = x.exec(`INSERT INTO issues (workspace_id, id, seq, key, title, description, title_fold, desc_fold,
			status, priority, labels, created_by, created_at, updated_at, version, comment_count)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, 0)`,
			ws, is.ID, seq, is.Key, is.Title, is.Description, fold(is.Title), fold(is.Description),
			is.Status, is.Priority, labels, is.CreatedBy, nanos(created), nanos(created))
		if isUnique(err) {
			return store.Errorf(store.ErrAlreadyExists, "issue id already used")
		}
		if err != nil {
			return err
		}
		return writeLabels(x, ws, is.ID, is.Labels, created)
	})
	if err != nil {
		return store.Issue{}, err
	}
	return is, nil
}

// UpdateIssue implements store.Writer.
func (s *Store) UpdateIssue(ctx context.Context, ws, idOrKey string, p store.IssuePatch) (store.Issue, bool, error) {
	var out store.Issue
	var changed bool
	err := s.writeIssue(ctx, ws, func(x q, touch func(string)) error {
		cur, _, err := getIssue(x, ws, idOrKey)
		if err != nil {
			return err
		}
		next, ch := p.Apply(cur)
		if !ch {
			// A repeat of an applied update: succeed without writing, whatever the
			// expected version says (docs/architecture.md section 2).
			out = cur
			return nil
		}
		if p.ExpectedVersion != nil && *p.ExpectedVersion != cur.Version {
			return store.Errorf(store.ErrVersionMismatch, "issue %s is at version %d, not %d; read it again and retry",
				cur.Key, cur.Version, *p.ExpectedVersion)
		}
		next.Version = cur.Version + 1
		next.UpdatedAt = s.orNow(p.UpdatedAt)
		touch(cur.ID)
		labels, err := labelsJSON(next.Labels)
		if err != nil {
			return err
		}
		var aType, aID any
		if next.Assignee != nil {
			aType, aID = next.Assignee.Type, next.Assignee.ID
		}
		res, err := x.exec(`UPDATE issues SET title = ?, description = ?, title_fold = ?, desc_fold = ?,
			status = ?, priority = ?, labels = ?, assignee_type = ?, assignee_id = ?, updated_at = ?, version = ?
			WHERE workspace_id = ? AND id = ? AND version = ?`,
			next.Title, next.Description, fold(next.Title), fold(next.Description),
			next.Status, next.Priority, labels, aType, aID, nanos(next.UpdatedAt), next.Version,
			ws, cur.ID, cur.Version)
		if err != nil {
			return err
		}
		// The write transaction holds the database lock since it read cur, so the row
		// cannot have moved; a miss here is a bug, not a client conflict.
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return errors.Join(err, errors.New("sqlite: issue row changed inside a write transaction"))
		}
		if slices.Equal(cur.Labels, next.Labels) {
			// Same labels: their rows only carry the new updated_at (list order).
			if _, err := x.exec(touchLabelsSQL, nanos(next.UpdatedAt), ws, cur.ID); err != nil {
				return err
			}
		} else if err := writeLabels(x, ws, cur.ID, next.Labels, next.UpdatedAt); err != nil {
			return err
		}
		out, changed = next, true
		return nil
	})
	if err != nil {
		return store.Issue{}, false, err
	}
	return out, changed, nil
}

// DeleteIssue implements store.Writer. Comments, labels and autopilot runs go with the
// issue (foreign-key cascade); the key lookup goes with the row.
func (s *Store) DeleteIssue(ctx context.Context, ws, idOrKey string, allow store.DeleteCheck) (store.DeleteResult, error) {
	var out store.DeleteResult
	var refused error
	allow = keepRefusal(allow, &refused)
	err := s.writeIssue(ctx, ws, func(x q, touch func(string)) error {
		cur, seq, err := getIssue(x, ws, idOrKey)
		if errors.Is(err, store.ErrNotFound) {
			out, err = allow.Replay(s.issueTombstone(x, ws, idOrKey))
			return err
		}
		if err != nil {
			return err
		}
		if err := allow.Allow(cur.CreatedBy); err != nil {
			return err
		}
		touch(cur.ID)
		if _, err := x.exec(`DELETE FROM issues WHERE workspace_id = ? AND id = ?`, ws, cur.ID); err != nil {
			return err
		}
		out, err = s.bury(x, ws, "issue", cur.ID, seq, cur.CreatedBy)
		return err
	})
	return deleteAnswer(out, refused, err)
}

// issueTombstone answers a repeated delete by id or key; not_found when nothing of
// that name was deleted in ws within the tombstone TTL.
func (s *Store) issueTombstone(x q, ws, idOrKey string) (store.DeleteResult, error) {
	var r row
	now := nanos(s.now())
	if prefix, n, ok := store.ParseIssueKey(idOrKey); ok {
		r = x.queryRow(`SELECT t.id, t.owner, t.deleted_at FROM tombstones t JOIN workspaces w ON w.id = t.workspace_id
			WHERE t.workspace_id = ? AND t.issue_seq = ? AND w.key = ? AND t.expires_at > ?`, ws, n, prefix, now)
	} else {
		r = x.queryRow(`SELECT id, owner, deleted_at FROM tombstones
			WHERE workspace_id = ? AND kind = 'issue' AND id = ? AND expires_at > ?`, ws, idOrKey, now)
	}
	res := store.DeleteResult{Kind: "issue", Replay: true}
	var deleted int64
	err := r.Scan(&res.ID, &res.Owner, &deleted)
	if errors.Is(err, sql.ErrNoRows) {
		return store.DeleteResult{}, notFound("issue")
	}
	if err != nil {
		return store.DeleteResult{}, err
	}
	res.DeletedAt = fromNanos(deleted)
	return res, nil
}

// ListIssues implements store.Reader: newest updated first, ties by id, keyset
// pagination.
func (s *Store) ListIssues(ctx context.Context, ws string, f store.IssueFilter) (store.IssuePage, error) {
	limit := store.PageLimit(f.Limit)
	fp := f.Fingerprint(ws)
	pos, err := store.DecodeIssuePos(f.Cursor, fp)
	if err != nil {
		return store.IssuePage{}, err
	}
	query, args := listIssuesQuery(ws, f, pos, limit+1)
	rows, err := s.read(ctx).query(query, args...)
	if err != nil {
		return store.IssuePage{}, s.fail(err)
	}
	defer rows.Close()
	page := store.IssuePage{Issues: make([]store.Issue, 0, limit)}
	more := false
	for rows.Next() {
		if len(page.Issues) == limit {
			more = true
			break
		}
		is, _, err := scanIssue(rows)
		if err != nil {
			return store.IssuePage{}, s.fail(err)
		}
		page.Issues = append(page.Issues, is)
	}
	if err := rows.Err(); err != nil {
		return store.IssuePage{}, s.fail(err)
	}
	if more {
		c, err := store.NextIssueCursor(fp, page.Issues)
		if err != nil {
			return store.IssuePage{}, err
		}
		page.NextCursor = c
	}
	return page, nil
}

// listIssuesQuery assembles the ListIssues statement from a fixed set of fragments,
// so at most 32 distinct statements are ever prepared. Every variant walks an index
// in list order (a test checks the query plans): issues_by_status or
// issues_by_assignee when those filter, issue_labels_by_updated for a label, else
// issues_by_updated. Only the substring query has to test rows one by one.
func listIssuesQuery(ws string, f store.IssueFilter, pos *store.IssuePos, limit int) (string, []any) {
	var sb strings.Builder
	var args []any
	order := `i.updated_at DESC, i.id DESC`
	if f.Label != "" {
		sb.WriteString(`SELECT ` + issueColsI + ` FROM issue_labels l
			JOIN issues i ON i.workspace_id = l.workspace_id AND i.id = l.issue_id
			WHERE l.workspace_id = ? AND l.label = ?`)
		args = append(args, ws, f.Label)
		order = `l.updated_at DESC, l.issue_id DESC`
	} else {
		sb.WriteString(`SELECT ` + issueColsI + ` FROM issues i WHERE i.workspace_id = ?`)
		args = append(args, ws)
	}
	if f.Status != "" {
		sb.WriteString(` AND i.status = ?`)
		args = append(args, f.Status)
	}
	if f.Assignee != "" {
		sb.WriteString(` AND i.assignee_id = ?`)
		args = append(args, f.Assignee)
	}
	if f.Query != "" {
		// instr, not LIKE: the query is a plain substring, % and _ are not wildcards.
		sb.WriteString(` AND (instr(i.title_fold, ?) > 0 OR instr(i.desc_fold, ?) > 0)`)
		qf := fold(f.Query)
		args = append(args, qf, qf)
	}
	if pos != nil {
		if f.Label != "" {
			sb.WriteString(` AND (l.updated_at, l.issue_id) < (?, ?)`)
		} else {
			sb.WriteString(` AND (i.updated_at, i.id) < (?, ?)`)
		}
		args = append(args, pos.U, pos.I)
	}
	sb.WriteString(` ORDER BY ` + order + ` LIMIT ?`)
	args = append(args, limit)
	return sb.String(), args
}
