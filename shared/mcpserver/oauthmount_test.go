package mcpserver_test

import (
	"encoding/json"
	"net/http"
	"sync"
	"testing"

	"github.com/aacworkflow/aacmcp/shared/guard"
	"github.com/aacworkflow/aacmcp/shared/mcpserver"
)

// recordingAS is an authorization server that answers with what it was given, so the
// test sees exactly which requests the HTTP surface hands it and with which issuer.
type recordingAS struct {
	mu    sync.Mutex
	calls int
}

func (a *recordingAS) ServeOAuth(w http.ResponseWriter, r *http.Request, issuer string) {
	a.mu.Lock()
	a.calls++
	a.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{"issuer": issuer, "path": r.URL.Path})
}

func TestOAuthMount(t *testing.T) {
	for _, tc := range []struct {
		name, base, path string
		status           int
		issuerPath       string // after the server's scheme://host
		asPath           string // the path the authorization server sees
	}{
		{"metadata at the root", "", "/.well-known/oauth-authorization-server", 200, "", "/.well-known/oauth-authorization-server"},
		{"openid-style at the root", "", "/.well-known/openid-configuration", 200, "", "/.well-known/openid-configuration"},
		{"an oauth route", "", "/oauth/authorize", 200, "", "/oauth/authorize"},
		{"a suffix without a base path is not ours", "", "/.well-known/oauth-authorization-server/prod", 404, "", ""},
		{"RFC 8414 path insertion of the stage", "/prod", "/.well-known/oauth-authorization-server/prod", 200, "/prod", "/.well-known/oauth-authorization-server/prod"},
		{"OpenID path insertion of the stage", "/prod", "/.well-known/openid-configuration/prod", 200, "/prod", "/.well-known/openid-configuration/prod"},
		{"OpenID-style under the stage", "/prod", "/prod/.well-known/openid-configuration", 200, "/prod", "/.well-known/openid-configuration"},
		{"an oauth route under the stage", "/prod", "/prod/oauth/token", 200, "/prod", "/oauth/token"},
		{"another stage's suffix", "/prod", "/.well-known/oauth-authorization-server/dev", 404, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			as := &recordingAS{}
			s := newServer(t, func(c *mcpserver.Config, _ *guard.Config) { c.OAuth = as; c.BasePath = tc.base })
			r := s.do(t, http.MethodGet, tc.path, "", "")
			if r.status != tc.status {
				t.Fatalf("GET %s: status %d, want %d: %s", tc.path, r.status, tc.status, r.body)
			}
			if tc.status != 200 {
				if as.calls != 0 {
					t.Fatalf("the authorization server was called for %s", tc.path)
				}
				return
			}
			var got map[string]string
			r.json(t, &got)
			if want := s.url + tc.issuerPath; got["issuer"] != want || got["path"] != tc.asPath {
				t.Fatalf("GET %s: authorization server saw issuer %q path %q, want %q %q", tc.path, got["issuer"], got["path"], want, tc.asPath)
			}
		})
	}
}

func TestResourceMetadataNamesBuiltInServer(t *testing.T) {
	s := newServer(t, func(c *mcpserver.Config, _ *guard.Config) {
		c.OAuth = &recordingAS{}
		c.AuthorizationServers = []string{"https://idp.example"}
	})
	var md mcpserver.ResourceMetadata
	s.do(t, http.MethodGet, "/.well-known/oauth-protected-resource/mcp", "", "").json(t, &md)
	if len(md.AuthorizationServers) != 2 || md.AuthorizationServers[0] != s.url || md.AuthorizationServers[1] != "https://idp.example" {
		t.Fatalf("authorization_servers = %q, want the built-in issuer %q first", md.AuthorizationServers, s.url)
	}
}
