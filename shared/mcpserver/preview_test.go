package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/confirm"
	gt "github.com/aacworkflow/aacmcp/shared/guard/guardtest"
	"github.com/aacworkflow/aacmcp/shared/mcpserver"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// plainRefusal is the REST body of destructive_flag_missing before previews
// existed; the tool result text on /mcp is the same JSON.
const plainRefusal = `{"error":"confirm: true required for destructive operations","code":"destructive_flag_missing"}`

// TestPreviewGolden: a delete refused for its missing confirm carries the
// preview on /mcp and REST alike (testdata/preview_*.golden, the item's id
// replaced by <issue_id>); every caller the preview is not for gets the exact
// bytes of the refusal before previews (testdata/refusal_*.golden), which say
// nothing about whether the item exists, is deleted, or is someone else's.
func TestPreviewGolden(t *testing.T) {
	ctx := context.Background()
	s := newServer(t)
	gone, err := s.w.Store.CreateIssue(ctx, gt.WS, store.NewIssue{Title: "Gone", Status: "open", Priority: "low", Labels: []string{}, CreatedBy: gt.Member, CreatedAt: s.w.Now})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.Store.DeleteIssue(ctx, gt.WS, gone.ID, nil); err != nil {
		t.Fatal(err)
	}
	writeOnly := s.w.Token(t, gt.WS, gt.Admin, "issues:write")
	notAuthor := s.w.Token(t, gt.WS, gt.Member2, auth.AllScopes...)
	outsider := s.w.Token(t, gt.OtherWS, gt.Outsider, auth.AllScopes...)

	// mcpBody and restBody are the two transports' answers to the same call,
	// with the seeded issue's id made stable.
	mcpBody := func(t *testing.T, token, issueID string) []byte {
		r := s.do(t, "POST", "/mcp", token, rpcBody(1, "tools/call", map[string]any{
			"name": "delete_issue", "arguments": map[string]any{"issue_id": issueID}}))
		return bytes.ReplaceAll([]byte(fmt.Sprintf("%d %s", r.status, r.body)), []byte(s.w.Issue.ID), []byte("<issue_id>"))
	}
	restBody := func(t *testing.T, token, issueID string) []byte {
		r := s.do(t, "POST", "/tools/delete_issue", token, `{"issue_id":"`+issueID+`"}`)
		return bytes.ReplaceAll([]byte(fmt.Sprintf("%d %s", r.status, r.body)), []byte(s.w.Issue.ID), []byte("<issue_id>"))
	}
	golden := func(t *testing.T, name string, got []byte) {
		t.Helper()
		path := filepath.Join("testdata", name)
		if *update {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("read golden (run with -update to create it): %v", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs:\n got %s\nwant %s", path, got, want)
		}
	}

	golden(t, "preview_mcp.golden", mcpBody(t, s.admin, s.w.Issue.ID))
	golden(t, "preview_rest.golden", restBody(t, s.admin, s.w.Issue.ID))
	golden(t, "refusal_mcp.golden", mcpBody(t, writeOnly, s.w.Issue.ID))
	golden(t, "refusal_rest.golden", restBody(t, writeOnly, s.w.Issue.ID))

	// The REST refusal is the one the previous release answered, byte for byte,
	// and the /mcp tool result carries the same JSON as its text.
	if got, want := restBody(t, writeOnly, s.w.Issue.ID), "400 "+plainRefusal+"\n"; string(got) != want {
		t.Errorf("REST refusal %s, want %s", got, want)
	}
	var rr rpcResponse
	if err := json.Unmarshal(bytes.TrimPrefix(mcpBody(t, writeOnly, s.w.Issue.ID), []byte("200 ")), &rr); err != nil {
		t.Fatal(err)
	}
	var tr toolResult
	if err := json.Unmarshal(rr.Result, &tr); err != nil || !tr.IsError || len(tr.Content) != 1 || tr.Content[0].Text != plainRefusal {
		t.Errorf("/mcp refusal %s (%v)", rr.Result, err)
	}

	for _, c := range []struct {
		name, token, issueID string
	}{
		{"no read scope", writeOnly, s.w.Issue.ID},
		{"member who could not delete it", notAuthor, s.w.Issue.ID},
		{"viewer", s.viewer, s.w.Issue.ID},
		{"another workspace's token", outsider, s.w.Issue.ID},
		{"another workspace's issue", s.admin, s.w.OtherIssue.ID},
		{"tombstoned issue", s.admin, gone.ID},
		{"unknown issue", s.admin, "00000000-0000-4000-8000-000000000000"},
	} {
		t.Run(c.name, func(t *testing.T) {
			// The id in the body is the caller's own; it is the only part that may
			// differ, and it is put back as <issue_id> to compare.
			swap := func(b []byte) []byte { return bytes.ReplaceAll(b, []byte(c.issueID), []byte("<issue_id>")) }
			golden(t, "refusal_mcp.golden", swap(mcpBody(t, c.token, c.issueID)))
			golden(t, "refusal_rest.golden", swap(restBody(t, c.token, c.issueID)))
		})
	}
}

// TestToolListReportsPolicy: GET /tools names the caller's workspace policy as
// the guard enforces it: flag when the policy step is off, otherwise the stored
// value, read at list time.
func TestToolListReportsPolicy(t *testing.T) {
	ctx := context.Background()
	get := func(t *testing.T, s *server) mcpserver.ToolList {
		t.Helper()
		var list mcpserver.ToolList
		r := s.do(t, "GET", "/tools", s.admin, "")
		if r.status != 200 {
			t.Fatalf("GET /tools: %d %s", r.status, r.body)
		}
		r.json(t, &list)
		if len(list.Tools) == 0 {
			t.Fatal("no tools")
		}
		return list
	}
	t.Run("policy step off", func(t *testing.T) {
		s := newServer(t)
		if err := s.w.Store.SetDestructiveConfirmation(ctx, gt.WS, string(confirm.PolicyRequire)); err != nil {
			t.Fatal(err)
		}
		// Without a key the guard enforces flag whatever is stored; the listing
		// says what a call gets.
		if got := get(t, s).DestructiveConfirmation; got != confirm.PolicyFlag {
			t.Errorf("destructive_confirmation %q, want flag", got)
		}
	})
	s := newServer(t, withConfirmation(t))
	if got := get(t, s).DestructiveConfirmation; got != confirm.PolicyFlag {
		t.Errorf("a workspace that never set one: %q, want flag", got)
	}
	for _, p := range confirm.Policies {
		t.Run(string(p), func(t *testing.T) {
			if err := s.w.Store.SetDestructiveConfirmation(ctx, gt.WS, string(p)); err != nil {
				t.Fatal(err)
			}
			if got := get(t, s).DestructiveConfirmation; got != p {
				t.Errorf("destructive_confirmation %q, want %q", got, p)
			}
			// Another workspace's policy is its own.
			var other mcpserver.ToolList
			s.do(t, "GET", "/tools", s.w.Token(t, gt.OtherWS, gt.Outsider, auth.AllScopes...), "").json(t, &other)
			if other.DestructiveConfirmation != confirm.PolicyFlag {
				t.Errorf("other workspace reports %q", other.DestructiveConfirmation)
			}
		})
	}
}
