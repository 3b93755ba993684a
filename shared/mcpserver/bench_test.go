package mcpserver_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/guard"
	gt "github.com/aacworkflow/aacmcp/shared/guard/guardtest"
	"github.com/aacworkflow/aacmcp/shared/mcpserver"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// discardSink accepts every record: the benchmark measures the pipeline, not a sink.
type discardSink struct{}

func (discardSink) Write(context.Context, audit.Record) error { return nil }

// benchHandler is the handler as `aacmcp serve` wires it (cached token verifier,
// guard, SQLite in a temp file, access log formatted as text) with a discarding
// audit sink and log output, and an admin token.
func benchHandler(b *testing.B) (*gt.World, http.Handler, string) {
	b.Helper()
	w := gt.NewWorld(b)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	g := guard.New(guard.Config{Catalog: w.Catalog, Store: w.Store, Audit: discardSink{}, Logger: log})
	v := auth.NewCachedVerifier(&auth.Verifier{Store: w.Store}, auth.MaxCacheTTL, 0)
	h := mcpserver.New(mcpserver.Config{Logger: log}, g, w.Catalog, mcpserver.BearerSource{Verifier: v})
	return w, h, w.Token(b, gt.WS, gt.Admin, auth.AllScopes...)
}

// benchToolsCall sends the same tools/call through h b.N times and fails on any
// answer that is not a successful tool result.
func benchToolsCall(b *testing.B, h http.Handler, token, tool string, args map[string]any) {
	b.Helper()
	body := []byte(rpcBody(1, "tools/call", map[string]any{"name": tool, "arguments": args}))
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

// BenchmarkToolsCallGetIssue is one tools/call get_issue through the whole handler:
// token verification, pre-dispatch, the guard (schema, member read, handler, usage
// counter) and encoding, over SQLite in a temp file.
func BenchmarkToolsCallGetIssue(b *testing.B) {
	w, h, token := benchHandler(b)
	benchToolsCall(b, h, token, "get_issue", map[string]any{"issue_id": w.Issue.Key})
}

// BenchmarkToolsCallListIssues is one tools/call list_issues answering a first page
// of 25 issues (of 60, each with labels), as bench/ measures it over the network.
func BenchmarkToolsCallListIssues(b *testing.B) {
	w, h, token := benchHandler(b)
	ctx := context.Background()
	for i := range 60 {
		_, err := w.Store.CreateIssue(ctx, gt.WS, store.NewIssue{
			Title: fmt.Sprintf("Issue %d", i), Description: "a description of the issue", Status: "open",
			Priority: "medium", Labels: []string{"backend", fmt.Sprintf("team-%d", i%4)},
			CreatedBy: gt.Member, CreatedAt: time.Now().UTC(),
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	benchToolsCall(b, h, token, "list_issues", map[string]any{"limit": 25})
}
