package mcpserver_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// A member name repeated anywhere in the message or in the arguments is refused
// with invalid_arguments on both transports, before anything runs: a proxy or policy
// layer that reads the first value ("confirm": false) must never see a delete happen
// because the server read the last one.
func TestDuplicateMemberNamesAreRefused(t *testing.T) {
	s := newServer(t)
	id := s.w.Issue.ID
	exists := func(t *testing.T) {
		t.Helper()
		r := s.do(t, "POST", "/tools/get_issue", s.admin, `{"issue_id":"`+id+`"}`)
		if r.status != http.StatusOK {
			t.Fatalf("the issue is gone (get_issue %d %s)", r.status, r.body)
		}
	}
	rest := []struct{ name, body string }{
		{"confirm false then true", `{"issue_id":"` + id + `","confirm":false,"confirm":true}`},
		{"confirm true then false", `{"issue_id":"` + id + `","confirm":true,"confirm":false}`},
		{"escaped spelling", `{"issue_id":"` + id + `","confirm":false,"conf\u0069rm":true}`},
		{"issue id twice", `{"issue_id":"AAC-404","issue_id":"` + id + `","confirm":true}`},
		{"nested", `{"issue_id":"` + id + `","confirm":true,"x":{"a":1,"a":2}}`},
		// encoding/json matches names case-insensitively and keeps the last match.
		{"confirm in another case", `{"issue_id":"` + id + `","confirm":false,"CONFIRM":true}`},
		{"issue id in another case", `{"issue_id":"AAC-404","Issue_ID":"` + id + `","confirm":true}`},
	}
	for _, tc := range rest {
		t.Run("rest/"+tc.name, func(t *testing.T) {
			rec := s.expectOneRecord(t, func() {
				r := s.do(t, "POST", "/tools/delete_issue", s.admin, tc.body)
				var b struct{ Code string }
				r.json(t, &b)
				if r.status != http.StatusBadRequest || b.Code != "invalid_arguments" {
					t.Errorf("answer %d %s, want 400 invalid_arguments", r.status, r.body)
				}
			})
			if rec.Reason != "invalid_arguments" || rec.ConfirmPresent {
				t.Errorf("record %+v, want invalid_arguments without confirm_present", rec)
			}
			exists(t)
		})
	}
	args := `{"issue_id":"` + id + `","confirm":false,"confirm":true}`
	mcp := []struct{ name, body string }{
		{"in the arguments", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"delete_issue","arguments":` + args + `}}`},
		{"two tool names", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_issue","name":"delete_issue","arguments":{"issue_id":"` + id + `","confirm":true}}}`},
		{"two params", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_issue","arguments":{"issue_id":"` + id + `"}},"params":{"name":"delete_issue","arguments":{"issue_id":"` + id + `","confirm":true}}}`},
		{"two methods", `{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call","params":{"name":"delete_issue","arguments":{"issue_id":"` + id + `","confirm":true}}}`},
		{"two arguments", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"delete_issue","arguments":{"issue_id":"x"},"arguments":{"issue_id":"` + id + `","confirm":true}}}`},
		// The same names in another case: a proxy reading params.name exactly sees
		// get_issue, encoding/json the last of the names that fold alike.
		{"name and NAME", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_issue","NAME":"delete_issue","arguments":{"issue_id":"` + id + `","confirm":true}}}`},
		{"arguments and Arguments", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"delete_issue","arguments":{"issue_id":"x"},"Arguments":{"issue_id":"` + id + `","confirm":true}}}`},
		{"method and METHOD", `{"jsonrpc":"2.0","id":1,"method":"tools/list","METHOD":"tools/call","params":{"name":"delete_issue","arguments":{"issue_id":"` + id + `","confirm":true}}}`},
		{"params and Params", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_issue","arguments":{"issue_id":"` + id + `"}},"Params":{"name":"delete_issue","arguments":{"issue_id":"` + id + `","confirm":true}}}`},
		{"name spelled with an escape", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_issue","n\u0041me":"delete_issue","arguments":{"issue_id":"` + id + `","confirm":true}}}`},
	}
	for _, tc := range mcp {
		t.Run("mcp/"+tc.name, func(t *testing.T) {
			r := s.do(t, "POST", "/mcp", s.admin, tc.body)
			var rr rpcResponse
			r.json(t, &rr)
			code := ""
			if rr.Error != nil {
				code = rr.Error.Data.Code
			} else {
				var tr toolResult
				_ = json.Unmarshal(rr.Result, &tr)
				if tr.IsError && len(tr.Content) > 0 {
					var b struct{ Code string }
					_ = json.Unmarshal([]byte(tr.Content[0].Text), &b)
					code = b.Code
				}
			}
			if code != "invalid_arguments" {
				t.Errorf("answer %d %s, want invalid_arguments", r.status, r.body)
			}
			exists(t)
		})
	}
	// A plain message with distinct names still works.
	r := s.do(t, "POST", "/mcp", s.admin, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	if r.status != http.StatusOK || !strings.Contains(string(r.body), "delete_issue") {
		t.Errorf("tools/list: %d %s", r.status, r.body)
	}
}
