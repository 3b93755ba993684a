package oauthfn

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/catalog"
	"github.com/aacworkflow/aacmcp/shared/lambdaenv"
	"github.com/aacworkflow/aacmcp/shared/oauth"
	"github.com/aacworkflow/aacmcp/shared/store/sqlite"
)

type memSink struct{ recs []audit.Record }

func (m *memSink) Write(_ context.Context, r audit.Record) error {
	m.recs = append(m.recs, r)
	return nil
}

// devFunction is the function over a real authorization server on SQLite (the
// DynamoDB backend is exercised under the RIE and in the store suite).
func devFunction(t testing.TB, publicURL string) (*Function, *memSink) {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "a.db"), sqlite.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	sink := &memSink{}
	srv, err := oauth.New(oauth.Config{Store: st, Tokens: st, Counter: st, Sink: sink, Catalog: catalog.New(catalog.Deps{}), Dev: true, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return New(srv, publicURL, quiet, nil), sink
}

func event(method, full, route, stage, host string, body string) events.APIGatewayProxyRequest {
	h := map[string][]string{"Host": {host}, "X-Forwarded-Proto": {"https"}}
	if body != "" {
		h["Content-Type"] = []string{"application/json"}
	}
	return events.APIGatewayProxyRequest{
		Resource: resourceOf(route), Path: route, HTTPMethod: method, MultiValueHeaders: h, Body: body,
		RequestContext: events.APIGatewayProxyRequestContext{Path: full, Stage: stage, RequestID: "req-1", DomainName: host, HTTPMethod: method},
	}
}

// resourceOf is the API resource a route path matches in infra's API.
func resourceOf(route string) string {
	if strings.HasPrefix(route, "/oauth/") {
		return "/oauth/{proxy+}"
	}
	return route
}

func TestIssuer(t *testing.T) {
	for _, tt := range []struct {
		name, public, full, route, stage, host, proto, want string
	}{
		{"execute-api stage", "", "/prod/oauth/token", "/oauth/token", "prod", "abc.execute-api.eu-west-1.amazonaws.com", "https", "https://abc.execute-api.eu-west-1.amazonaws.com/prod"},
		{"custom domain, empty base path", "", "/oauth/token", "/oauth/token", "prod", "mcp.example.com", "https", "https://mcp.example.com"},
		{"local gateway over http", "", "/prod/oauth/token", "/oauth/token", "prod", "127.0.0.1:8081", "http", "http://127.0.0.1:8081/prod"},
		{"public URL wins", "https://mcp.example.com/", "/prod/oauth/token", "/oauth/token", "prod", "abc.execute-api.eu-west-1.amazonaws.com", "https", "https://mcp.example.com"},
		{"unknown proto means https", "", "/oauth/token", "/oauth/token", "prod", "mcp.example.com", "gopher", "https://mcp.example.com"},
	} {
		f, _ := devFunction(t, tt.public)
		ev := event("GET", tt.full, tt.route, tt.stage, tt.host, "")
		ev.MultiValueHeaders["X-Forwarded-Proto"] = []string{tt.proto}
		if got := f.Issuer(ev); got != tt.want {
			t.Errorf("%s: Issuer = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestHandleMetadataAndRegistration: the metadata names the issuer the request
// came by, and a registration is answered and audited with API Gateway's request id.
func TestHandleMetadataAndRegistration(t *testing.T) {
	f, sink := devFunction(t, "")
	ctx := context.Background()
	const host = "abc.execute-api.eu-west-1.amazonaws.com"
	resp, err := f.Handle(ctx, event("GET", "/prod/.well-known/oauth-authorization-server", "/.well-known/oauth-authorization-server", "prod", host, ""))
	if err != nil {
		t.Fatal(err)
	}
	var md struct {
		Issuer        string `json:"issuer"`
		TokenEndpoint string `json:"token_endpoint"`
	}
	if resp.StatusCode != 200 || json.Unmarshal([]byte(resp.Body), &md) != nil {
		t.Fatalf("metadata: %d %s", resp.StatusCode, resp.Body)
	}
	if md.Issuer != "https://"+host+"/prod" || md.TokenEndpoint != "https://"+host+"/prod/oauth/token" {
		t.Errorf("metadata issuer %q token endpoint %q", md.Issuer, md.TokenEndpoint)
	}

	reg := `{"client_name":"Test","redirect_uris":["https://client.example/cb"],"token_endpoint_auth_method":"none"}`
	resp, err = f.Handle(ctx, event("POST", "/prod/oauth/register", "/oauth/register", "prod", host, reg))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 201 || !strings.Contains(resp.Body, `"client_id"`) {
		t.Fatalf("register: %d %s", resp.StatusCode, resp.Body)
	}
	if len(sink.recs) != 1 || sink.recs[0].Action != audit.ActionClientRegistered || sink.recs[0].RequestID != "req-1" {
		t.Errorf("audit records %+v", sink.recs)
	}
}

func TestHandleUnreadableBody(t *testing.T) {
	f, _ := devFunction(t, "")
	ev := event("POST", "/oauth/token", "/oauth/token", "prod", "mcp.example.com", "%%%")
	ev.IsBase64Encoded = true
	resp, err := f.Handle(context.Background(), ev)
	if err != nil || resp.StatusCode != 400 {
		t.Fatalf("%d %v", resp.StatusCode, err)
	}
}

func TestLoadConfig(t *testing.T) {
	full := map[string]string{
		EnvOIDCIssuer: "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_abc", EnvOIDCClientID: "client",
		EnvOIDCClientSecretARN: "arn:aws:secretsmanager:eu-west-1:111122223333:secret:oidc-AbCdEf",
		EnvPublicURL:           "https://abc.execute-api.eu-west-1.amazonaws.com/prod/", EnvAccessTokenTTL: "30m",
	}
	with := func(k, v string) map[string]string {
		m := map[string]string{}
		for a, b := range full {
			m[a] = b
		}
		m[k] = v
		return m
	}
	for _, tt := range []struct {
		name    string
		env     map[string]string
		wantErr string
	}{
		{"complete", full, ""},
		{"no issuer", with(EnvOIDCIssuer, ""), EnvOIDCIssuer},
		{"no secret ARN", with(EnvOIDCClientSecretARN, ""), EnvOIDCClientSecretARN},
		{"no client id", with(EnvOIDCClientID, ""), EnvOIDCClientID},
		{"public URL not absolute", with(EnvPublicURL, "/prod"), EnvPublicURL},
		{"public URL with query", with(EnvPublicURL, "https://a.example/?x=1"), EnvPublicURL},
		{"TTL not a duration", with(EnvAccessTokenTTL, "an hour"), EnvAccessTokenTTL},
		{"TTL above the maximum", with(EnvAccessTokenTTL, "25h"), EnvAccessTokenTTL},
		{"TTL zero", with(EnvAccessTokenTTL, "0s"), EnvAccessTokenTTL},
		{"TTL optional", with(EnvAccessTokenTTL, ""), ""},
	} {
		c, err := LoadConfig(func(k string) string { return tt.env[k] }, lambdaenv.Config{Table: "main"})
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%s: error %v, want one naming %s", tt.name, err, tt.wantErr)
		}
		if tt.name == "complete" && (c.PublicURL != "https://abc.execute-api.eu-west-1.amazonaws.com/prod" || c.AccessTokenTTL.Minutes() != 30 || c.Table != "main") {
			t.Errorf("complete: %+v", c)
		}
	}
}

// FuzzHandle feeds arbitrary events: the function answers each with a response,
// never a Lambda error or a panic.
func FuzzHandle(f *testing.F) {
	f.Add("GET", "/prod/.well-known/oauth-authorization-server", "/.well-known/oauth-authorization-server", "prod", "h.example", "", false)
	f.Add("POST", "/oauth/register", "/oauth/register", "", "h.example", `{"redirect_uris":["https://x.example/cb"]}`, false)
	f.Add("POST", "/prod/oauth/token", "/oauth/token", "prod", "", "Z3JhbnRfdHlwZT1jb2Rl", true)
	fn, _ := devFunction(f, "")
	f.Fuzz(func(t *testing.T, method, full, route, stage, host, body string, b64 bool) {
		ev := event(method, full, route, stage, host, body)
		ev.IsBase64Encoded = b64
		resp, err := fn.Handle(context.Background(), ev)
		if err != nil {
			t.Fatalf("Lambda error %v", err)
		}
		if resp.StatusCode < 200 || resp.StatusCode > 599 {
			t.Fatalf("status %d", resp.StatusCode)
		}
	})
}
