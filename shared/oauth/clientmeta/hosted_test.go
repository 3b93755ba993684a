package clientmeta

import (
	"strings"
	"testing"
)

// Documents shaped like those the hosted clients publish (reported on 2026-12-07, see
// docs/clients.md), parsed by the general rules: nothing in the code names a vendor.
// claude.ai's body is as published; the others carry the members reported (redirect
// URIs, application_type or its absence, auth method) plus the usual ones.
const (
	claudeID     = "https://claude.ai/oauth/mcp-oauth-client-metadata"
	claudeCodeID = "https://claude.ai/oauth/claude-code-client-metadata"
	copilotID    = "https://github.com/copilot/cli/client-metadata.json"
)

var hostedDocuments = []struct {
	name, id, body string
	want           Client
}{
	{
		// A grant type this server does not offer (jwt-bearer) is dropped, not fatal.
		name: "claude.ai connector",
		id:   claudeID,
		body: `{"client_id":"` + claudeID + `","client_name":"Claude","client_uri":"https://claude.ai","redirect_uris":["https://claude.ai/api/mcp/auth_callback"],"grant_types":["authorization_code","refresh_token","urn:ietf:params:oauth:grant-type:jwt-bearer"],"response_types":["code"],"token_endpoint_auth_method":"none"}`,
		want: Client{ClientID: claudeID, Name: "Claude", ClientURI: "https://claude.ai", RedirectURIs: []string{"https://claude.ai/api/mcp/auth_callback"},
			TokenEndpointAuthMethod: AuthNone, GrantTypes: []string{GrantAuthorizationCode, GrantRefreshToken}, ApplicationType: ApplicationWeb},
	},
	{
		// No application_type and only loopback redirect URIs: a native client.
		name: "Claude Code",
		id:   claudeCodeID,
		body: `{"client_id":"` + claudeCodeID + `","client_name":"Claude Code","redirect_uris":["http://localhost/callback","http://127.0.0.1/callback"],"grant_types":["authorization_code","refresh_token"],"response_types":["code"],"token_endpoint_auth_method":"none"}`,
		want: Client{ClientID: claudeCodeID, Name: "Claude Code", RedirectURIs: []string{"http://localhost/callback", "http://127.0.0.1/callback"},
			TokenEndpointAuthMethod: AuthNone, GrantTypes: []string{GrantAuthorizationCode, GrantRefreshToken}, ApplicationType: ApplicationNative},
	},
	{
		name: "GitHub Copilot CLI",
		id:   copilotID,
		body: `{"client_id":"` + copilotID + `","client_name":"GitHub Copilot CLI","application_type":"native","redirect_uris":["http://127.0.0.1:33418/"],"grant_types":["authorization_code","refresh_token"],"response_types":["code"],"token_endpoint_auth_method":"none"}`,
		want: Client{ClientID: copilotID, Name: "GitHub Copilot CLI", RedirectURIs: []string{"http://127.0.0.1:33418/"},
			TokenEndpointAuthMethod: AuthNone, GrantTypes: []string{GrantAuthorizationCode, GrantRefreshToken}, ApplicationType: ApplicationNative},
	},
}

func TestHostedClientDocuments(t *testing.T) {
	for _, tc := range hostedDocuments {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseDocument(tc.id, []byte(tc.body))
			checkResult(t, got, err, "", "", &tc.want)
		})
	}
}

// TestGrantAndResponseTypes: what a client lists beyond what this server offers is
// dropped (RFC 7591 §2 lets the server replace requested values); what it needs
// for the code flow must be there. Registrations and documents alike.
func TestGrantAndResponseTypes(t *testing.T) {
	const redirect = `"redirect_uris":["https://a.example/cb"]`
	for _, tc := range []struct {
		name, members string
		want          []string // nil: refused
		desc          string
	}{
		{"absent: the RFC 7591 default", ``, []string{"authorization_code"}, ""},
		{"code and refresh", `"grant_types":["authorization_code","refresh_token"],`, []string{"authorization_code", "refresh_token"}, ""},
		{"jwt-bearer dropped", `"grant_types":["authorization_code","refresh_token","urn:ietf:params:oauth:grant-type:jwt-bearer"],`, []string{"authorization_code", "refresh_token"}, ""},
		{"device code and client credentials dropped, order kept", `"grant_types":["refresh_token","urn:ietf:params:oauth:grant-type:device_code","client_credentials","authorization_code"],`, []string{"refresh_token", "authorization_code"}, ""},
		{"implicit dropped with its response type", `"grant_types":["authorization_code","implicit"],"response_types":["code","token"],`, []string{"authorization_code"}, ""},
		{"duplicates folded", `"grant_types":["authorization_code","authorization_code"],`, []string{"authorization_code"}, ""},
		{"nothing this server runs", `"grant_types":["urn:ietf:params:oauth:grant-type:jwt-bearer"],`, nil, `must include "authorization_code"`},
		{"refresh alone", `"grant_types":["refresh_token"],`, nil, `must include "authorization_code"`},
		{"empty list", `"grant_types":[],`, nil, `must include "authorization_code"`},
		{"no code response type", `"response_types":["token"],`, nil, "response_types"},
		{"empty response types", `"response_types":[],`, nil, "response_types"},
		{"grant_types not strings", `"grant_types":["authorization_code",1],`, nil, "array of strings"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg, err := ParseRegistration([]byte(`{` + tc.members + redirect + `,"token_endpoint_auth_method":"none"}`))
			doc, derr := parseDocument(docURL, []byte(`{"client_id":"`+docURL+`",`+tc.members+redirect+`}`))
			for _, r := range []struct {
				what string
				c    Client
				err  error
			}{{"registration", reg, err}, {"document", doc, derr}} {
				if tc.want == nil {
					if r.err == nil || !strings.Contains(r.err.Error(), tc.desc) {
						t.Errorf("%s: %+v, %v; want an error containing %q", r.what, r.c, r.err, tc.desc)
					}
					continue
				}
				if r.err != nil || !equalStrings(r.c.GrantTypes, tc.want) {
					t.Errorf("%s: grant types %q, %v; want %q", r.what, r.c.GrantTypes, r.err, tc.want)
				}
			}
		})
	}
}

