package cli

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/audit/file"
	"github.com/aacworkflow/aacmcp/shared/auth/jwtaccess/jwttest"
	"github.com/aacworkflow/aacmcp/test/emulator"
)

// TestServeJWT runs `aacmcp serve --jwt-issuer` against an issuer on 127.0.0.1:
// its access tokens call tools as the member their e-mail names, the member's
// role and the token's scopes both decide, failures are 401 invalid_token, and the
// resource metadata names the issuer.
func TestServeJWT(t *testing.T) {
	data := t.TempDir()
	mustRun(t, "workspace", "create", "--data", data, "--id", "acme", "--key", "ACME")
	mustRun(t, "member", "add", "--data", data, "--workspace", "acme", "--user", "ada", "--role", "member", "--email", "Ada@Example.com")
	mustRun(t, "member", "add", "--data", data, "--workspace", "acme", "--user", "vic", "--role", "viewer", "--email", "vic@example.com")

	iss := jwttest.NewIssuer(t)
	key := iss.AddRSA(t, "k1")
	s := startServe(t, data, "--jwt-issuer", iss.URL)
	aud := s.base + "/mcp"
	now := time.Now()
	tok := func(kv ...any) string {
		c := map[string]any{"iss": iss.URL, "aud": aud, "email": "ada@example.com", "client_id": "okta-client",
			"exp": now.Add(time.Hour).Unix(), "iat": now.Unix(), "jti": "j1", "scope": "issues:read issues:write"}
		for i := 0; i < len(kv); i += 2 {
			c[kv[i].(string)] = kv[i+1]
		}
		return key.Sign(t, c)
	}

	tests := []struct {
		name, token, tool, args string
		status                  int
		code                    string // error code of a refusal
	}{
		{name: "read", token: tok(), tool: "list_issues", args: `{}`, status: 200},
		{name: "write", token: tok(), tool: "create_issue", args: `{"title":"from a JWT"}`, status: 200},
		{name: "scope missing", token: tok("scope", "issues:read"), tool: "create_issue", args: `{"title":"x"}`, status: 403, code: "insufficient_scope"},
		{name: "scp array", token: tok("scope", nil, "scp", []string{"issues:read"}), tool: "list_issues", args: `{}`, status: 200},
		{name: "the role decides: a viewer cannot write", token: tok("email", "vic@example.com"), tool: "create_issue", args: `{"title":"x"}`, status: 403, code: "permission_denied"},
		{name: "expired", token: tok("exp", now.Add(-time.Hour).Unix()), tool: "list_issues", args: `{}`, status: 401, code: "invalid_token"},
		{name: "wrong audience", token: tok("aud", "https://elsewhere.example.com/mcp"), tool: "list_issues", args: `{}`, status: 401, code: "invalid_token"},
		{name: "wrong issuer", token: tok("iss", "https://evil.example.com"), tool: "list_issues", args: `{}`, status: 401, code: "invalid_token"},
		{name: "unknown kid", token: jwttest.RSA(t, "k2").Sign(t, map[string]any{"iss": iss.URL, "aud": aud, "email": "ada@example.com", "exp": now.Add(time.Hour).Unix()}),
			tool: "list_issues", args: `{}`, status: 401, code: "invalid_token"},
		{name: "alg confusion", token: jwttest.SignHMAC(t, []byte(strings.Repeat("k", 32)), "k1", map[string]any{"iss": iss.URL, "aud": aud, "email": "ada@example.com", "exp": now.Add(time.Hour).Unix()}),
			tool: "list_issues", args: `{}`, status: 401, code: "invalid_token"},
		{name: "no member", token: tok("email", "eve@example.com"), tool: "list_issues", args: `{}`, status: 401, code: "invalid_token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := callREST(t, s.base, tt.token, tt.tool, tt.args)
			if status != tt.status {
				t.Fatalf("status %d, want %d: %v", status, tt.status, body)
			}
			if tt.code != "" {
				if body["code"] != tt.code {
					t.Errorf("body %v, want error code %s", body, tt.code)
				}
			}
		})
	}

	// A 401 for a presented JWT carries the RFC 6750 challenge.
	req, _ := http.NewRequest(http.MethodPost, s.base+"/tools/list_issues", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+tok("exp", now.Add(-time.Hour).Unix()))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if ch := res.Header.Get("WWW-Authenticate"); !strings.Contains(ch, `error="invalid_token"`) || !strings.Contains(ch, "resource_metadata=") {
		t.Errorf("challenge %q", ch)
	}

	res, err = http.Get(s.base + "/.well-known/oauth-protected-resource")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	var md struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	if err := json.Unmarshal(b, &md); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(md.AuthorizationServers, iss.URL) || md.Resource != aud {
		t.Errorf("resource metadata %s: want the issuer %s and resource %s", b, iss.URL, aud)
	}

	// The calls are audited under the JWT's public id and client.
	s.stop(t)
	// A clean stop compacts the open hour into Parquet: read the log as the admin
	// queries do, whatever format each hour is in.
	var found bool
	if err := file.Scan(data, func(e file.Entry) error {
		r := e.Record
		if r.TokenID == "jwt:j1" && r.ClientID == "okta-client" && r.Tool == "create_issue" {
			found = true
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !found {
		t.Error("no audit record of create_issue with token_id jwt:j1 and client_id okta-client")
	}
}

func TestGatewayJWTFlags(t *testing.T) {
	data := t.TempDir()
	base := []string{"gateway", "--addr", "127.0.0.1:0", "--data", data, "--backend", "dynamodb", "--table", "main", "--tokens-table", "tokens"}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--jwt-issuer", "https://idp.example.com"}, "--jwt-audience"},
		{[]string{"--jwt-issuer", "https://idp.example.com", "--jwt-audience", "https://x/prod/mcp", "--jwt-algorithms", "HS256"}, "--jwt-algorithms"},
		{[]string{"--jwt-clients", "abc"}, "--jwt-issuer"},
	} {
		r := run(t, nil, append(slices.Clone(base), tt.args...)...)
		if r.code == ExitOK || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want an error naming %s", tt.args, r.code, r.stderr, tt.want)
		}
	}
}

