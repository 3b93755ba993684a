package mcpfn

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aacworkflow/aacmcp/shared/guard"
	gt "github.com/aacworkflow/aacmcp/shared/guard/guardtest"
	"github.com/aacworkflow/aacmcp/shared/mcpserver"
)

// TestToolCallSourceBehindCloudFront: a tool call's audit record names the viewer
// CloudFront reports, and only when the function is told to trust it; otherwise API
// Gateway's source IP, which behind the front door is an edge server.
func TestToolCallSourceBehindCloudFront(t *testing.T) {
	const edge = "130.176.0.12"
	for _, tt := range []struct {
		name  string
		trust bool
		want  string
	}{
		{"trusted", true, "198.51.100.23"},
		{"not trusted", false, edge},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := gt.NewWorld(t)
			sink := &gt.MemorySink{}
			g := guard.New(guard.Config{Catalog: w.Catalog, Store: w.Store, Audit: sink, Logger: discardLogger()})
			fn := New(Config{Guard: g, Catalog: w.Catalog, Server: mcpserver.Config{AllowedHosts: []string{"*"}},
				Logger: discardLogger(), TrustViewerAddress: tt.trust})
			ev := events.APIGatewayProxyRequest{
				HTTPMethod: "POST", Path: "/tools/list_issues", Resource: "/tools/{name}", Body: `{}`,
				MultiValueHeaders: map[string][]string{
					"Host":                      {"abc.execute-api.eu-west-1.amazonaws.com"},
					"Content-Type":              {"application/json"},
					"CloudFront-Viewer-Address": {"198.51.100.23:51734"},
				},
			}
			ev.RequestContext.RequestID = "req-viewer"
			ev.RequestContext.Stage = "prod"
			ev.RequestContext.Path = "/prod/tools/list_issues"
			ev.RequestContext.HTTPMethod = "POST"
			ev.RequestContext.Identity.SourceIP = edge
			ev.RequestContext.Authorizer = map[string]any{"workspace_id": "acme", "user_id": "ada", "token_id": "tok_1",
				"scopes": "issues:read", "expires_at": strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)}
			resp, err := fn.Handle(context.Background(), ev)
			if err != nil {
				t.Fatal(err)
			}
			recs := sink.Records()
			if len(recs) != 1 || recs[0].SourceIP != tt.want {
				t.Fatalf("answer %d %s; audit records %+v, want one from %s", resp.StatusCode, resp.Body, recs, tt.want)
			}
		})
	}
}
