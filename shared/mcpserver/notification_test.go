package mcpserver_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// A tools/call sent as a JSON-RPC notification (no id) is never run, whatever the
// headers: the answer is 202 with no body (Streamable HTTP's answer to a
// notification), the same with or without MCP-Protocol-Version, and the attempt is
// audited once as invalid_arguments.
func TestToolsCallNotificationNeverRuns(t *testing.T) {
	s := newServer(t)
	const body = `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"create_issue","arguments":{"title":"sent as a notification"}}}`
	for _, tc := range []struct {
		name    string
		version string
	}{
		{"with MCP-Protocol-Version", protocolVersion},
		{"without MCP-Protocol-Version", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest("POST", s.url+"/mcp", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Authorization", "Bearer "+s.admin)
			if tc.version != "" {
				req.Header.Set("MCP-Protocol-Version", tc.version)
			}
			var status int
			var got []byte
			rec := s.expectOneRecord(t, func() {
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				status = resp.StatusCode
				got, _ = io.ReadAll(resp.Body)
			})
			if status != http.StatusAccepted || len(got) != 0 {
				t.Errorf("answer %d %q, want 202 with no body", status, got)
			}
			if rec.Outcome != "error" || rec.Reason != "invalid_arguments" || rec.Tool != "create_issue" {
				t.Errorf("audit record %+v, want the refused create_issue", rec)
			}
		})
	}
	// Nothing was created by either.
	_, rr := s.callTool(t, s.admin, "list_issues", nil)
	if strings.Contains(string(rr.Result), "sent as a notification") {
		t.Errorf("a notification created an issue: %s", rr.Result)
	}
}
