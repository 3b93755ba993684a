package mcpfn

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aacworkflow/aacmcp/shared/guard"
	gt "github.com/aacworkflow/aacmcp/shared/guard/guardtest"
	"github.com/aacworkflow/aacmcp/shared/mcpserver"
)

// FuzzHandleEvent feeds arbitrary API Gateway proxy events (method, paths, stage,
// body, base64 flag, a header, the authorizer context) to the whole function over a
// seeded store. Whatever arrives: Handle never returns an error (API Gateway would
// answer 502), never a 5xx, always a JSON body; a request never leaves more than
// one audit record, and a POST /tools/{name} with a principal leaves exactly one.
func FuzzHandleEvent(f *testing.F) {
	f.Add("POST", "/tools/get_issue", "/prod/tools/get_issue", "prod", `{"issue_id":"ACME-1"}`, false, "Content-Type", "application/json", "acme", "ada", "issues:read")
	f.Add("POST", "/mcp", "/prod/mcp", "prod", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_issues","arguments":{}}}`, false, "Accept", "application/json, text/event-stream", "acme", "ada", "issues:read issues:write")
	f.Add("POST", "/tools/delete_issue", "/tools/delete_issue", "", `eyJpc3N1ZV9pZCI6IkFDTUUtMSJ9`, true, "Origin", "https://evil.example", "acme", "mia", "issues:write")
	f.Add("POST", "/tools/create_issue", "/v1/tools/create_issue", "prod", `{"title":"x"}`, true, "X-Request-Id", "a\nb", "other", "olga", "")
	f.Add("GET", "/tools", "/prod/tools", "prod", "", false, "Host", "evil.example", "", "", "")
	f.Add("POST", "/tools/%2e%2e", "/prod/tools/..", "prod", "{", false, "Content-Length", "99999999", "acme", "ada", "issues:read")
	f.Add("DELETE", "/mcp", "/mcp", "", "", false, "", "", "acme", "ada", "issues:read")

	w := gt.NewWorld(f)
	sink := &gt.MemorySink{}
	g := guard.New(guard.Config{Catalog: w.Catalog, Store: w.Store, Audit: sink, Logger: discardLogger()})
	fn := New(Config{Guard: g, Catalog: w.Catalog, Server: mcpserver.Config{AllowedHosts: []string{"*"}}, Logger: discardLogger()})

	f.Fuzz(func(t *testing.T, method, path, fullPath, stage, body string, b64 bool, hname, hvalue, ws, user, scopes string) {
		ev := events.APIGatewayProxyRequest{
			HTTPMethod: method, Path: path, Body: body, IsBase64Encoded: b64,
			Headers: map[string]string{"Host": "abc.execute-api.us-east-1.amazonaws.com"},
		}
		if hname != "" {
			ev.Headers[hname] = hvalue
		}
		ev.RequestContext.RequestID = "fuzz-request"
		ev.RequestContext.Stage = stage
		ev.RequestContext.Path = fullPath
		ev.RequestContext.HTTPMethod = method
		if ws != "" || user != "" {
			ev.RequestContext.Authorizer = map[string]any{"workspace_id": ws, "user_id": user, "token_id": "tok_fuzz", "scopes": scopes,
				"expires_at": strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)}
		}
		before := len(sink.Records())
		resp, err := fn.Handle(context.Background(), ev)
		if err != nil {
			t.Fatalf("Handle returned an error: %v", err)
		}
		if resp.StatusCode >= 500 {
			t.Fatalf("status %d for %s %q: %s", resp.StatusCode, method, path, resp.Body)
		}
		if resp.Body != "" && !json.Valid([]byte(resp.Body)) {
			t.Fatalf("body is not JSON: %q", resp.Body)
		}
		n := len(sink.Records()) - before
		if n > 1 {
			t.Fatalf("%d audit records for one request", n)
		}
		tool, isTool := strings.CutPrefix(path, "/tools/")
		if method == "POST" && isTool && tool != "" && !strings.Contains(tool, "/") && ws != "" && user != "" &&
			resp.StatusCode != 413 && resp.StatusCode != 403 && resp.StatusCode != 404 && resp.StatusCode != 400 && n != 1 {
			t.Fatalf("POST %s with a principal answered %d and left %d audit records", path, resp.StatusCode, n)
		}
	})
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
