package mcpserver_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/guard"
	gt "github.com/aacworkflow/aacmcp/shared/guard/guardtest"
	"github.com/aacworkflow/aacmcp/shared/mcpserver"
)

// discardSink accepts every record: the benchmark measures the pipeline, not a sink.
type discardSink struct{}

func (discardSink) Write(context.Context, audit.Record) error { return nil }

// BenchmarkToolsCallGetIssue is one tools/call get_issue through the whole handler:
// token verification, pre-dispatch, mcp-go, the guard (schema, member read, handler,
// usage counter) and encoding, over SQLite in a temp file.
func BenchmarkToolsCallGetIssue(b *testing.B) {
	w := gt.NewWorld(b)
	g := guard.New(guard.Config{Catalog: w.Catalog, Store: w.Store, Audit: discardSink{}})
	h := mcpserver.New(mcpserver.Config{}, g, w.Catalog, mcpserver.BearerSource{Verifier: &auth.Verifier{Store: w.Store}})
	token := w.Token(b, gt.WS, gt.Admin, auth.AllScopes...)
	body := []byte(rpcBody(1, "tools/call", map[string]any{"name": "get_issue", "arguments": map[string]any{"issue_id": w.Issue.Key}}))
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/mcp", bytes.NewReader(body))
		req.Host = "127.0.0.1"
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("MCP-Protocol-Version", protocolVersion)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || bytes.Contains(rec.Body.Bytes(), []byte(`"isError":true`)) {
			b.Fatalf("status %d: %s", rec.Code, rec.Body.Bytes())
		}
	}
}
