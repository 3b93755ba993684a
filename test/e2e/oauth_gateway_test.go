package e2e

import (
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/apigw"
	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/audit/file"
	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/auth/jwtaccess/jwttest"
	"github.com/aacworkflow/aacmcp/shared/catalog"
	"github.com/aacworkflow/aacmcp/test/emulator"
	"github.com/aacworkflow/aacmcp/test/harness"
	"github.com/aacworkflow/aacmcp/test/oauth/flow"
	"github.com/aacworkflow/aacmcp/test/oidcop"
)

var nodeSummary = regexp.MustCompile(`(?m)^(\d+) passed, (\d+) failed$`)

// TestTypeScriptSDKThroughFrontDoor is issue 13's proof through the deployed
// shape: `aacmcp gateway --stage prod --front-door`, the CloudFront distribution's
// stand-in serving the prod stage at the root of its URL, with the authorizer, MCP
// and authorization server functions' real code in process against dynalite. One
// gateway serves both subtests; it is configured as a stack with the built-in
// authorization server and an external issuer both.
//   - The TypeScript SDK v2 client with its OAuth machinery and a real browser
//     (test/oauth/tssdk.mjs) discovers at the root, registers by CIMD, signs in on
//     the dev page, consents to issues:read only, calls a tool, is refused
//     create_issue with the 403 insufficient_scope challenge, steps up to
//     issues:write, files the issue, and refreshes.
//   - The same client with JWT access tokens of the external issuer (keys and JWKS
//     made here) calls tools; one for another audience gets the 401 challenge with
//     error="invalid_token".
//
// On the bare stage URL discovery stops: TestDiscoveryThroughStagedGateway.
func TestTypeScriptSDKThroughFrontDoor(t *testing.T) {
	bin := harness.Binary(t)
	ddb := emulator.StartT(t, emulator.Dynalite)
	awsEnv := harness.AWSEnv()
	backend := []string{"--backend", "dynamodb", "--table", "main", "--tokens-table", "tokens", "--endpoint-url", ddb.Endpoint}
	data := t.TempDir()
	cli := cliRunner(t, bin, awsEnv, append(backend, "--data", data)...)
	cli("init")
	cli("workspace", "create", "--id", "demo", "--key", "AAC")
	cli("member", "add", "--workspace", "demo", "--user", flow.DevUser, "--role", "admin")
	cli("member", "add", "--workspace", "demo", "--user", "jo", "--role", "member", "--email", "jo@example.com")

	var viewer createdToken
	if err := json.Unmarshal(cli("token", "create", "--workspace", "demo", "--user", flow.DevUser, "--scopes", "issues:read", "--name", "viewer", "--json"), &viewer); err != nil {
		t.Fatal(err)
	}
	iss := jwttest.NewIssuer(t)
	key := iss.AddRSA(t, "k1")
	// The API's own listener (the execute-api host), chosen here to be probed below.
	apiLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	apiAddr := apiLn.Addr().String()
	_ = apiLn.Close()
	ca := flow.NewCA(t)
	docs := flow.StartCIMD(t, ca)
	// The authorization server fetches metadata documents with the system pool,
	// which SSL_CERT_FILE replaces: it trusts the test's CA only.
	gw, err := harness.Gateway(bin, append(awsEnv, "SSL_CERT_FILE="+ca.WriteBundle(t)),
		append(backend, "--data", data, "--dev", "--stage", "prod", "--front-door", "--api-addr", apiAddr, "--jwt-issuer", iss.URL)...)
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		if err := gw.Terminate(20 * time.Second); err != nil {
			t.Errorf("gateway did not exit cleanly on SIGTERM: %v\nstderr: %s", err, gw.Stderr())
		}
	}
	t.Cleanup(stop)
	mcpURL, base := gw.MCPURL, gw.Base
	if u, err := url.Parse(base); err != nil || u.Path != "" {
		t.Fatalf("the front door serves at %q, want the root of its URL", base)
	}

	var clientID string
	var res tsResult
	t.Run("oauth flow and step-up", func(t *testing.T) {
		rd := flow.NewRedirect(t)
		clientID = docs.Publish(t, "tssdk-frontdoor", flow.ClientDocument{
			ClientName:              "aacmcp e2e through the front door",
			RedirectURIs:            []string{rd.URL},
			GrantTypes:              []string{"authorization_code", "refresh_token"},
			ResponseTypes:           []string{"code"},
			TokenEndpointAuthMethod: "none",
		})
		steps := []string{"authorize", "stepup", "refresh"}
		resultFile := filepath.Join(t.TempDir(), "result.json")
		out, err := flow.NodeScript(t, "tssdk.mjs", []string{
			"AACMCP_URL=" + mcpURL,
			"AACMCP_CLIENT_METADATA_URL=" + clientID,
			`AACMCP_ANSWER={"user":"` + flow.DevUser + `"}`,
			"AACMCP_STEPS=" + strings.Join(steps, ","),
			"AACMCP_TOOLS=" + toolsJSON(t),
			"AACMCP_SCOPES=" + mustJSON(t, auth.AllScopes),
			"AACMCP_RESULT_FILE=" + resultFile,
		}, rd, 2*time.Minute)
		m := nodeSummary.FindSubmatch(out)
		if err != nil || m == nil || string(m[2]) != "0" || string(m[1]) != strconv.Itoa(len(steps)) {
			t.Fatalf("node tssdk.mjs through the front door: %v\n%s\ngateway stderr:\n%s", err, out, harness.Tail(gw.Stderr(), 4000))
		}
		t.Logf("tssdk.mjs:\n%s", out)
		if docs.Fetches(clientID) == 0 {
			t.Errorf("the authorization server never fetched the client metadata document %s", clientID)
		}
		b, err := os.ReadFile(resultFile)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &res); err != nil {
			t.Fatalf("result %s: %v", b, err)
		}
		// What the client saw when it was refused, checked here against the public
		// URL the Go side knows (the script checks it against its own idea too).
		want := challengeSeen{Status: 403, Error: "insufficient_scope", Scope: "issues:write",
			ResourceMetadata: base + "/.well-known/oauth-protected-resource/mcp"}
		if res.Challenge != want {
			t.Errorf("the 403 the client saw: %+v, want %+v", res.Challenge, want)
		}
		if res.Created.Title != "Filed after an OAuth step-up" || !strings.HasPrefix(res.Created.Key, "AAC-") {
			t.Errorf("the issue filed after the step-up: %+v", res.Created)
		}
	})

	t.Run("external-issuer JWT", func(t *testing.T) {
		now := time.Now()
		tok := func(aud string) string {
			return key.Sign(t, map[string]any{"iss": iss.URL, "aud": aud, "email": "jo@example.com", "client_id": "byo-client",
				"exp": now.Add(time.Hour).Unix(), "iat": now.Unix(), "scope": "issues:read issues:write"})
		}
		runNode(t, "jwt.mjs", mcpURL, map[string]string{
			"GOOD":      tok(mcpURL),
			"WRONG_AUD": tok("https://elsewhere.example.com/mcp"),
		}, []string{"AACMCP_JWT_ISSUER=" + iss.URL, "AACMCP_TOOLS=" + toolsJSON(t)})
	})

	t.Run("execute-api URL behind the distribution", func(t *testing.T) {
		// The stack's regional web ACL lets through only requests carrying the
		// distribution's origin secret, so the API's own URL answers nothing but
		// the block, whatever the caller sends (a guessed secret included).
		stageURL := "http://" + apiAddr + "/prod/mcp"
		for _, c := range []struct{ method, url, token, secret string }{
			{http.MethodGet, "http://" + apiAddr + "/.well-known/oauth-authorization-server", "", ""},
			{http.MethodGet, "http://" + apiAddr + "/prod/.well-known/oauth-protected-resource/mcp", "", ""},
			{http.MethodPost, stageURL, "", ""},
			{http.MethodPost, stageURL, viewer.Token, ""},
			{http.MethodPost, stageURL, viewer.Token, "guessed"},
		} {
			req, _ := http.NewRequest(c.method, c.url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
			req.Header.Set("Content-Type", "application/json")
			if c.token != "" {
				req.Header.Set("Authorization", "Bearer "+c.token)
			}
			if c.secret != "" {
				req.Header.Set(apigw.OriginVerifyHeader, c.secret)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var body apperr.Body
			_ = json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden || body.Code != apperr.WAFBlocked || resp.Header.Get("WWW-Authenticate") != "" {
				t.Errorf("%s %s (token %v, secret %q) on the execute-api host: %d %+v, want 403 %s", c.method, c.url, c.token != "", c.secret, resp.StatusCode, body, apperr.WAFBlocked)
			}
		}
	})

	// The audit records the functions wrote (files under --data, the gateway run
	// without a stream), once the gateway has stopped.
	stop()
	recs, bad, err := file.ReadAll(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Errorf("damaged audit line: %v", b)
	}
	count := map[string]int{}
	for _, r := range recs {
		if r.Tool == "" {
			continue
		}
		var who string
		switch {
		case clientID != "" && r.ClientID == clientID:
			who = "oauth"
		case r.UserID == "jo":
			who = "jwt"
		default:
			continue
		}
		count[who+" "+r.Tool+" "+r.Outcome+" "+r.Reason+" "+strings.Join(slices.Sorted(slices.Values(r.ScopesProvided)), ",")]++
	}
	for _, k := range []string{
		"oauth list_issues success  issues:read",
		"oauth create_issue denied insufficient_scope issues:read",
		"oauth create_issue success  issues:read,issues:write",
		"jwt list_issues success  issues:read,issues:write",
		"jwt create_issue success  issues:read,issues:write",
	} {
		if count[k] == 0 {
			t.Errorf("no audit record %q; records by client, tool, outcome, reason, scopes: %v", k, count)
		}
	}
}

// challengeSeen is the 403 tssdk.mjs saw before its step-up.
type challengeSeen struct {
	Status           int    `json:"status"`
	Error            string `json:"error"`
	Scope            string `json:"scope"`
	ResourceMetadata string `json:"resource_metadata"`
	Remapped         string `json:"remapped"`
}

// tsResult is what tssdk.mjs writes to AACMCP_RESULT_FILE (the part this test reads).
type tsResult struct {
	Challenge challengeSeen `json:"stepup_challenge"`
	Created   struct {
		Key   string `json:"key"`
		Title string `json:"title"`
	} `json:"created_issue"`
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