func TestServeJWTFlags(t *testing.T) {
	data := t.TempDir()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--jwt-audience", "x"}, "--jwt-issuer"},
		{[]string{"--jwt-issuer", "https://idp.example.com", "--jwt-algorithms", "HS256"}, "--jwt-algorithms"},
		{[]string{"--jwt-issuer", "https://idp.example.com", "--jwt-algorithms", "none"}, "--jwt-algorithms"},
		{[]string{"--jwt-issuer", "https://idp.example.com", "--jwt-workspace", "a", "--jwt-workspace-claim", "ws"}, "set one"},
		{[]string{"--jwt-issuer", "http://idp.example.com"}, "https"},
	} {
		r := run(t, nil, append([]string{"serve", "--addr", "127.0.0.1:0", "--data", data}, tt.args...)...)
		if r.code == ExitOK || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want an error naming %s", tt.args, r.code, r.stderr, tt.want)
		}
	}
}

// TestGatewayJWT runs `aacmcp gateway --jwt-issuer` against dynalite: the
// authorizer's production code accepts the issuer's tokens for the member their
// e-mail names (the DynamoDB lookup by e-mail) and refuses an expired one.
func TestGatewayJWT(t *testing.T) {
	awsEnv(t)
	db := emulator.StartT(t, emulator.Dynalite)
	data := t.TempDir()
	be := []string{"--backend", "dynamodb", "--table", "gwj-main", "--tokens-table", "gwj-tokens", "--endpoint-url", db.Endpoint, "--data", data}
	with := func(args ...string) []string { return append(args, be...) }
	mustRun(t, with("init")...)
	mustRun(t, with("workspace", "create", "--id", "demo", "--key", "AAC")...)
	mustRun(t, with("member", "add", "--workspace", "demo", "--user", "ada", "--role", "member", "--email", "ada@example.com")...)

	iss := jwttest.NewIssuer(t)
	key := iss.AddRSA(t, "k1")
	const aud = "https://abc123def4.execute-api.us-east-1.amazonaws.com/prod/mcp"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb syncBuffer
	ready := make(chan string, 1)
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, append([]string{"gateway", "--addr", "127.0.0.1:0", "--jwt-issuer", iss.URL, "--jwt-audience", aud}, be...), Env{
			Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" },
			Ready: func(base string) { ready <- base },
		})
	}()
	var base string
	select {
	case base = <-ready:
	case code := <-done:
		t.Fatalf("gateway exited %d: %s", code, errb.String())
	case <-time.After(30 * time.Second):
		t.Fatal("gateway did not listen within 30s")
	}
	now := time.Now()
	tok := func(exp time.Time, scope string) string {
		return key.Sign(t, map[string]any{"iss": iss.URL, "aud": aud, "email": "ada@example.com", "exp": exp.Unix(), "jti": "g1", "scope": scope})
	}
	if status, body := callREST(t, base, tok(now.Add(time.Hour), "issues:read issues:write"), "create_issue", `{"title":"JWT through the gateway"}`); status != http.StatusOK || body["key"] != "AAC-1" {
		t.Errorf("create_issue with a JWT: %d %v", status, body)
	}
	if status, body := callREST(t, base, tok(now.Add(-time.Hour), "issues:read"), "list_issues", `{}`); status != http.StatusUnauthorized {
		t.Errorf("expired JWT: %d %v", status, body)
	}
	cancel()
	if code := <-done; code != ExitOK {
		t.Fatalf("gateway exited %d: %s", code, errb.String())
	}
	recs, _, err := file.ReadAll(data)
	if err != nil {
		t.Fatal(err)
	}
	var ok bool
	for _, r := range recs {
		if r.Tool == "create_issue" && r.TokenID == "jwt:g1" && r.UserID == "ada" && r.Reason == "" {
			ok = true
		}
	}
	if !ok {
		t.Errorf("no audit record of create_issue by ada under jwt:g1: %+v", recs)
	}
}
