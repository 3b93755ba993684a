package e2e

import (
	"encoding/json"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/catalog"
	"github.com/aacworkflow/aacmcp/test/emulator"
	"github.com/aacworkflow/aacmcp/test/harness"
	"github.com/aacworkflow/aacmcp/test/oauth/flow"
	"github.com/aacworkflow/aacmcp/test/oidcop"
)

var nodeSummary = regexp.MustCompile(`(?m)^(\d+) passed, (\d+) failed$`)

// TestTypeScriptSDKOAuthThroughGateway: the TypeScript SDK v2 client with its
// OAuth machinery and a real browser (test/oauth/tssdk.mjs) through `aacmcp
// gateway --dev --front-door`, where the authorizer, MCP and authorization server
// functions run in process against dynalite: discovery, CIMD client, dev sign-in,
// consent, token, tool call, 403 step-up to a wider grant, refresh. Served at the
// root, as on a custom domain (on the stage URL discovery stops:
// TestDiscoveryThroughStagedGateway).
func TestTypeScriptSDKOAuthThroughGateway(t *testing.T) {
	bin := harness.Binary(t)
	ddb := emulator.StartT(t, emulator.Dynalite)
	awsEnv := harness.AWSEnv()
	backend := []string{"--backend", "dynamodb", "--table", "main", "--tokens-table", "tokens", "--endpoint-url", ddb.Endpoint}
	data := t.TempDir()
	cli := cliRunner(t, bin, awsEnv, append(backend, "--data", data)...)
	cli("init")
	cli("workspace", "create", "--id", "demo", "--key", "AAC")
	cli("member", "add", "--workspace", "demo", "--user", flow.DevUser, "--role", "admin")

	ca := flow.NewCA(t)
	docs := flow.StartCIMD(t, ca)
	// The authorization server fetches metadata documents with the system pool,
	// which SSL_CERT_FILE replaces: it trusts the test's CA only.
	mcpURL := startGateway(t, bin, append(awsEnv, "SSL_CERT_FILE="+ca.WriteBundle(t)),
		append(backend, "--data", data, "--dev", "--front-door")...)

	rd := flow.NewRedirect(t)
	clientID := docs.Publish(t, "tssdk-gateway", flow.ClientDocument{
		ClientName:              "aacmcp e2e through the gateway",
		RedirectURIs:            []string{rd.URL},
		GrantTypes:              []string{"authorization_code", "refresh_token"},
		ResponseTypes:           []string{"code"},
		TokenEndpointAuthMethod: "none",
	})
	steps := []string{"authorize", "stepup", "refresh"}
	out, err := flow.NodeScript(t, "tssdk.mjs", []string{
		"AACMCP_URL=" + mcpURL,
		"AACMCP_CLIENT_METADATA_URL=" + clientID,
		`AACMCP_ANSWER={"user":"` + flow.DevUser + `"}`,
		"AACMCP_STEPS=" + strings.Join(steps, ","),
		"AACMCP_TOOLS=" + toolsJSON(t),
		"AACMCP_SCOPES=" + mustJSON(t, auth.AllScopes),
		"AACMCP_RESULT_FILE=" + t.TempDir() + "/result.json",
	}, rd, 2*time.Minute)
	m := nodeSummary.FindSubmatch(out)
	if err != nil || m == nil || string(m[2]) != "0" || string(m[1]) != strconv.Itoa(len(steps)) {
		t.Fatalf("node tssdk.mjs through the gateway: %v\n%s", err, out)
	}
	if docs.Fetches(clientID) == 0 {
		t.Errorf("the authorization server never fetched the client metadata document %s", clientID)
	}
	t.Logf("tssdk.mjs:\n%s", out)
}

// toolsJSON is the catalog's tools and scopes, as tssdk.mjs reads them.
func toolsJSON(t *testing.T) string {
	type tool struct {
		Name   string   `json:"name"`
		Scopes []string `json:"scopes"`
	}
	var tools []tool
	for _, c := range catalog.New(catalog.Deps{}).Tools() {
		tools = append(tools, tool{c.Name, c.Scopes})
	}
	return mustJSON(t, tools)
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestUpstreamSignInThroughGateway: `aacmcp gateway --oidc-issuer ...` (the
// authorization server function with a real OpenID provider, test/oidcop) and the
// TypeScript SDK v2 client registering dynamically: the person signs in on the
// provider's login page in chromium, is mapped to a member by verified e-mail,
// consents, and the client calls a tool and refreshes once its 3 s token expired.
func TestUpstreamSignInThroughGateway(t *testing.T) {
	bin := harness.Binary(t)
	ddb := emulator.StartT(t, emulator.Dynalite)
	awsEnv := harness.AWSEnv()
	backend := []string{"--backend", "dynamodb", "--table", "main", "--tokens-table", "tokens", "--endpoint-url", ddb.Endpoint}
	data := t.TempDir()
	cli := cliRunner(t, bin, awsEnv, append(backend, "--data", data)...)

	// The provider must know the callback before the gateway starts, so the port is
	// chosen first.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	op := oidcop.Start(t, "http://"+addr+"/oauth/callback")

	cli("init")
	cli("workspace", "create", "--id", "acme", "--key", "ACME")
	cli("member", "add", "--workspace", "acme", "--user", "alice", "--role", "admin", "--email", strings.ToUpper(op.Email))

	mcpURL := startGateway(t, bin, awsEnv, append(backend, "--data", data, "--addr", addr, "--front-door",
		"--oidc-issuer", op.Issuer, "--oidc-client-id", op.ClientID,
		"--oidc-client-secret-file", flow.WriteSecret(t, "oidc-secret", op.ClientSecret),
		"--oauth-access-ttl", "3s")...)
	u, err := url.Parse(op.Issuer)
	if err != nil {
		t.Fatal(err)
	}
	// zitadel's example user store names its user test-user@<issuer host>.
	answer := mustJSON(t, map[string]any{"login": map[string]string{"username": "test-user@" + u.Hostname(), "password": op.Password}})
	steps := []string{"authorize-all", "expiry"}
	out, err := flow.NodeScript(t, "tssdk.mjs", []string{
		"AACMCP_URL=" + mcpURL,
		"AACMCP_ANSWER=" + answer,
		"AACMCP_STEPS=" + strings.Join(steps, ","),
		"AACMCP_TOOLS=" + toolsJSON(t),
		"AACMCP_SCOPES=" + mustJSON(t, auth.AllScopes),
		"AACMCP_RESULT_FILE=" + t.TempDir() + "/result.json",
	}, flow.NewRedirect(t), 2*time.Minute)
	m := nodeSummary.FindSubmatch(out)
	if err != nil || m == nil || string(m[2]) != "0" || string(m[1]) != strconv.Itoa(len(steps)) {
		t.Fatalf("node tssdk.mjs through the gateway with an upstream provider: %v\n%s", err, out)
	}
	t.Logf("tssdk.mjs:\n%s", out)
}
