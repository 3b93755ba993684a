// Package barewrite is the write benchmark's ceiling: a minimal mcp-go stateless
// Streamable HTTP server with create_issue, update_issue and comment_issue that
// writes the same rows as aacmcp's SQLite store (an issue row and its label rows;
// the issue's changed columns and version; a comment row and its issue's
// comment_count), each call in one transaction, with the same durability: WAL,
// synchronous=NORMAL, one writer connection. No auth, no member check, no audit
// record, no usage counter, no idempotency, no tombstones.
package barewrite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/oklog/ulid/v2"
	_ "modernc.org/sqlite" // the driver aacmcp's store uses

	"github.com/aacworkflow/aacmcp/bench/bare"
	"github.com/aacworkflow/aacmcp/shared/store"
)

const schema = `
CREATE TABLE IF NOT EXISTS workspaces (id TEXT PRIMARY KEY, key TEXT NOT NULL, issue_seq INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS issues (
    workspace_id TEXT NOT NULL, id TEXT NOT NULL, seq INTEGER NOT NULL, key TEXT NOT NULL,
    title TEXT NOT NULL, description TEXT NOT NULL, title_fold TEXT NOT NULL, desc_fold TEXT NOT NULL,
    status TEXT NOT NULL, priority TEXT NOT NULL, labels TEXT NOT NULL,
    assignee_type TEXT, assignee_id TEXT, created_by TEXT NOT NULL,
    created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, version INTEGER NOT NULL,
    comment_count INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (workspace_id, id));
CREATE UNIQUE INDEX IF NOT EXISTS issues_by_seq ON issues (workspace_id, seq);
CREATE UNIQUE INDEX IF NOT EXISTS issues_by_key ON issues (workspace_id, key);
CREATE INDEX IF NOT EXISTS issues_by_update ON issues (workspace_id, updated_at DESC, id DESC);
CREATE TABLE IF NOT EXISTS issue_labels (workspace_id TEXT NOT NULL, issue_id TEXT NOT NULL, label TEXT NOT NULL,
    PRIMARY KEY (workspace_id, issue_id, label));
CREATE TABLE IF NOT EXISTS comments (workspace_id TEXT NOT NULL, id TEXT NOT NULL, issue_id TEXT NOT NULL,
    author TEXT NOT NULL, body TEXT NOT NULL, created_at INTEGER NOT NULL, PRIMARY KEY (workspace_id, id));
CREATE INDEX IF NOT EXISTS comments_by_issue ON comments (workspace_id, issue_id, created_at, id);
`

// Server writes one workspace's issues to a SQLite file.
type Server struct {
	db   *sql.DB
	ws   string
	user string
}

