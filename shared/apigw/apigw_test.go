package apigw

import (
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

func TestBasePath(t *testing.T) {
	tests := []struct {
		name, full, route, stage, want string
	}{
		{"execute-api stage", "/prod/mcp", "/mcp", "prod", "/prod"},
		{"custom domain root", "/mcp", "/mcp", "prod", ""},
		{"custom domain base mapping", "/v1/tools/get_issue", "/tools/get_issue", "prod", "/v1"},
		{"escaping differs", "/prod/tools/a%20b", "/tools/a b", "prod", "/prod"},
		{"nothing known", "", "/mcp", "", ""},
	}
	for _, tt := range tests {
		ev := events.APIGatewayProxyRequest{Path: tt.route}
		ev.RequestContext.Path = tt.full
		ev.RequestContext.Stage = tt.stage
		if got := BasePath(ev); got != tt.want {
			t.Errorf("%s: BasePath = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func FuzzBasePath(f *testing.F) {
	f.Add("/prod/mcp", "/mcp", "prod")
	f.Add("/v1/tools/x", "/tools/x", "")
	f.Add("", "", "")
	f.Add("/a", "/a/b", "a")
	f.Fuzz(func(t *testing.T, full, route, stage string) {
		ev := events.APIGatewayProxyRequest{Path: route}
		ev.RequestContext.Path, ev.RequestContext.Stage = full, stage
		got := BasePath(ev)
		// The base path is always a prefix of the full path the client used.
		if got != "" && (len(got) > len(full) || full[:len(got)] != got) {
			t.Fatalf("BasePath(%q, %q, %q) = %q is not a prefix", full, route, stage, got)
		}
	})
}
