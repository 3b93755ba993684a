package mcpfn

import (
	"context"
	"net/http"
	"slices"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/awslabs/aws-lambda-go-api-proxy/core"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/auth"
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

func TestWithHeaderReplacesAnyCase(t *testing.T) {
	ev := events.APIGatewayProxyRequest{
		Headers:           map[string]string{"x-request-id": "client", "Accept": "a"},
		MultiValueHeaders: map[string][]string{"X-REQUEST-ID": {"client"}, "Accept": {"a"}},
	}
	ev = withHeader(ev, "X-Request-Id", "gw")
	if len(ev.Headers) != 2 || ev.Headers["X-Request-Id"] != "gw" || ev.Headers["Accept"] != "a" {
		t.Errorf("headers %v", ev.Headers)
	}
	if len(ev.MultiValueHeaders) != 2 || !slices.Equal(ev.MultiValueHeaders["X-Request-Id"], []string{"gw"}) {
		t.Errorf("multi-value headers %v", ev.MultiValueHeaders)
	}
	// A nil multi-value map stays nil: the adapter would then read the single map.
	ev2 := withHeader(events.APIGatewayProxyRequest{}, "X-Request-Id", "gw")
	if ev2.MultiValueHeaders != nil || ev2.Headers["X-Request-Id"] != "gw" {
		t.Errorf("event %+v", ev2)
	}
}

// requestWith builds the http.Request the adapter builds, carrying authz as the
// authorizer context.
func requestWith(t *testing.T, authz map[string]any) *http.Request {
	t.Helper()
	ev := events.APIGatewayProxyRequest{HTTPMethod: "POST", Path: "/mcp"}
	ev.RequestContext.DomainName = "api.example"
	ev.RequestContext.Authorizer = authz
	var acc core.RequestAccessor
	r, err := acc.EventToRequestWithContext(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestAuthorizerContext(t *testing.T) {
	full := map[string]any{"workspace_id": "ws1", "user_id": "u1", "token_id": "tok_1", "scopes": "issues:write issues:read", "principalId": "u1"}
	tests := []struct {
		name    string
		authz   map[string]any
		want    auth.Principal
		wantErr bool
	}{
		{"complete", full, auth.Principal{WorkspaceID: "ws1", UserID: "u1", TokenID: "tok_1", Scopes: []string{"issues:read", "issues:write"}}, false},
		{"no scopes is no scopes", map[string]any{"workspace_id": "ws1", "user_id": "u1", "token_id": "tok_1"}, auth.Principal{WorkspaceID: "ws1", UserID: "u1", TokenID: "tok_1", Scopes: []string{}}, false},
		{"oauth client", map[string]any{"workspace_id": "ws1", "user_id": "u1", "token_id": "tok_1", "scopes": "issues:read", "client_id": "https://claude.ai/oauth/mcp-oauth-client-metadata"},
			auth.Principal{WorkspaceID: "ws1", UserID: "u1", TokenID: "tok_1", Scopes: []string{"issues:read"}, ClientID: "https://claude.ai/oauth/mcp-oauth-client-metadata"}, false},
		{"personal token", map[string]any{"workspace_id": "ws1", "user_id": "u1", "token_id": "tok_1", "scopes": "issues:read", "client_id": ""},
			auth.Principal{WorkspaceID: "ws1", UserID: "u1", TokenID: "tok_1", Scopes: []string{"issues:read"}}, false},
		{"non-string client id is none", map[string]any{"workspace_id": "ws1", "user_id": "u1", "token_id": "tok_1", "client_id": 7},
			auth.Principal{WorkspaceID: "ws1", UserID: "u1", TokenID: "tok_1", Scopes: []string{}}, false},
		{"no authorizer", nil, auth.Principal{}, true},
		{"missing workspace", map[string]any{"user_id": "u1", "token_id": "tok_1", "scopes": "issues:read"}, auth.Principal{}, true},
		{"non-string values", map[string]any{"workspace_id": 1, "user_id": "u1", "token_id": "tok_1"}, auth.Principal{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := AuthorizerContext{}.Principal(requestWith(t, tt.authz))
			if tt.wantErr {
				if !apperr.Is(err, apperr.InvalidToken) {
					t.Fatalf("err = %v, want invalid_token", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.WorkspaceID != tt.want.WorkspaceID || p.UserID != tt.want.UserID || p.TokenID != tt.want.TokenID || p.ClientID != tt.want.ClientID ||
				!slices.Equal(p.Scopes, tt.want.Scopes) && !(len(p.Scopes) == 0 && len(tt.want.Scopes) == 0) {
				t.Errorf("principal = %+v, want %+v", p, tt.want)
			}
		})
	}
	// Outside the adapter there is no API Gateway context at all.
	r, _ := http.NewRequest("POST", "http://x/mcp", nil)
	if _, err := (AuthorizerContext{}).Principal(r); !apperr.Is(err, apperr.InvalidToken) {
		t.Errorf("plain request: err = %v", err)
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
