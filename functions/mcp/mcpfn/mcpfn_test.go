package mcpfn

import (
	"context"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/awslabs/aws-lambda-go-api-proxy/core"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/auth"
)

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
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	inHour := strconv.FormatInt(now.Add(time.Hour).Unix(), 10)
	ctx := func(edit func(map[string]any)) map[string]any {
		m := map[string]any{"workspace_id": "ws1", "user_id": "u1", "token_id": "tok_1", "scopes": "issues:write issues:read",
			"client_id": "", "expires_at": inHour, "principalId": "u1"}
		edit(m)
		return m
	}
	personal := auth.Principal{WorkspaceID: "ws1", UserID: "u1", TokenID: "tok_1", Scopes: []string{"issues:read", "issues:write"},
		ExpiresAt: now.Add(time.Hour)}
	tests := []struct {
		name       string
		authz      map[string]any
		want       auth.Principal
		wantReason auth.Reason // "" = accepted
	}{
		{"complete", ctx(func(map[string]any) {}), personal, ""},
		{"OAuth access token", ctx(func(m map[string]any) { m["client_id"] = "https://claude.ai/oauth/mcp-oauth-client-metadata" }),
			auth.Principal{WorkspaceID: "ws1", UserID: "u1", TokenID: "tok_1", Scopes: []string{"issues:read", "issues:write"},
				ClientID: "https://claude.ai/oauth/mcp-oauth-client-metadata", ExpiresAt: now.Add(time.Hour)}, ""},
		{"no client id is a personal token", ctx(func(m map[string]any) { delete(m, "client_id") }), personal, ""},
		{"no scopes is no scopes", ctx(func(m map[string]any) { delete(m, "scopes") }),
			auth.Principal{WorkspaceID: "ws1", UserID: "u1", TokenID: "tok_1", Scopes: []string{}, ExpiresAt: now.Add(time.Hour)}, ""},
		{"expires in a second", ctx(func(m map[string]any) { m["expires_at"] = strconv.FormatInt(now.Unix()+1, 10) }),
			auth.Principal{WorkspaceID: "ws1", UserID: "u1", TokenID: "tok_1", Scopes: []string{"issues:read", "issues:write"},
				ExpiresAt: now.Add(time.Second)}, ""},
		// API Gateway's cached answer outlives the token: refused from its expiry on.
		{"expires now", ctx(func(m map[string]any) { m["expires_at"] = strconv.FormatInt(now.Unix(), 10) }), auth.Principal{}, auth.ReasonExpired},
		{"expired", ctx(func(m map[string]any) { m["expires_at"] = strconv.FormatInt(now.Add(-time.Minute).Unix(), 10) }), auth.Principal{}, auth.ReasonExpired},
		{"no expiry", ctx(func(m map[string]any) { delete(m, "expires_at") }), auth.Principal{}, auth.ReasonMissing},
		{"unreadable expiry", ctx(func(m map[string]any) { m["expires_at"] = "2026-03-01T13:00:00Z" }), auth.Principal{}, auth.ReasonMissing},
		{"numeric expiry", ctx(func(m map[string]any) { m["expires_at"] = now.Add(time.Hour).Unix() }), auth.Principal{}, auth.ReasonMissing},
		{"no authorizer", nil, auth.Principal{}, auth.ReasonMissing},
		{"missing workspace", ctx(func(m map[string]any) { delete(m, "workspace_id") }), auth.Principal{}, auth.ReasonMissing},
		{"non-string values", ctx(func(m map[string]any) { m["workspace_id"] = 1 }), auth.Principal{}, auth.ReasonMissing},
	}
	src := AuthorizerContext{Now: func() time.Time { return now }}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := src.Principal(requestWith(t, tt.authz))
			if tt.wantReason != "" {
				if !apperr.Is(err, apperr.InvalidToken) || auth.RejectReason(err) != tt.wantReason {
					t.Fatalf("err = %v (reason %q), want invalid_token (%s)", err, auth.RejectReason(err), tt.wantReason)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Scopes) == 0 && len(tt.want.Scopes) == 0 {
				p.Scopes = tt.want.Scopes
			}
			if !reflect.DeepEqual(p, tt.want) {
				t.Errorf("principal = %+v, want %+v", p, tt.want)
			}
		})
	}
	// Outside the adapter there is no API Gateway context at all.
	r, _ := http.NewRequest("POST", "http://x/mcp", nil)
	if _, err := src.Principal(r); !apperr.Is(err, apperr.InvalidToken) {
		t.Errorf("plain request: err = %v", err)
	}
}

// FuzzAuthorizerContext: whatever the authorizer context holds, a principal comes out
// only with every id set and an expiry after now, and everything else is invalid_token.
func FuzzAuthorizerContext(f *testing.F) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	f.Add("ws1", "u1", "tok_1", "issues:read", "", strconv.FormatInt(now.Unix()+3600, 10))
	f.Add("ws1", "u1", "tok_1", "issues:read", "https://c.example/m.json", strconv.FormatInt(now.Unix(), 10))
	f.Add("ws1", "u1", "tok_1", "", "", " 1772373600 ")
	f.Add("", "u1", "tok_1", "", "", "-1")
	f.Add("ws1", "u1", "tok_1", "", "", "9223372036854775807")
	src := AuthorizerContext{Now: func() time.Time { return now }}
	f.Fuzz(func(t *testing.T, ws, user, tok, scopes, client, expires string) {
		authz := map[string]any{"workspace_id": ws, "user_id": user, "token_id": tok, "scopes": scopes,
			"client_id": client, "expires_at": expires}
		p, err := src.Principal(requestWith(t, authz))
		if err != nil {
			if !apperr.Is(err, apperr.InvalidToken) {
				t.Fatalf("err = %v, want invalid_token", err)
			}
			return
		}
		sec, perr := strconv.ParseInt(strings.TrimSpace(expires), 10, 64)
		if p.WorkspaceID == "" || p.UserID == "" || p.TokenID == "" || perr != nil || !now.Before(p.ExpiresAt) ||
			p.ExpiresAt.Unix() != sec || p.ClientID != strings.TrimSpace(client) {
			t.Fatalf("accepted %+v from %v", p, authz)
		}
	})
}
