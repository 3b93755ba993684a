package clientmeta

import (
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

var metadataURLCases = []struct {
	in   string
	want bool
}{
	{"https://app.example.com/oauth/client.json", true},
	{"https://app.example.com:8443/client", true},
	{"https://app.example.com/", true},
	{"https://app.example.com/client?v=1", true},
	{"https://127.0.0.1:4443/client.json", true},
	{"https://[::1]:4443/client.json", true},
	{"https://app.example.com", false},
	{"http://app.example.com/client", false},
	{"HTTPS://app.example.com/client", false},
	{"https://user@app.example.com/client", false},
	{"https://user:pw@app.example.com/client", false},
	{"https://app.example.com/client#frag", false},
	{"https://app.example.com/client#", false},
	{"https://app.example.com/a/../client", false},
	{"https://app.example.com/./client", false},
	{"https://app.example.com/a/..", false},
	{"https://app.example.com/a/%2e%2E/client", false},
	{"https://app.example.com/%2E/client", false},
	// An encoded slash: "/%2f%2E" is one segment to RFC 3986 but "//." to a server
	// that decodes it (found by FuzzIsMetadataURL).
	{"https://0/%2f%2E", false},
	{"https://app.example.com/a%2Fb/client", false},
	{"https://app.example.com/a/.../client", true},
	{"https://app.example.com/a b", false},
	{"https://app.example.com/a\\b", false},
	{"https://app.example.com/a\x00", false},
	{"https:///client", false},
	{"https://:443/client", false},
	{"https://app.example.com:0/client", false},
	{"https://app.example.com:99999/client", false},
	{"https://app.example.com:x/client", false},
	{"https:app.example.com/client", false},
	{"client-1234", false},
	{"", false},
	{"https://app.example.com/" + strings.Repeat("a", maxURLBytes), false},
}

func TestIsMetadataURL(t *testing.T) {
	for _, tc := range metadataURLCases {
		if got := IsMetadataURL(tc.in); got != tc.want {
			t.Errorf("IsMetadataURL(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

type regCase struct {
	name string
	body string
	// code is "" for success, else the expected Error.Code; desc must be contained in
	// the description, so each refusal is proved to be for the expected reason.
	code, desc string
	want       *Client
}

var registrationCases = []regCase{
	{
		name: "mcp native public client",
		body: `{"client_name":"Claude Code","redirect_uris":["http://localhost:33418/callback"],"token_endpoint_auth_method":"none","grant_types":["authorization_code","refresh_token"],"response_types":["code"],"application_type":"native","scope":"issues:read","resource":"https://mcp.example.com/mcp"}`,
		want: &Client{Name: "Claude Code", RedirectURIs: []string{"http://localhost:33418/callback"}, TokenEndpointAuthMethod: "none", GrantTypes: []string{"authorization_code", "refresh_token"}, ApplicationType: "native"},
	},
	{
		name: "defaults per RFC 7591",
		body: `{"redirect_uris":["https://chatgpt.example.com/connector/oauth/cb"]}`,
		want: &Client{RedirectURIs: []string{"https://chatgpt.example.com/connector/oauth/cb"}, TokenEndpointAuthMethod: "client_secret_basic", GrantTypes: []string{"authorization_code"}, ApplicationType: "web"},
	},
	{
		name: "no application_type, loopback redirect infers native",
		body: `{"redirect_uris":["http://127.0.0.1:8080/cb"],"token_endpoint_auth_method":"none"}`,
		want: &Client{RedirectURIs: []string{"http://127.0.0.1:8080/cb"}, TokenEndpointAuthMethod: "none", GrantTypes: []string{"authorization_code"}, ApplicationType: "native"},
	},
	{
		name: "native ipv6 loopback, private-use scheme and https; duplicates folded",
		body: `{"application_type":"native","redirect_uris":["http://[::1]:9000/cb","com.example.app:/oauth2redirect","https://app.example.com/cb","com.example.app:/oauth2redirect"],"token_endpoint_auth_method":"client_secret_post","grant_types":["authorization_code","authorization_code"]}`,
		want: &Client{RedirectURIs: []string{"http://[::1]:9000/cb", "com.example.app:/oauth2redirect", "https://app.example.com/cb"}, TokenEndpointAuthMethod: "client_secret_post", GrantTypes: []string{"authorization_code"}, ApplicationType: "native"},
	},
	{
		name: "script in client_name is kept as text, controls stripped",
		body: `{"client_name":"  <script>alert(1)</script>\u0007\u202e\t\nEvil\u200b Corp ","client_uri":"https://evil.example/","logo_uri":"https://evil.example/logo.png","redirect_uris":["https://evil.example/cb"]}`,
		want: &Client{Name: "<script>alert(1)</script> Evil Corp", ClientURI: "https://evil.example/", LogoURI: "https://evil.example/logo.png", RedirectURIs: []string{"https://evil.example/cb"}, TokenEndpointAuthMethod: "client_secret_basic", GrantTypes: []string{"authorization_code"}, ApplicationType: "web"},
	},
	{
		name: "unknown members ignored, nulls are absent",
		body: `{"redirect_uris":["https://a.example/cb"],"x_vendor":{"nested":[1,2,{"a":null}]},"client_name":null,"scope":null}`,
		want: &Client{RedirectURIs: []string{"https://a.example/cb"}, TokenEndpointAuthMethod: "client_secret_basic", GrantTypes: []string{"authorization_code"}, ApplicationType: "web"},
	},
	{name: "web client on http loopback", body: `{"application_type":"web","redirect_uris":["http://localhost:3000/cb"]}`, code: CodeInvalidRedirectURI, desc: `application_type "native"`},
	{name: "web client on https loopback", body: `{"application_type":"web","redirect_uris":["https://127.0.0.1/cb"]}`, code: CodeInvalidRedirectURI, desc: "loopback"},
	{name: "web client with private-use scheme", body: `{"application_type":"web","redirect_uris":["com.example.app:/cb"]}`, code: CodeInvalidRedirectURI, desc: "private-use"},
	{name: "http on a public host", body: `{"application_type":"native","redirect_uris":["http://app.example.com/cb"]}`, code: CodeInvalidRedirectURI, desc: "must use https"},
	{name: "http on 127.0.0.2", body: `{"application_type":"native","redirect_uris":["http://127.0.0.2/cb"]}`, code: CodeInvalidRedirectURI, desc: "must use https"},
	{name: "javascript scheme", body: `{"application_type":"native","redirect_uris":["javascript:alert(1)"]}`, code: CodeInvalidRedirectURI, desc: "reverse-domain"},
	{name: "data scheme inferred native", body: `{"redirect_uris":["data:text/html,hi"]}`, code: CodeInvalidRedirectURI, desc: "reverse-domain"},
	{name: "fragment", body: `{"redirect_uris":["https://a.example/cb#x"]}`, code: CodeInvalidRedirectURI, desc: "fragment"},
	{name: "relative", body: `{"redirect_uris":["/cb"]}`, code: CodeInvalidRedirectURI, desc: "absolute"},
	{name: "userinfo", body: `{"redirect_uris":["https://good.example@evil.example/cb"]}`, code: CodeInvalidRedirectURI, desc: "userinfo"},
	{name: "https without host", body: `{"redirect_uris":["https:/cb"]}`, code: CodeInvalidRedirectURI, desc: "no host"},
	{name: "empty redirect string", body: `{"redirect_uris":[""]}`, code: CodeInvalidRedirectURI, desc: "empty"},
	{name: "missing redirect_uris", body: `{"client_name":"x"}`, code: CodeInvalidRedirectURI, desc: "redirect_uris is required"},
	{name: "empty redirect_uris", body: `{"redirect_uris":[]}`, code: CodeInvalidRedirectURI, desc: "redirect_uris is required"},
	{name: "redirect_uris not an array", body: `{"redirect_uris":"https://a.example/cb"}`, code: CodeInvalidRedirectURI, desc: "array of strings"},
	{name: "redirect_uris with a number", body: `{"redirect_uris":["https://a.example/cb",1]}`, code: CodeInvalidRedirectURI, desc: "array of strings"},
	{name: "too many redirect_uris", body: `{"redirect_uris":[` + strings.Repeat(`"https://a.example/cb",`, maxRedirectURIs) + `"https://a.example/cb"]}`, code: CodeInvalidRedirectURI, desc: "more than"},
	{name: "unknown application_type", body: `{"application_type":"desktop","redirect_uris":["https://a.example/cb"]}`, code: CodeInvalidClientMetadata, desc: "application_type"},
	{name: "private_key_jwt unsupported", body: `{"token_endpoint_auth_method":"private_key_jwt","redirect_uris":["https://a.example/cb"]}`, code: CodeInvalidClientMetadata, desc: "token_endpoint_auth_method"},
	{name: "implicit grant", body: `{"grant_types":["implicit"],"redirect_uris":["https://a.example/cb"]}`, code: CodeInvalidClientMetadata, desc: "grant_types"},
	{name: "refresh without code grant", body: `{"grant_types":["refresh_token"],"redirect_uris":["https://a.example/cb"]}`, code: CodeInvalidClientMetadata, desc: `must include "authorization_code"`},
	{name: "token response type alone", body: `{"response_types":["token"],"redirect_uris":["https://a.example/cb"]}`, code: CodeInvalidClientMetadata, desc: "response_types"},
	{name: "empty response types", body: `{"response_types":[],"redirect_uris":["https://a.example/cb"]}`, code: CodeInvalidClientMetadata, desc: "response_types"},
	{name: "client_name wrong type", body: `{"client_name":7,"redirect_uris":["https://a.example/cb"]}`, code: CodeInvalidClientMetadata, desc: "client_name must be a string"},
	{name: "scope wrong type", body: `{"scope":["a"],"redirect_uris":["https://a.example/cb"]}`, code: CodeInvalidClientMetadata, desc: "scope must be a string"},
	{name: "jwks wrong type", body: `{"jwks":"k","redirect_uris":["https://a.example/cb"]}`, code: CodeInvalidClientMetadata, desc: "jwks must be an object"},
	{name: "http client_uri", body: `{"client_uri":"http://a.example/","redirect_uris":["https://a.example/cb"]}`, code: CodeInvalidClientMetadata, desc: "client_uri must be an https URL"},
	{name: "javascript logo_uri", body: `{"logo_uri":"javascript:alert(1)","redirect_uris":["https://a.example/cb"]}`, code: CodeInvalidClientMetadata, desc: "logo_uri"},
	{name: "duplicate key", body: `{"redirect_uris":["https://a.example/cb"],"redirect_uris":["https://evil.example/cb"]}`, code: CodeInvalidClientMetadata, desc: "more than once"},
	{name: "nested duplicate key", body: `{"redirect_uris":["https://a.example/cb"],"jwks":{"keys":[],"keys":[]}}`, code: CodeInvalidClientMetadata, desc: "more than once"},
	{name: "case variant is a different member", body: `{"Redirect_URIs":["https://a.example/cb"]}`, code: CodeInvalidRedirectURI, desc: "redirect_uris is required"},
	{name: "array at top level", body: `[{"redirect_uris":["https://a.example/cb"]}]`, code: CodeInvalidClientMetadata, desc: "JSON object"},
	{name: "trailing data", body: `{"redirect_uris":["https://a.example/cb"]} {}`, code: CodeInvalidClientMetadata, desc: "after the JSON object"},
	{name: "truncated", body: `{"redirect_uris":["https://a.example/cb"]`, code: CodeInvalidClientMetadata, desc: "not a valid JSON object"},
	{name: "empty body", body: ``, code: CodeInvalidClientMetadata, desc: "not a valid JSON object"},
	{name: "invalid utf-8", body: "{\"client_name\":\"\xff\",\"redirect_uris\":[\"https://a.example/cb\"]}", code: CodeInvalidClientMetadata, desc: "UTF-8"},
	{name: "too deep", body: `{"x":` + strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth) + `,"redirect_uris":["https://a.example/cb"]}`, code: CodeInvalidClientMetadata, desc: "nests deeper"},
	{name: "oversize", body: `{"redirect_uris":["https://a.example/cb"],"x":"` + strings.Repeat("a", MaxRegistrationBytes) + `"}`, code: CodeInvalidClientMetadata, desc: "larger than"},
}

func TestParseRegistration(t *testing.T) {
	for _, tc := range registrationCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseRegistration([]byte(tc.body))
			checkResult(t, got, err, tc.code, tc.desc, tc.want)
		})
	}
}

func checkResult(t *testing.T, got Client, err error, code, desc string, want *Client) {
	t.Helper()
	if code == "" {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		if !equalClient(got, *want) {
			t.Fatalf("got %+v\nwant %+v", got, *want)
		}
		return
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("got %+v, %v; want *Error %s", got, err, code)
	}
	if e.Code != code || !strings.Contains(e.Description, desc) {
		t.Fatalf("got %s %q; want %s containing %q", e.Code, e.Description, code, desc)
	}
}

func equalClient(a, b Client) bool {
	return a.ClientID == b.ClientID && a.Name == b.Name && a.ClientURI == b.ClientURI && a.LogoURI == b.LogoURI &&
		slices.Equal(a.RedirectURIs, b.RedirectURIs) && a.TokenEndpointAuthMethod == b.TokenEndpointAuthMethod &&
		slices.Equal(a.GrantTypes, b.GrantTypes) && a.ApplicationType == b.ApplicationType
}

const docURL = "https://app.example.com/oauth/client.json"

var documentCases = []regCase{
	{
		name: "mcp spec example",
		body: `{"client_id":"` + docURL + `","client_name":"Example MCP Client","client_uri":"https://app.example.com","logo_uri":"https://app.example.com/logo.png","redirect_uris":["http://127.0.0.1:3000/callback","http://localhost:3000/callback"],"grant_types":["authorization_code"],"response_types":["code"],"token_endpoint_auth_method":"none"}`,
		want: &Client{ClientID: docURL, Name: "Example MCP Client", ClientURI: "https://app.example.com", LogoURI: "https://app.example.com/logo.png", RedirectURIs: []string{"http://127.0.0.1:3000/callback", "http://localhost:3000/callback"}, TokenEndpointAuthMethod: "none", GrantTypes: []string{"authorization_code"}, ApplicationType: "native"},
	},
	{
		name: "absent auth method means none",
		body: `{"client_id":"` + docURL + `","redirect_uris":["https://claude.example/api/mcp/auth_callback"],"grant_types":["authorization_code","refresh_token"]}`,
		want: &Client{ClientID: docURL, RedirectURIs: []string{"https://claude.example/api/mcp/auth_callback"}, TokenEndpointAuthMethod: "none", GrantTypes: []string{"authorization_code", "refresh_token"}, ApplicationType: "web"},
	},
	{name: "client_id missing", body: `{"redirect_uris":["https://a.example/cb"]}`, code: CodeInvalidClient, desc: "client_id"},
	{name: "client_id mismatch", body: `{"client_id":"https://app.example.com/oauth/client.json/","redirect_uris":["https://a.example/cb"]}`, code: CodeInvalidClient, desc: "does not equal"},
	{name: "client_id with default port", body: `{"client_id":"https://app.example.com:443/oauth/client.json","redirect_uris":["https://a.example/cb"]}`, code: CodeInvalidClient, desc: "does not equal"},
	{name: "client_id not a string", body: `{"client_id":1,"redirect_uris":["https://a.example/cb"]}`, code: CodeInvalidClient, desc: "client_id must be a string"},
	{name: "client_secret_basic", body: `{"client_id":"` + docURL + `","token_endpoint_auth_method":"client_secret_basic","redirect_uris":["https://a.example/cb"]}`, code: CodeInvalidClient, desc: "token_endpoint_auth_method"},
	{name: "client_secret_post", body: `{"client_id":"` + docURL + `","token_endpoint_auth_method":"client_secret_post","redirect_uris":["https://a.example/cb"]}`, code: CodeInvalidClient, desc: "token_endpoint_auth_method"},
	{name: "private_key_jwt", body: `{"client_id":"` + docURL + `","token_endpoint_auth_method":"private_key_jwt","redirect_uris":["https://a.example/cb"]}`, code: CodeInvalidClient, desc: "token_endpoint_auth_method"},
	{name: "client_secret present", body: `{"client_id":"` + docURL + `","client_secret":"s","redirect_uris":["https://a.example/cb"]}`, code: CodeInvalidClient, desc: "client_secret must not appear"},
	{name: "no redirect uris", body: `{"client_id":"` + docURL + `"}`, code: CodeInvalidClient, desc: "redirect_uris"},
	{name: "bad redirect uri", body: `{"client_id":"` + docURL + `","redirect_uris":["http://evil.example/cb"]}`, code: CodeInvalidClient, desc: "must use https"},
	{name: "duplicate client_id", body: `{"client_id":"` + docURL + `","client_id":"` + docURL + `","redirect_uris":["https://a.example/cb"]}`, code: CodeInvalidClient, desc: "more than once"},
}

func TestParseDocument(t *testing.T) {
	for _, tc := range documentCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseDocument(docURL, []byte(tc.body))
			checkResult(t, got, err, tc.code, tc.desc, tc.want)
		})
	}
}

