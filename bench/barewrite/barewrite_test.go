package barewrite_test

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/bench/barewrite"
	"github.com/aacworkflow/aacmcp/shared/store"
)

func call(t *testing.T, h http.Handler, tool string, args map[string]any) map[string]any {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": tool, "arguments": args}})
	req := httptest.NewRequest(http.MethodPost, "/mcp", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var msg struct {
		Result struct {
			IsError    bool            `json:"isError"`
			Structured json.RawMessage `json:"structuredContent"`
		} `json:"result"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &msg); err != nil || rec.Code != http.StatusOK || msg.Result.IsError {
		t.Fatalf("%s: %d %s (%v)", tool, rec.Code, rec.Body, err)
	}
	var out map[string]any
	if err := json.Unmarshal(msg.Result.Structured, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestWritesTheRows: each tool writes the rows the bench claims it does, in a
// database a plain SQLite connection reads back.
func TestWritesTheRows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.db")
	now := time.Now().UTC()
	seed := []store.Issue{{ID: store.NewIssueID(), Key: "BW-7", Title: "seeded", Status: "open", Priority: "low",
		Labels: []string{"x"}, CreatedBy: "u", CreatedAt: now, UpdatedAt: now, Version: 1}}
	s, err := barewrite.Open(t.Context(), path, "ws", "BW", "u", seed)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := s.Handler()

	created := call(t, h, "create_issue", map[string]any{"title": "new", "labels": []string{"a", "b"}})
	if created["key"] != "BW-8" {
		t.Errorf("created key %v, want BW-8 (after the seeded BW-7)", created["key"])
	}
	updated := call(t, h, "update_issue", map[string]any{"issue_id": "BW-7", "title": "renamed"})
	if updated["title"] != "renamed" || updated["version"] != float64(2) {
		t.Errorf("update answered %v", updated)
	}
	call(t, h, "comment_issue", map[string]any{"issue_id": seed[0].ID, "body": "hi"})

	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	checks := []struct {
		query string
		want  int64
	}{
		{`SELECT count(*) FROM issues`, 2},
		{`SELECT count(*) FROM issue_labels WHERE issue_id = '` + created["id"].(string) + `'`, 2},
		{`SELECT version FROM issues WHERE key = 'BW-7'`, 2},
		{`SELECT comment_count FROM issues WHERE key = 'BW-7'`, 1},
		{`SELECT count(*) FROM comments WHERE issue_id = '` + seed[0].ID + `'`, 1},
	}
	for _, c := range checks {
		var got int64
		if err := db.QueryRow(c.query).Scan(&got); err != nil || got != c.want {
			t.Errorf("%s = %d (%v), want %d", c.query, got, err, c.want)
		}
	}
	var mode string
	if err := db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode %q (%v), want wal", mode, err)
	}
}
