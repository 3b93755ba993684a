package mcpserver_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/aacworkflow/aacmcp/shared/approval"
	"github.com/aacworkflow/aacmcp/shared/confirm"
	"github.com/aacworkflow/aacmcp/shared/guard"
	gt "github.com/aacworkflow/aacmcp/shared/guard/guardtest"
	"github.com/aacworkflow/aacmcp/shared/mcpserver"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// TestHumanApprovalWire pins the policy approve's answers on the wire: a
// 2026-07-28 call whose client declares URL elicitation gets input_required with
// one URL elicitation (mode, url of this server's origin, elicitationId, the
// message naming the link) and the link's token as requestState; every other
// client, a form-only one and REST included, gets human_approval_required with
// the link in its text.
func TestHumanApprovalWire(t *testing.T) {
	keys, err := confirm.EphemeralKeyring()
	if err != nil {
		t.Fatal(err)
	}
	s := newServer(t, func(_ *mcpserver.Config, g *guard.Config) {
		g.Keyring, g.Confirmations, g.Approvals = keys, g.Store.(store.Confirmations), g.Store.(store.Approvals)
	})
	ctx := context.Background()
	if err := s.w.Store.SetDestructiveConfirmation(ctx, gt.WS, "approve"); err != nil {
		t.Fatal(err)
	}
	const modern = "2026-07-28"
	body := func(issueID, caps string) string {
		return `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"delete_issue","arguments":{"issue_id":"` + issueID +
			`","confirm":true},"_meta":{"io.modelcontextprotocol/protocolVersion":"` + modern +
			`","io.modelcontextprotocol/clientCapabilities":` + caps + `}}}`
	}
	headers := []string{"MCP-Protocol-Version: " + modern, "Mcp-Method: tools/call", "Mcp-Name: delete_issue"}
	fresh := func(t *testing.T) store.Issue {
		is, err := s.w.Store.CreateIssue(ctx, gt.WS, store.NewIssue{Title: "Doomed", Status: "open", Priority: "low", Labels: []string{}, CreatedBy: gt.Member})
		if err != nil {
			t.Fatal(err)
		}
		return is
	}
	page := s.url + approval.PagePath + "?" + approval.TokenParam + "="

	t.Run("URL elicitation", func(t *testing.T) {
		is := fresh(t)
		r := s.do(t, "POST", "/mcp", s.admin, body(is.ID, `{"elicitation":{"url":{}}}`), headers...)
		var res struct {
			Result struct {
				ResultType    string                     `json:"resultType"`
				RequestState  string                     `json:"requestState"`
				InputRequests map[string]json.RawMessage `json:"inputRequests"`
				Content       json.RawMessage            `json:"content"`
			} `json:"result"`
		}
		r.json(t, &res)
		if r.status != 200 || res.Result.ResultType != "input_required" || res.Result.Content != nil || len(res.Result.InputRequests) != 1 {
			t.Fatalf("%d %s", r.status, r.body)
		}
		var ask struct {
			Method string `json:"method"`
			Params struct {
				Mode, Message, URL, ElicitationID string
				RequestedSchema                   json.RawMessage
			} `json:"params"`
		}
		if err := json.Unmarshal(res.Result.InputRequests[confirm.ElicitationID], &ask); err != nil {
			t.Fatal(err)
		}
		p := ask.Params
		if ask.Method != "elicitation/create" || p.Mode != "url" || p.URL != page+res.Result.RequestState || p.ElicitationID == "" ||
			p.RequestedSchema != nil || !strings.Contains(p.Message, p.URL) || !strings.Contains(p.Message, is.Key) {
			t.Fatalf("input request %s", res.Result.InputRequests[confirm.ElicitationID])
		}
	})

	for name, caps := range map[string]string{"no elicitation": `{}`, "form only": `{"elicitation":{"form":{}}}`} {
		t.Run(name, func(t *testing.T) {
			is := fresh(t)
			r := s.do(t, "POST", "/mcp", s.admin, body(is.ID, caps), headers...)
			if r.status != 200 || !strings.Contains(string(r.body), `\"code\":\"human_approval_required\"`) || !strings.Contains(string(r.body), page) {
				t.Fatalf("%d %s", r.status, r.body)
			}
		})
	}

	t.Run("REST", func(t *testing.T) {
		is := fresh(t)
		r := s.do(t, "POST", "/tools/delete_issue", s.admin, `{"issue_id":"`+is.ID+`","confirm":true}`)
		var e struct{ Code, Error string }
		r.json(t, &e)
		if r.status != 403 || e.Code != "human_approval_required" || !strings.Contains(e.Error, page) {
			t.Fatalf("%d %s", r.status, r.body)
		}
	})
}
