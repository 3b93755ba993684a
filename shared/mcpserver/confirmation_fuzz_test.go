package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/confirm"
	"github.com/aacworkflow/aacmcp/shared/guard"
	gt "github.com/aacworkflow/aacmcp/shared/guard/guardtest"
	"github.com/aacworkflow/aacmcp/shared/mcpserver"
)

// FuzzToolsCallConfirmation posts a 2026-07-28 delete_issue that declares form
// elicitation, under the elicit policy, with fuzzed requestState and
// inputResponses members (raw JSON). No forged state opens, so whatever they
// hold the issue is never deleted; the answer is JSON-RPC, never a 5xx.
func FuzzToolsCallConfirmation(f *testing.F) {
	f.Add([]byte(`""`), []byte(`{}`))
	f.Add([]byte(`"v1.abc.def"`), []byte(`{"confirm":{"action":"accept","content":{"confirmation":"ACME-1"}}}`))
	f.Add([]byte(`"AAAA"`), []byte(`{"confirm":{"action":"accept","content":{"confirmation":1}}}`))
	f.Add([]byte(`1`), []byte(`[]`))
	f.Add([]byte(`null`), []byte(`{"confirm":null}`))
	w := gt.NewWorld(f)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	keys, err := confirm.EphemeralKeyring()
	if err != nil {
		f.Fatal(err)
	}
	g := guard.New(guard.Config{Catalog: w.Catalog, Store: w.Store, Audit: &gt.MemorySink{}, Logger: quiet, Confirmations: w.Store, Keyring: keys})
	h := mcpserver.New(mcpserver.Config{Logger: quiet}, g, w.Catalog, mcpserver.BearerSource{Verifier: &auth.Verifier{Store: w.Store}})
	token := w.Token(f, gt.WS, gt.Admin, auth.AllScopes...)
	ctx := context.Background()
	if err := w.Store.SetDestructiveConfirmation(ctx, gt.WS, "elicit"); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, state, responses []byte) {
		body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"delete_issue","arguments":{"issue_id":"` + w.Issue.ID +
			`","confirm":true},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}},` +
			`"requestState":` + string(state) + `,"inputResponses":` + string(responses) + `}}`)
		req := httptest.NewRequest(http.MethodPost, "/mcp", bytes.NewReader(body))
		req.Host = "127.0.0.1"
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "delete_issue")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("status %d for %s: %s", rec.Code, body, rec.Body.Bytes())
		}
		var msg struct {
			JSONRPC string `json:"jsonrpc"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &msg); err != nil || msg.JSONRPC != "2.0" {
			t.Fatalf("answer is not JSON-RPC: %d %s", rec.Code, rec.Body.Bytes())
		}
		if _, err := w.Store.GetIssue(ctx, gt.WS, w.Issue.ID); err != nil {
			t.Fatalf("the issue is gone after %s: %s (%v)", body, rec.Body.Bytes(), err)
		}
	})
}
