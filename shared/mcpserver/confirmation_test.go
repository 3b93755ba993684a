package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/aacworkflow/aacmcp/shared/confirm"
	"github.com/aacworkflow/aacmcp/shared/guard"
	gt "github.com/aacworkflow/aacmcp/shared/guard/guardtest"
	"github.com/aacworkflow/aacmcp/shared/mcpserver"
	"github.com/aacworkflow/aacmcp/shared/store"
	"github.com/aacworkflow/aacmcp/test/mcpgotest"
)

// withConfirmation turns the workspace policy step on, as serve and the Lambda do.
func withConfirmation(t testing.TB) option {
	t.Helper()
	keys, err := confirm.EphemeralKeyring()
	if err != nil {
		t.Fatal(err)
	}
	return func(_ *mcpserver.Config, g *guard.Config) {
		g.Keyring = keys
		g.Confirmations = g.Store.(store.Confirmations)
	}
}

func TestHumanConfirmationMCPGoClient(t *testing.T) {
	s := newServer(t, withConfirmation(t))
	ctx := context.Background()
	if err := s.w.Store.SetDestructiveConfirmation(ctx, gt.WS, "elicit"); err != nil {
		t.Fatal(err)
	}
	typeKey := func(key string) func(string) string { return func(string) string { return key } }

	cases := []struct {
		name    string
		who     *mcpgotest.Person
		deleted bool
		code    string
	}{
		{"accepted", &mcpgotest.Person{Action: mcp.ElicitationResponseActionAccept}, true, ""},
		{"declined", &mcpgotest.Person{Action: mcp.ElicitationResponseActionDecline}, false, "confirmation_declined"},
		{"cancelled", &mcpgotest.Person{Action: mcp.ElicitationResponseActionCancel}, false, "confirmation_declined"},
		{"wrong key", &mcpgotest.Person{Action: mcp.ElicitationResponseActionAccept, Typed: typeKey("ACME-0")}, false, "confirmation_declined"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			is, err := s.w.Store.CreateIssue(ctx, gt.WS, store.NewIssue{Title: "Doomed\x1b[31m", Status: "open", Priority: "low", Labels: []string{}, CreatedBy: gt.Member})
			if err != nil {
				t.Fatal(err)
			}
			if tc.who.Typed == nil {
				tc.who.Typed = typeKey(is.Key)
			}
			c := mcpgotest.Connect(t, s.url+"/mcp", s.admin, tc.who)
			req := mcp.CallToolRequest{}
			req.Params.Name = "delete_issue"
			req.Params.Arguments = map[string]any{"issue_id": is.ID, "confirm": true}
			res, err := c.CallTool(ctx, req)
			if err != nil {
				t.Fatalf("delete_issue: %v", err)
			}

			asked := tc.who.Asked()
			if len(asked) != 1 {
				t.Fatalf("the person was asked %d times, want 1", len(asked))
			}
			q := asked[0]
			if !strings.Contains(q.Message, is.Key) || strings.Contains(q.Message, "\x1b") {
				t.Errorf("question %q: want the issue key and no control characters", q.Message)
			}
			if q.Mode != "" && q.Mode != mcp.ElicitationModeForm {
				t.Errorf("mode %q, want form", q.Mode)
			}

			_, gerr := s.w.Store.GetIssue(ctx, gt.WS, is.ID)
			if exists := gerr == nil; exists == tc.deleted {
				t.Fatalf("issue exists %v after %s (get: %v)", exists, tc.name, gerr)
			}
			if tc.deleted && !errors.Is(gerr, store.ErrNotFound) {
				t.Fatalf("get after delete: %v", gerr)
			}
			if res.IsError != (tc.code != "") {
				t.Fatalf("isError %v: %s", res.IsError, mcpgotest.Text(res))
			}
			if tc.code != "" {
				var body struct{ Code string }
				if err := json.Unmarshal([]byte(mcpgotest.Text(res)), &body); err != nil || body.Code != tc.code {
					t.Fatalf("code %q (%v), want %s: %s", body.Code, err, tc.code, mcpgotest.Text(res))
				}
			}
		})
	}

	t.Run("no elicitation handler is flag", func(t *testing.T) {
		is, err := s.w.Store.CreateIssue(ctx, gt.WS, store.NewIssue{Title: "Flagged", Status: "open", Priority: "low", Labels: []string{}, CreatedBy: gt.Member})
		if err != nil {
			t.Fatal(err)
		}
		c := mcpgotest.Connect(t, s.url+"/mcp", s.admin, nil)
		req := mcp.CallToolRequest{}
		req.Params.Name = "delete_issue"
		req.Params.Arguments = map[string]any{"issue_id": is.ID, "confirm": true}
		res, err := c.CallTool(ctx, req)
		if err != nil || res.IsError {
			t.Fatalf("delete_issue: %v %s", err, mcpgotest.Text(res))
		}
		if _, err := s.w.Store.GetIssue(ctx, gt.WS, is.ID); err == nil || !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("issue still there: %v", err)
		}
	})
}