func TestSanitizeName(t *testing.T) {
	long := strings.Repeat("é", maxNameRunes+10)
	for _, tc := range []struct{ in, want string }{
		{"Claude", "Claude"},
		{"  a \t\n b  ", "a b"},
		{"a\u0000b\u001bc\u007fd", "abcd"},
		{"pay\u202eLAP", "payLAP"},
		{"zero\u200bwidth\ufeff", "zerowidth"},
		{"line\u2028sep", "line sep"},
		{"<b>&amp;</b>", "<b>&amp;</b>"},
		{long, strings.Repeat("é", maxNameRunes)},
		{strings.Repeat("a", maxNameRunes-1) + " b", strings.Repeat("a", maxNameRunes-1)},
		{"", ""},
	} {
		if got := sanitizeName(tc.in); got != tc.want {
			t.Errorf("sanitizeName(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// checkClientInvariants is what every accepted client satisfies, whatever its source.
func checkClientInvariants(t *testing.T, c Client) {
	t.Helper()
	if len(c.RedirectURIs) == 0 || len(c.RedirectURIs) > maxRedirectURIs {
		t.Fatalf("redirect URIs %q", c.RedirectURIs)
	}
	if c.ApplicationType != ApplicationWeb && c.ApplicationType != ApplicationNative {
		t.Fatalf("application type %q", c.ApplicationType)
	}
	for i, u := range c.RedirectURIs {
		if d := checkRedirectURI(u, c.ApplicationType); d != "" {
			t.Fatalf("accepted redirect URI %q: %s", u, d)
		}
		if slices.Contains(c.RedirectURIs[:i], u) {
			t.Fatalf("duplicate redirect URI %q", u)
		}
		if !RedirectAllowed(c, u) {
			t.Fatalf("registered URI %q not allowed", u)
		}
	}
	switch c.TokenEndpointAuthMethod {
	case AuthNone, AuthClientSecretPost, AuthClientSecretBasic:
	default:
		t.Fatalf("auth method %q", c.TokenEndpointAuthMethod)
	}
	if !slices.Contains(c.GrantTypes, GrantAuthorizationCode) {
		t.Fatalf("grant types %q", c.GrantTypes)
	}
	for _, g := range c.GrantTypes {
		if g != GrantAuthorizationCode && g != GrantRefreshToken {
			t.Fatalf("grant types %q", c.GrantTypes)
		}
	}
	if !utf8.ValidString(c.Name) || utf8.RuneCountInString(c.Name) > maxNameRunes || strings.TrimSpace(c.Name) != c.Name || strings.Contains(c.Name, "  ") {
		t.Fatalf("name %q", c.Name)
	}
	for _, r := range c.Name {
		if unicode.Is(unicode.Cc, r) || unicode.Is(unicode.Cf, r) || (unicode.IsSpace(r) && r != ' ') {
			t.Fatalf("name %q has %U", c.Name, r)
		}
	}
	for _, u := range []string{c.ClientURI, c.LogoURI} {
		if u != "" && checkHTTPSURL(u) != "" {
			t.Fatalf("accepted URL %q", u)
		}
	}
}

func FuzzParseRegistration(f *testing.F) {
	for _, tc := range registrationCases {
		f.Add([]byte(tc.body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		c, err := ParseRegistration(body)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || (e.Code != CodeInvalidClientMetadata && e.Code != CodeInvalidRedirectURI) || e.Description == "" {
				t.Fatalf("error %#v", err)
			}
			return
		}
		if len(body) > MaxRegistrationBytes || !utf8.Valid(body) {
			t.Fatalf("accepted a body of %d bytes / invalid UTF-8", len(body))
		}
		if c.ClientID != "" {
			t.Fatalf("registration set client id %q", c.ClientID)
		}
		checkClientInvariants(t, c)
		again, err := ParseRegistration(body)
		if err != nil || !equalClient(c, again) {
			t.Fatalf("not deterministic: %+v / %+v, %v", c, again, err)
		}
	})
}

func FuzzParseDocument(f *testing.F) {
	for _, tc := range documentCases {
		f.Add(docURL, []byte(tc.body))
	}
	f.Add("https://127.0.0.1:1/x", []byte(`{"client_id":"https://127.0.0.1:1/x","redirect_uris":["com.example.app:/cb"]}`))
	f.Fuzz(func(t *testing.T, url string, body []byte) {
		c, err := parseDocument(url, body)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Code != CodeInvalidClient || e.Description == "" {
				t.Fatalf("error %#v", err)
			}
			return
		}
		if c.ClientID != url || c.TokenEndpointAuthMethod != AuthNone {
			t.Fatalf("accepted client id %q (url %q), auth %q", c.ClientID, url, c.TokenEndpointAuthMethod)
		}
		checkClientInvariants(t, c)
	})
}

func FuzzIsMetadataURL(f *testing.F) {
	for _, tc := range metadataURLCases {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !IsMetadataURL(s) {
			return
		}
		if !strings.HasPrefix(s, "https://") || strings.ContainsAny(s, "#\\ ") || hasUnsafeByte(s) {
			t.Fatalf("accepted %q", s)
		}
		u, err := parseURL(s)
		if err != nil || u.User != nil || u.Hostname() == "" || !strings.HasPrefix(u.EscapedPath(), "/") {
			t.Fatalf("accepted %q: %+v %v", s, u, err)
		}
		for _, seg := range strings.Split(u.Path, "/") {
			if seg == "." || seg == ".." {
				t.Fatalf("accepted dot segment in %q", s)
			}
		}
	})
}

func parseURL(s string) (*url.URL, error) { return url.Parse(s) }