// Open opens (creating) the database at path and seeds it with issues, which must
// belong to workspace ws with key prefix wsKey.
func Open(ctx context.Context, path, ws, wsKey, user string, issues []store.Issue) (*Server, error) {
	q := url.Values{}
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "busy_timeout(5000)")
	q.Add("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1) // one writer, as aacmcp's store
	s := &Server{db: db, ws: ws, user: user}
	if err := s.seed(ctx, wsKey, issues); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// Close closes the database.
func (s *Server) Close() error { return s.db.Close() }

func (s *Server) seed(ctx context.Context, wsKey string, issues []store.Issue) error {
	if _, err := s.db.ExecContext(ctx, schema); err != nil {
		return err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var maxSeq int64
	for _, is := range issues {
		_, n, ok := store.ParseIssueKey(is.Key)
		if !ok {
			return fmt.Errorf("barewrite: issue %s has key %q", is.ID, is.Key)
		}
		maxSeq = max(maxSeq, n)
		if err := insertIssue(ctx, tx, s.ws, n, is); err != nil {
			return err
		}
	}
	_, err = tx.ExecContext(ctx, `INSERT OR REPLACE INTO workspaces (id, key, issue_seq) VALUES (?, ?, ?)`, s.ws, wsKey, maxSeq)
	if err != nil {
		return err
	}
	return tx.Commit()
}

func insertIssue(ctx context.Context, tx *sql.Tx, ws string, seq int64, is store.Issue) error {
	labels, err := json.Marshal(is.Labels)
	if err != nil {
		return err
	}
	var at, ai any
	if is.Assignee != nil {
		at, ai = is.Assignee.Type, is.Assignee.ID
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO issues (workspace_id, id, seq, key, title, description, title_fold,
		desc_fold, status, priority, labels, assignee_type, assignee_id, created_by, created_at, updated_at, version,
		comment_count) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		ws, is.ID, seq, is.Key, is.Title, is.Description, strings.ToLower(is.Title), strings.ToLower(is.Description),
		is.Status, is.Priority, string(labels), at, ai, is.CreatedBy, is.CreatedAt.UnixNano(), is.UpdatedAt.UnixNano(),
		is.Version, is.CommentCount); err != nil {
		return err
	}
	for _, l := range is.Labels {
		if _, err := tx.ExecContext(ctx, `INSERT INTO issue_labels (workspace_id, issue_id, label) VALUES (?, ?, ?)`, ws, is.ID, l); err != nil {
			return err
		}
	}
	return nil
}

// Handler is the HTTP handler serving POST /mcp.
func (s *Server) Handler() http.Handler {
	m := server.NewMCPServer("barewrite", "1.0.0", server.WithToolCapabilities(false))
	m.AddTool(mcp.NewTool("create_issue", mcp.WithString("title", mcp.Required()), mcp.WithArray("labels")), s.createIssue)
	m.AddTool(mcp.NewTool("update_issue", mcp.WithString("issue_id", mcp.Required()), mcp.WithString("title"), mcp.WithString("status")), s.updateIssue)
	m.AddTool(mcp.NewTool("comment_issue", mcp.WithString("issue_id", mcp.Required()), mcp.WithString("body", mcp.Required())), s.commentIssue)
	return bare.Transport(m)
}

func (s *Server) createIssue(ctx context.Context, in mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	title := in.GetString("title", "")
	labels := in.GetStringSlice("labels", []string{})
	now := time.Now().UTC()
	is := store.Issue{ID: store.NewIssueID(), Title: title, Status: "open", Priority: "medium", Labels: labels,
		CreatedBy: s.user, CreatedAt: now, UpdatedAt: now, Version: 1}
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var prefix string
		var seq int64
		if err := tx.QueryRowContext(ctx, `UPDATE workspaces SET issue_seq = issue_seq + 1 WHERE id = ? RETURNING key, issue_seq`,
			s.ws).Scan(&prefix, &seq); err != nil {
			return err
		}
		is.Key = store.IssueKey(prefix, seq)
		return insertIssue(ctx, tx, s.ws, seq, is)
	})
	if err != nil {
		return nil, err
	}
	return bare.Result(is)
}

func (s *Server) updateIssue(ctx context.Context, in mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	id := in.GetString("issue_id", "")
	var out struct {
		ID      string `json:"id"`
		Key     string `json:"key"`
		Title   string `json:"title"`
		Status  string `json:"status"`
		Version int64  `json:"version"`
	}
	err := s.tx(ctx, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, `UPDATE issues SET title = coalesce(?, title), title_fold = lower(coalesce(?, title)),
			status = coalesce(?, status), updated_at = ?, version = version + 1
			WHERE workspace_id = ? AND (id = ? OR key = ?) RETURNING id, key, title, status, version`,
			optional(in, "title"), optional(in, "title"), optional(in, "status"), time.Now().UnixNano(), s.ws, id, id).
			Scan(&out.ID, &out.Key, &out.Title, &out.Status, &out.Version)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return mcp.NewToolResultError(`{"error":"issue not found","code":"not_found"}`), nil
	}
	if err != nil {
		return nil, err
	}
	return bare.Result(out)
}

func (s *Server) commentIssue(ctx context.Context, in mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	id := in.GetString("issue_id", "")
	c := store.Comment{ID: ulid.Make().String(), Author: s.user, Body: in.GetString("body", ""), CreatedAt: time.Now().UTC()}
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if err := tx.QueryRowContext(ctx, `UPDATE issues SET comment_count = comment_count + 1
			WHERE workspace_id = ? AND (id = ? OR key = ?) RETURNING id`, s.ws, id, id).Scan(&c.IssueID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO comments (workspace_id, id, issue_id, author, body, created_at)
			VALUES (?, ?, ?, ?, ?, ?)`, s.ws, c.ID, c.IssueID, c.Author, c.Body, c.CreatedAt.UnixNano())
		return err
	})
	if errors.Is(err, sql.ErrNoRows) {
		return mcp.NewToolResultError(`{"error":"issue not found","code":"not_found"}`), nil
	}
	if err != nil {
		return nil, err
	}
	return bare.Result(c)
}

func (s *Server) tx(ctx context.Context, f func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := f(tx); err != nil {
		return err
	}
	return tx.Commit()
}

func optional(in mcp.CallToolRequest, name string) any {
	if v, ok := in.GetArguments()[name].(string); ok {
		return v
	}
	return nil
}
