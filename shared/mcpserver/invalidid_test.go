package mcpserver_test

import (
	"net/http"
	"strings"
	"testing"
)

// A message whose id is an object, an array or a boolean is not a JSON-RPC request
// (JSON-RPC 2.0 section 4: a string, a number or null): it is answered -32600 with
// id null and nothing runs. A tools/call among them is a refused attempt, audited
// once as invalid_arguments like every other malformed tools/call; the answer never
// carries the tool's result.
func TestInvalidRequestIDRunsNothing(t *testing.T) {
	s := newServer(t)
	for _, id := range []string{`{}`, `{"a":1}`, `[]`, `[1]`, `true`, `false`} {
		t.Run("tools/call id "+id, func(t *testing.T) {
			body := `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"create_issue","arguments":{"title":"sent with an invalid id"}}}`
			var r response
			rec := s.expectOneRecord(t, func() { r = s.do(t, "POST", "/mcp", s.admin, body) })
			var rr rpcResponse
			r.json(t, &rr)
			if r.status != http.StatusBadRequest || rr.Error == nil || rr.Error.Code != -32600 || string(rr.ID) != "null" || rr.Result != nil {
				t.Errorf("answer %d %s, want 400 with error -32600 and id null", r.status, r.body)
			}
			if rec.Outcome != "error" || rec.Reason != "invalid_arguments" || rec.Tool != "create_issue" {
				t.Errorf("audit record %+v, want the refused create_issue", rec)
			}
		})
		t.Run("tools/list id "+id, func(t *testing.T) {
			var r response
			s.expectNoRecord(t, func() { r = s.do(t, "POST", "/mcp", s.admin, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/list"}`) })
			var rr rpcResponse
			r.json(t, &rr)
			if r.status != http.StatusBadRequest || rr.Error == nil || rr.Error.Code != -32600 || string(rr.ID) != "null" || rr.Result != nil {
				t.Errorf("answer %d %s, want 400 with error -32600 and id null", r.status, r.body)
			}
		})
	}
	_, rr := s.callTool(t, s.admin, "list_issues", nil)
	if strings.Contains(string(rr.Result), "invalid id") {
		t.Errorf("a request with an invalid id created an issue: %s", rr.Result)
	}
	// The usual forms still run: a string and a number.
	for _, id := range []string{`"a"`, `7`} {
		r := s.do(t, "POST", "/mcp", s.admin, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/list"}`)
		var rr rpcResponse
		r.json(t, &rr)
		if r.status != http.StatusOK || rr.Error != nil || string(rr.ID) != id {
			t.Errorf("id %s: answer %d %s", id, r.status, r.body)
		}
	}
}