// TestHumanConfirmationWire drives the exchange by hand: the input_required
// shape on the wire, and which requests may be asked at all.
func TestHumanConfirmationWire(t *testing.T) {
	s := newServer(t, withConfirmation(t))
	ctx := context.Background()
	if err := s.w.Store.SetDestructiveConfirmation(ctx, gt.WS, "elicit"); err != nil {
		t.Fatal(err)
	}
	const modern = "2026-07-28"
	body := func(version, issueID, caps, extra string) string {
		m := `"_meta":{"io.modelcontextprotocol/protocolVersion":"` + version + `"`
		if caps != "" {
			m += `,"io.modelcontextprotocol/clientCapabilities":` + caps
		}
		m += `}`
		return `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"delete_issue","arguments":{"issue_id":"` +
			issueID + `","confirm":true},` + m + extra + `}}`
	}
	headers := func(version string) []string {
		return []string{"MCP-Protocol-Version: " + version, "Mcp-Method: tools/call", "Mcp-Name: delete_issue"}
	}
	fresh := func(t *testing.T) store.Issue {
		is, err := s.w.Store.CreateIssue(ctx, gt.WS, store.NewIssue{Title: "Doomed", Status: "open", Priority: "low", Labels: []string{}, CreatedBy: gt.Member})
		if err != nil {
			t.Fatal(err)
		}
		return is
	}
	gone := func(t *testing.T, is store.Issue) bool {
		_, err := s.w.Store.GetIssue(ctx, gt.WS, is.ID)
		return err != nil && errors.Is(err, store.ErrNotFound)
	}

	t.Run("input_required then accepted", func(t *testing.T) {
		is := fresh(t)
		r := s.do(t, "POST", "/mcp", s.admin, body(modern, is.ID, `{"elicitation":{"form":{}}}`, ""), headers(modern)...)
		var first struct {
			Result map[string]json.RawMessage `json:"result"`
		}
		r.json(t, &first)
		if r.status != 200 || string(first.Result["resultType"]) != `"input_required"` {
			t.Fatalf("%d %s", r.status, r.body)
		}
		if _, ok := first.Result["content"]; ok {
			t.Errorf("input_required result carries content: %s", r.body)
		}
		var ask struct {
			Method string `json:"method"`
			Params struct {
				Mode            string         `json:"mode"`
				Message         string         `json:"message"`
				RequestedSchema map[string]any `json:"requestedSchema"`
			} `json:"params"`
		}
		var reqs map[string]json.RawMessage
		if err := json.Unmarshal(first.Result["inputRequests"], &reqs); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(reqs[confirm.ElicitationID], &ask); err != nil {
			t.Fatal(err)
		}
		if ask.Method != "elicitation/create" || ask.Params.Mode != "form" || !strings.Contains(ask.Params.Message, is.Key) || ask.Params.RequestedSchema["required"] == nil {
			t.Fatalf("input request %s", reqs[confirm.ElicitationID])
		}
		var state string
		if err := json.Unmarshal(first.Result["requestState"], &state); err != nil || state == "" {
			t.Fatalf("requestState %s", first.Result["requestState"])
		}
		if gone(t, is) {
			t.Fatal("deleted before the person answered")
		}
		answer := `,"requestState":` + strconvQuote(state) + `,"inputResponses":{"` + confirm.ElicitationID +
			`":{"action":"accept","content":{"` + confirm.Field + `":"` + is.Key + `"}}}`
		r = s.do(t, "POST", "/mcp", s.admin, body(modern, is.ID, `{"elicitation":{}}`, answer), headers(modern)...)
		var second struct {
			Result struct {
				ResultType string `json:"resultType"`
				IsError    bool   `json:"isError"`
			} `json:"result"`
		}
		r.json(t, &second)
		if second.Result.ResultType != "complete" || second.Result.IsError || !gone(t, is) {
			t.Fatalf("retry: %s", r.body)
		}
		// The client retries its retry: the nonce is spent.
		r = s.do(t, "POST", "/mcp", s.admin, body(modern, is.ID, `{"elicitation":{}}`, answer), headers(modern)...)
		if !strings.Contains(string(r.body), `"isError":true`) {
			t.Fatalf("replayed retry: %s", r.body)
		}
	})

	// Each of these cannot carry an input_required result back (or says it cannot
	// show a form), so the elicit policy keeps the flag behaviour: deleted at once.
	flag := []struct {
		name, version, caps string
	}{
		{"2025-11-25 with capabilities in _meta", "2025-11-25", `{"elicitation":{}}`},
		{"2026-07-28 without elicitation", modern, `{}`},
		{"2026-07-28 url elicitation only", modern, `{"elicitation":{"url":{}}}`},
		{"2026-07-28 malformed capabilities", modern, `"form"`},
	}
	for _, tc := range flag {
		t.Run(tc.name, func(t *testing.T) {
			is := fresh(t)
			hs := headers(tc.version)
			if !strings.HasPrefix(tc.version, "2026") {
				hs = []string{"MCP-Protocol-Version: " + tc.version}
			}
			r := s.do(t, "POST", "/mcp", s.admin, body(tc.version, is.ID, tc.caps, ""), hs...)
			if r.status != 200 || strings.Contains(string(r.body), "input_required") || !gone(t, is) {
				t.Fatalf("%d %s", r.status, r.body)
			}
		})
	}

	t.Run("REST is never asked", func(t *testing.T) {
		is := fresh(t)
		r := s.do(t, "POST", "/tools/delete_issue", s.admin, `{"issue_id":"`+is.ID+`","confirm":true}`)
		if r.status != 200 || !gone(t, is) {
			t.Fatalf("%d %s", r.status, r.body)
		}
	})
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
