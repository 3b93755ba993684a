package mcpserver_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/guard"
	gt "github.com/aacworkflow/aacmcp/shared/guard/guardtest"
	"github.com/aacworkflow/aacmcp/shared/internal/jsondup"
	"github.com/aacworkflow/aacmcp/shared/mcpserver"
)

// FuzzToolsCall builds tools/call messages from fuzzed parts (tool name, raw
// arguments, raw id, protocol version header) and posts them to /mcp with a valid
// token. Whatever the parts: never a 5xx, always a JSON-RPC answer without Go text,
// and exactly one audit record when the body is a JSON object naming tools/call
// (none when it is not JSON at all). An error result carries a documented code.
func FuzzToolsCall(f *testing.F) {
	f.Add("list_issues", []byte(`{"limit":2}`), []byte(`1`), "2025-11-25")
	f.Add("create_issue", []byte(`{"title":"x","idempotency_key":"k"}`), []byte(`"a"`), "2025-06-18")
	f.Add("delete_issue", []byte(`{"issue_id":"ACME-1","confirm":"true"}`), []byte(`null`), "")
	f.Add("list_issues", []byte(`{"limit":1e400}`), []byte(`2`), "2025-11-25")
	f.Add("get_issue", []byte(`[]`), []byte(`{}`), "1999-01-01")
	f.Add("nope", []byte(`null`), []byte(`-1.5e3`), "2026-07-28")
	f.Add("delete_issue", []byte(`{"issue_id":"ACME-1","confirm":false,"confirm":true}`), []byte(`3`), "2025-11-25")
	f.Add("", []byte(`{"a":`+strings.Repeat("[", 40)+strings.Repeat("]", 40)+`}`), []byte(`true`), "2025-03-26")
	f.Add("create_issue", []byte(`{"title":"x"}`), []byte(`{"a":1}`), "2025-11-25")
	f.Add("create_issue", []byte(`{"title":"x"}`), []byte(`[1]`), "2025-11-25")
	f.Add("create_issue", []byte(`{"title":"x"}`), []byte(`false`), "")
	f.Add("delete_issue", []byte(`{"issue_id":"ACME-1","confirm":false,"CONFIRM":true}`), []byte(`4`), "2025-11-25")
	w := gt.NewWorld(f)
	sink := &gt.MemorySink{}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	g := guard.New(guard.Config{Catalog: w.Catalog, Store: w.Store, Audit: sink, Logger: quiet})
	h := mcpserver.New(mcpserver.Config{Logger: quiet}, g, w.Catalog, mcpserver.BearerSource{Verifier: &auth.Verifier{Store: w.Store}})
	token := w.Token(f, gt.WS, gt.Admin, auth.AllScopes...)
	f.Fuzz(func(t *testing.T, tool string, args, id []byte, version string) {
		name, _ := json.Marshal(tool)
		body := []byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"method":"tools/call","params":{"name":` + string(name) + `,"arguments":` + string(args) + `}}`)
		req := httptest.NewRequest(http.MethodPost, "/mcp", bytes.NewReader(body))
		req.Host = "127.0.0.1"
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if version != "" && !strings.ContainsAny(version, "\r\n\x00") {
			req.Header.Set("MCP-Protocol-Version", version)
		}
		before := len(sink.Records())
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("status %d for %s: %s", rec.Code, body, rec.Body.Bytes())
		}
		out := rec.Body.Bytes()
		for _, s := range []string{"Go struct", "json: cannot", "&{"} {
			if bytes.Contains(out, []byte(s)) {
				t.Fatalf("answer leaks decoder text %q: %s", s, out)
			}
		}
		var msg struct {
			JSONRPC string `json:"jsonrpc"`
			Result  *struct {
				IsError bool `json:"isError"`
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"result"`
			Error *json.RawMessage `json:"error"`
		}
		n := len(sink.Records()) - before
		if _, dup := jsondup.Find(body); dup {
			// A repeated member name anywhere: refused, never run.
			for _, r := range sink.Records()[before:] {
				if r.Outcome == "success" {
					t.Fatalf("a message repeating a member name ran %s: %s", r.Tool, body)
				}
			}
		}
		if t0 := bytes.TrimLeft(id, " \t\r\n"); json.Valid(body) && len(t0) > 0 && strings.IndexByte("{[tf", t0[0]) >= 0 {
			// An id that is an object, an array or a boolean: -32600, never run.
			for _, r := range sink.Records()[before:] {
				if r.Outcome == "success" {
					t.Fatalf("a message with id %s ran %s", id, r.Tool)
				}
			}
			if !bytes.Contains(out, []byte(`"code":-32600`)) {
				t.Fatalf("id %s answered %d %s, want -32600", id, rec.Code, out)
			}
		}
		if rec.Code == http.StatusAccepted && len(out) == 0 {
			// A message without a usable id is a notification: nothing to answer,
			// but a tools/call all the same, audited once.
			if n != 1 {
				t.Fatalf("%d audit records for notification %s", n, body)
			}
			return
		}
		if err := json.Unmarshal(out, &msg); err != nil || msg.JSONRPC != "2.0" {
			t.Fatalf("answer is not JSON-RPC: %d %s", rec.Code, out)
		}
		if json.Valid(body) {
			if n != 1 {
				t.Fatalf("%d audit records for tools/call %s", n, body)
			}
		} else if n != 0 {
			t.Fatalf("%d audit records for a body that is not JSON: %s", n, body)
		}
		if msg.Result != nil && msg.Result.IsError {
			var e struct {
				Code string `json:"code"`
			}
			if len(msg.Result.Content) != 1 || json.Unmarshal([]byte(msg.Result.Content[0].Text), &e) != nil ||
				!slices.Contains(apperr.Codes, apperr.Code(e.Code)) {
				t.Fatalf("error result without a documented code: %s", out)
			}
		}
	})
}