func equalStrings(a, b []string) bool { return strings.Join(a, "\x00") == strings.Join(b, "\x00") }

func TestInferApplicationType(t *testing.T) {
	for _, tc := range []struct {
		uris []string
		want string
	}{
		{[]string{"http://localhost/callback", "http://127.0.0.1/callback"}, ApplicationNative},
		{[]string{"http://[::1]:8080/cb"}, ApplicationNative},
		{[]string{"http://127.0.0.1:33418/"}, ApplicationNative},
		{[]string{"com.example.app:/oauth2redirect"}, ApplicationNative},
		{[]string{"https://app.example.com/cb", "http://localhost/cb"}, ApplicationNative},
		{[]string{"https://claude.ai/api/mcp/auth_callback"}, ApplicationWeb},
		{[]string{"https://a.example/cb", "https://b.example/cb"}, ApplicationWeb},
		// Not loopback as RFC 8252 names it: these stay web, and a web client may not
		// register http there, so the registration is refused, not made native.
		{[]string{"http://127.0.0.2/cb"}, ApplicationWeb},
		{[]string{"http://localhost.example.com/cb"}, ApplicationWeb},
	} {
		if got := inferApplicationType(tc.uris); got != tc.want {
			t.Errorf("inferApplicationType(%q) = %q, want %q", tc.uris, got, tc.want)
		}
	}
}

