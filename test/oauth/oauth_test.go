// Package oauth_test drives aacmcp's OAuth 2.1 authorization server end to end with
// real clients: the official TypeScript SDK v2 client with its OAuth provider and
// Debian's chromium (driven by playwright-core) on the dev sign-in and consent
// pages, over both client registration paths (a client id metadata document served
// over HTTPS by a CA made in the test, and dynamic registration); mcp-go's client
// OAuth support; and a real OpenID Connect provider as the upstream sign-in.
package oauth_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/catalog"
	"github.com/aacworkflow/aacmcp/shared/store"
	"github.com/aacworkflow/aacmcp/test/oauth/flow"
)

func TestMain(m *testing.M) { flow.Main(m) }

// catalogJSON is the catalog as the Node.js scripts expect it in AACMCP_TOOLS.
func catalogJSON(t *testing.T) string {
	t.Helper()
	type tool struct {
		Name   string   `json:"name"`
		Scopes []string `json:"scopes"`
	}
	var out []tool
	for _, c := range catalog.New(catalog.Deps{}).Tools() {
		out = append(out, tool{c.Name, c.Scopes})
	}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func scopesJSON(t *testing.T) string {
	t.Helper()
	b, err := json.Marshal(auth.AllScopes)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var nodeSummary = regexp.MustCompile(`(?m)^(\d+) passed, (\d+) failed$`)

// tsRun is one run of tssdk.mjs.
type tsRun struct {
	srv   *flow.Server
	cimd  string // the client id metadata document URL; "" for DCR
	steps []string
	// answer is AACMCP_ANSWER: how the person signs in.
	answer string
	rd     *flow.Redirect
}

// tsResult is what tssdk.mjs writes to AACMCP_RESULT_FILE.
type tsResult struct {
	// RefreshedAccess is an access token the server verified (and so may hold in
	// its verifier cache) before its grant was revoked.
	RefreshedAccess string `json:"refreshed_access"`
	// LiveAccess is an access token of a grant still in force.
	LiveAccess string `json:"live_access"`
	// ClientID is the client id the SDK used (registered, or the document URL).
	ClientID string `json:"client_id"`
}

// run runs the script and requires every one of its tests to pass.
func (r tsRun) run(t *testing.T) tsResult {
	t.Helper()
	resultFile := filepath.Join(t.TempDir(), "result.json")
	env := []string{
		"AACMCP_URL=" + r.srv.MCPURL,
		"AACMCP_CLIENT_METADATA_URL=" + r.cimd,
		"AACMCP_ANSWER=" + r.answer,
		"AACMCP_STEPS=" + strings.Join(r.steps, ","),
		"AACMCP_TOOLS=" + catalogJSON(t),
		"AACMCP_SCOPES=" + scopesJSON(t),
		"AACMCP_RESULT_FILE=" + resultFile,
	}
	out, err := flow.NodeScript(t, "tssdk.mjs", env, r.rd, 2*time.Minute)
	m := nodeSummary.FindSubmatch(out)
	if err != nil || m == nil || string(m[2]) != "0" {
		t.Fatalf("node tssdk.mjs: %v\n%s\nserver log:\n%s", err, out, r.srv.Logs())
	}
	if string(m[1]) != strconv.Itoa(len(r.steps)) {
		t.Fatalf("tssdk.mjs ran %s tests, want %d:\n%s", m[1], len(r.steps), out)
	}
	t.Logf("tssdk.mjs:\n%s", out)
	var res tsResult
	b, err := os.ReadFile(resultFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatalf("result %s: %v", b, err)
	}
	return res
}

const devAnswer = `{"user":"` + flow.DevUser + `"}`

// TestTypeScriptSDK runs the TypeScript SDK client through the whole flow on both
// registration paths against one `aacmcp serve --dev`, then restarts the server
// (empty caches) and checks that the revoked grant's access token, which the first
// process had verified, is refused while the other grant's token still works.
func TestTypeScriptSDK(t *testing.T) {
	ca := flow.NewCA(t)
	docs := flow.StartCIMD(t, ca)
	srv := flow.Serve(t, flow.ServeOptions{
		Dev: true,
		// The server fetches metadata documents with the system pool, which
		// SSL_CERT_FILE replaces: it trusts the test's CA and nothing else.
		Env: []string{"SSL_CERT_FILE=" + ca.WriteBundle(t)},
	})

	var revoked, live, cimdClient, dcrClient string
	t.Run("cimd", func(t *testing.T) {
		rd := flow.NewRedirect(t)
		clientID := docs.Publish(t, "tssdk", flow.ClientDocument{
			ClientName:              "aacmcp e2e (CIMD)",
			RedirectURIs:            []string{rd.URL},
			GrantTypes:              []string{"authorization_code", "refresh_token"},
			ResponseTypes:           []string{"code"},
			TokenEndpointAuthMethod: "none",
		})
		res := tsRun{srv: srv, cimd: clientID, rd: rd, answer: devAnswer,
			steps: []string{"authorize", "stepup", "refresh", "revoke"}}.run(t)
		if docs.Fetches(clientID) == 0 {
			t.Errorf("the server never fetched the client metadata document %s", clientID)
		}
		revoked, cimdClient = res.RefreshedAccess, clientID
	})
	t.Run("dcr", func(t *testing.T) {
		res := tsRun{srv: srv, rd: flow.NewRedirect(t), answer: devAnswer,
			steps: []string{"authorize", "stepup", "refresh"}}.run(t)
		live, dcrClient = res.LiveAccess, res.ClientID
	})
	if t.Failed() {
		return
	}
	if revoked == "" || live == "" {
		t.Fatalf("the script reported no tokens to check after the restart (revoked %q, live %q)", revoked, live)
	}
	t.Run("restart", func(t *testing.T) {
		// The revocation went through this server's own authorization server,
		// which drops the grant's tokens from the verifier cache: the token the
		// server verified before is refused at once, not within auth.MaxCacheTTL.
		if got := mcpStatus(t, srv.MCPURL, revoked); got != http.StatusUnauthorized {
			t.Errorf("before the restart: tools/list with the revoked grant's verified token: HTTP %d, want 401 at once", got)
		}
		// A fresh process has only the store to go by.
		srv.Restart(t)
		if got := mcpStatus(t, srv.MCPURL, live); got != http.StatusOK {
			t.Errorf("tools/list with the access token of the grant in force: HTTP %d, want 200\n%s", got, srv.Logs())
		}
		if got := mcpStatus(t, srv.MCPURL, revoked); got != http.StatusUnauthorized {
			t.Errorf("tools/list with an access token of the revoked grant: HTTP %d, want 401", got)
		}
	})
	t.Run("admin revocation", func(t *testing.T) {
		grants := listGrants(t, srv)
		cimdGrant, ok := grants[cimdClient]
		if !ok || cimdGrant.RevokedAt == nil {
			t.Errorf("oauth grants list: the CIMD client's grant %+v, want it revoked", cimdGrant)
		}
		g, ok := grants[dcrClient]
		if !ok || g.RevokedAt != nil || g.WorkspaceID != flow.DevWorkspace || g.UserID != flow.DevUser ||
			!slices.Equal(slices.Sorted(slices.Values(g.Scopes)), []string{"issues:read", "issues:write"}) {
			t.Fatalf("oauth grants list: the DCR client's grant %+v, want it in force for %s in %s with issues:read and issues:write", g, flow.DevUser, flow.DevWorkspace)
		}
		var out store.OAuthGrant
		if err := json.Unmarshal(srv.CLI(t, "oauth", "grants", "revoke", g.ID, "--json"), &out); err != nil || out.ID != g.ID || out.RevokedAt == nil {
			t.Fatalf("oauth grants revoke %s: %+v (%v)", g.ID, out, err)
		}
		if after := listGrants(t, srv)[dcrClient]; after.RevokedAt == nil {
			t.Errorf("after oauth grants revoke the grant is %+v", after)
		}
		// The token was verified a moment ago, so this process may answer from its
		// cache for a while; the next one may not.
		srv.Restart(t)
		if got := mcpStatus(t, srv.MCPURL, live); got != http.StatusUnauthorized {
			t.Errorf("tools/list with an access token of the grant an admin revoked: HTTP %d, want 401", got)
		}
	})
}

// listGrants is `aacmcp oauth grants list --json`: each client's newest grant, by
// client id. (A step-up makes a new grant for the union of the scopes and leaves
// the older one alone, shared/oauth's package doc says why.)
func listGrants(t *testing.T, srv *flow.Server) map[string]store.OAuthGrant {
	t.Helper()
	var gs []store.OAuthGrant
	if err := json.Unmarshal(srv.CLI(t, "oauth", "grants", "list", "--workspace", flow.DevWorkspace, "--json"), &gs); err != nil {
		t.Fatal(err)
	}
	out := map[string]store.OAuthGrant{}
	for _, g := range gs { // newest first
		if _, seen := out[g.ClientID]; !seen {
			out[g.ClientID] = g
		}
	}
	return out
}

// mcpStatus is the HTTP status of a tools/list with token.
func mcpStatus(t *testing.T, mcpURL, token string) int {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, mcpURL, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}
