package mcpserver_test

import (
	"bytes"
	"context"
	"testing"

	gt "github.com/aacworkflow/aacmcp/shared/guard/guardtest"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// TestDirectToolCallMatchesMCPGo checks that a tools/call answered directly (JSON
// body, JSON-RPC 2.0, a pre-2026-07-28 protocol header) carries exactly the bytes
// mcp-go writes for the same result when it answers the call itself (no protocol
// header sends it there), HTML-sensitive characters and string ids included.
func TestDirectToolCallMatchesMCPGo(t *testing.T) {
	s := newServer(t)
	odd, err := s.w.Store.CreateIssue(context.Background(), gt.WS, store.NewIssue{
		Title: `<b>Tom & "Jerry"</b> é ✓`, Description: "line\nbreak\ttab \u2028 sep", Status: "open", Priority: "low",
		Labels: []string{"a<b"}, CreatedBy: gt.Member,
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		body string
	}{
		{"get_issue", rpcBody(7, "tools/call", map[string]any{"name": "get_issue", "arguments": map[string]any{"issue_id": s.w.Issue.Key}})},
		{"get_issue with escapes", rpcBody(8, "tools/call", map[string]any{"name": "get_issue", "arguments": map[string]any{"issue_id": odd.ID}})},
		{"list_issues", rpcBody(9, "tools/call", map[string]any{"name": "list_issues", "arguments": map[string]any{"limit": 2}})},
		{"string id", `{"jsonrpc":"2.0","id":"req-<1>","method":"tools/call","params":{"name":"get_issue","arguments":{"issue_id":"` + s.w.Issue.ID + `"}}}`},
		{"spaced id", `{"jsonrpc":"2.0","id": 42 ,"method":"tools/call","params":{"name":"list_issues","arguments":{}}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			direct := s.do(t, "POST", "/mcp", s.admin, tc.body)
			viaMCPGo := s.do(t, "POST", "/mcp", s.admin, tc.body, "MCP-Protocol-Version: ")
			if direct.status != 200 || viaMCPGo.status != 200 {
				t.Fatalf("status %d and %d: %s / %s", direct.status, viaMCPGo.status, direct.body, viaMCPGo.body)
			}
			if bytes.Contains(direct.body, []byte(`"isError"`)) {
				t.Fatalf("tool error: %s", direct.body)
			}
			if !bytes.Equal(direct.body, viaMCPGo.body) {
				t.Errorf("direct answer differs from mcp-go's:\n%s\n%s", direct.body, viaMCPGo.body)
			}
			if ct := direct.header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
		})
	}
}