// redirectCases: the RFC 8252 §7.3 port allowance on loopback, and exact matching for
// everything else.
var redirectCases = []struct {
	name       string
	registered []string
	got        string
	want       bool
}{
	{"exact https", []string{"https://claude.ai/api/mcp/auth_callback"}, "https://claude.ai/api/mcp/auth_callback", true},
	{"https: another port", []string{"https://claude.ai/api/mcp/auth_callback"}, "https://claude.ai:8443/api/mcp/auth_callback", false},
	{"https: default port spelt out", []string{"https://app.example.com/cb"}, "https://app.example.com:443/cb", false},
	{"https on loopback: exact only", []string{"https://127.0.0.1:8443/cb"}, "https://127.0.0.1:9443/cb", false},
	{"https: trailing slash", []string{"https://app.example.com/cb"}, "https://app.example.com/cb/", false},
	{"https: case of host", []string{"https://app.example.com/cb"}, "https://APP.example.com/cb", false},
	{"https: query added", []string{"https://app.example.com/cb"}, "https://app.example.com/cb?x=1", false},
	{"https: fragment", []string{"https://app.example.com/cb"}, "https://app.example.com/cb#x", false},
	{"https: encoded path", []string{"https://app.example.com/cb"}, "https://app.example.com/%63b", false},
	{"http on a public host: exact only", []string{"http://app.example.com/cb"}, "http://app.example.com:8080/cb", false},

	{"Claude Code: ephemeral port on localhost", []string{"http://localhost/callback", "http://127.0.0.1/callback"}, "http://localhost:58135/callback", true},
	{"Claude Code: ephemeral port on 127.0.0.1", []string{"http://localhost/callback", "http://127.0.0.1/callback"}, "http://127.0.0.1:58135/callback", true},
	{"Claude Code: no port", []string{"http://localhost/callback"}, "http://localhost/callback", true},
	{"Claude Code: another path", []string{"http://localhost/callback", "http://127.0.0.1/callback"}, "http://localhost:58135/other", false},
	{"Claude Code: path prefix", []string{"http://localhost/callback"}, "http://localhost:58135/callback/x", false},
	{"Claude Code: query added", []string{"http://localhost/callback"}, "http://localhost:58135/callback?x=1", false},
	{"Claude Code: fragment", []string{"http://localhost/callback"}, "http://localhost:58135/callback#x", false},
	{"Claude Code: https", []string{"http://localhost/callback"}, "https://localhost:58135/callback", false},
	{"Copilot: declared port", []string{"http://127.0.0.1:33418/"}, "http://127.0.0.1:33418/", true},
	{"Copilot: another port", []string{"http://127.0.0.1:33418/"}, "http://127.0.0.1:52001/", true},
	{"Copilot: no path", []string{"http://127.0.0.1:33418/"}, "http://127.0.0.1:52001", false},
	{"Copilot: localhost is another host", []string{"http://127.0.0.1:33418/"}, "http://localhost:33418/", false},
	{"127.0.0.1 is not localhost", []string{"http://localhost:3000/cb"}, "http://127.0.0.1:3000/cb", false},
	{"case of localhost as registered", []string{"http://localhost/cb"}, "http://LOCALHOST:3000/cb", false},
	{"ipv6 loopback: another port", []string{"http://[::1]:9000/cb"}, "http://[::1]:9001/cb", true},
	{"ipv6 loopback: without port", []string{"http://[::1]:9000/cb"}, "http://[::1]/cb", true},
	{"ipv6 loopback: another spelling", []string{"http://[::1]:9000/cb"}, "http://[0:0:0:0:0:0:0:1]:9000/cb", false},
	{"ipv6 unbracketed", []string{"http://[::1]:9000/cb"}, "http://::1:9000/cb", false},
	{"127.0.0.2 is not loopback here", []string{"http://127.0.0.2/cb"}, "http://127.0.0.2:3000/cb", false},
	{"port zero", []string{"http://localhost/cb"}, "http://localhost:0/cb", false},
	{"port too large", []string{"http://localhost/cb"}, "http://localhost:65536/cb", false},
	{"leading zero", []string{"http://localhost/cb"}, "http://localhost:08080/cb", false},
	{"empty port", []string{"http://localhost/cb"}, "http://localhost:/cb", false},
	{"port not digits", []string{"http://localhost/cb"}, "http://localhost:+80/cb", false},
	{"two ports", []string{"http://localhost/cb"}, "http://localhost:80:90/cb", false},
	{"userinfo", []string{"http://localhost/cb"}, "http://evil@localhost:3000/cb", false},
	{"userinfo hiding the host", []string{"http://localhost/cb"}, "http://localhost:3000@evil.example/cb", false},
	{"backslash", []string{"http://localhost/cb"}, `http://localhost:3000\@evil.example/cb`, false},
	{"space", []string{"http://localhost/cb"}, "http://localhost:3000/cb ", false},
	{"another scheme", []string{"http://localhost/cb"}, "com.example.app://localhost:3000/cb", false},
	{"private-use scheme: exact", []string{"com.example.app:/oauth2redirect"}, "com.example.app:/oauth2redirect", true},
	{"empty", []string{"http://localhost/cb"}, "", false},
	{"no redirect URIs", nil, "http://localhost:3000/cb", false},
}

func TestRedirectAllowed(t *testing.T) {
	for _, tc := range redirectCases {
		if got := RedirectAllowed(Client{RedirectURIs: tc.registered}, tc.got); got != tc.want {
			t.Errorf("%s: RedirectAllowed(%q, %q) = %v, want %v", tc.name, tc.registered, tc.got, got, tc.want)
		}
	}
}

// FuzzRedirectAllowed: an allowed redirect URI is one of the registered ones, or an
// http loopback URI that differs from one only in a valid port.
func FuzzRedirectAllowed(f *testing.F) {
	for _, tc := range redirectCases {
		f.Add(strings.Join(tc.registered, " "), tc.got)
	}
	f.Fuzz(func(t *testing.T, registered, got string) {
		c := Client{RedirectURIs: strings.Fields(registered)}
		if !RedirectAllowed(c, got) {
			return
		}
		for _, r := range c.RedirectURIs {
			if r == got {
				return
			}
		}
		if !strings.HasPrefix(got, "http://") || strings.ContainsAny(got, "#@\\ ") || hasUnsafeByte(got) {
			t.Fatalf("allowed %q for %q", got, c.RedirectURIs)
		}
		gh, gp, grest, ok := splitLoopbackRedirect(got)
		if !ok || !isLoopbackHost(strings.Trim(gh, "[]")) || (gp != "" && (gp[0] == '0' || !validPort(gp))) {
			t.Fatalf("allowed %q (host %q port %q) for %q", got, gh, gp, c.RedirectURIs)
		}
		for _, r := range c.RedirectURIs {
			if h, p, rest, ok := splitLoopbackRedirect(r); ok && h == gh && rest == grest {
				if "http://"+gh+portPart(gp)+grest != got || "http://"+h+portPart(p)+rest != r {
					t.Fatalf("split of %q or %q does not rebuild it", got, r)
				}
				return
			}
		}
		t.Fatalf("allowed %q, which matches none of %q", got, c.RedirectURIs)
	})
}

func portPart(p string) string {
	if p == "" {
		return ""
	}
	return ":" + p
}
