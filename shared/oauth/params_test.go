package oauth

import (
	"encoding/base64"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

// A valid PKCE pair (RFC 7636 appendix B).
const (
	testVerifier  = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
	testChallenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
)

func TestS256MatchesRFC7636(t *testing.T) {
	if got := s256(testVerifier); got != testChallenge {
		t.Fatalf("s256 = %q, want the RFC 7636 appendix B challenge %q", got, testChallenge)
	}
	if !verifierMatches(testVerifier, testChallenge) || verifierMatches(testVerifier+"x", testChallenge) {
		t.Fatal("verifierMatches does not tell the right verifier from a wrong one")
	}
}

func TestParseScope(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		err  ErrorCode
	}{
		{"", nil, ""},
		{"   ", nil, ""},
		{"issues:read", []string{"issues:read"}, ""},
		{"issues:write issues:read issues:write", []string{"issues:read", "issues:write"}, ""},
		{"issues:read  comments:read", []string{"comments:read", "issues:read"}, ""},
		{"issues:read,comments:read", nil, ErrInvalidScope}, // the separator is a space
		{"openid", nil, ErrInvalidScope},
		{"issues:read\tcomments:read", nil, ErrInvalidScope},
		{"ISSUES:READ", nil, ErrInvalidScope},
		{strings.Repeat("issues:read ", 200), nil, ErrInvalidScope},
	} {
		got, e := parseScope(tc.in)
		if errCode(e) != tc.err {
			t.Errorf("parseScope(%q) error = %v, want %q", tc.in, e, tc.err)
			continue
		}
		if e == nil && !slices.Equal(got, tc.want) {
			t.Errorf("parseScope(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func errCode(e *Error) ErrorCode {
	if e == nil {
		return ""
	}
	return e.Code
}

func authzQuery(mods ...func(url.Values)) url.Values {
	v := url.Values{
		"response_type":         {"code"},
		"code_challenge":        {testChallenge},
		"code_challenge_method": {"S256"},
		"state":                 {"xyz"},
	}
	for _, m := range mods {
		m(v)
	}
	return v
}

func TestParseAuthorizeParams(t *testing.T) {
	set := func(k string, vals ...string) func(url.Values) {
		return func(v url.Values) { v[k] = vals }
	}
	del := func(k string) func(url.Values) { return func(v url.Values) { delete(v, k) } }
	for _, tc := range []struct {
		name  string
		q     url.Values
		err   ErrorCode
		state string
	}{
		{"minimal", authzQuery(), "", "xyz"},
		{"with scope and resource", authzQuery(set("scope", "issues:read issues:write"), set("resource", "https://x/mcp")), "", "xyz"},
		{"token response type", authzQuery(set("response_type", "token")), ErrUnsupportedResponseType, "xyz"},
		{"no response type", authzQuery(del("response_type")), ErrInvalidRequest, "xyz"},
		{"missing challenge", authzQuery(del("code_challenge")), ErrInvalidRequest, "xyz"},
		{"plain", authzQuery(set("code_challenge_method", "plain")), ErrInvalidRequest, "xyz"},
		{"method absent means plain", authzQuery(del("code_challenge_method")), ErrInvalidRequest, "xyz"},
		{"s256 lowercase", authzQuery(set("code_challenge_method", "s256")), ErrInvalidRequest, "xyz"},
		{"short challenge", authzQuery(set("code_challenge", testChallenge[:42])), ErrInvalidRequest, "xyz"},
		{"challenge with padding", authzQuery(set("code_challenge", testChallenge[:42]+"=")), ErrInvalidRequest, "xyz"},
		{"repeated challenge", authzQuery(set("code_challenge", testChallenge, testChallenge)), ErrInvalidRequest, "xyz"},
		{"unknown scope", authzQuery(set("scope", "issues:read admin")), ErrInvalidScope, "xyz"},
		{"repeated scope", authzQuery(set("scope", "issues:read", "issues:write")), ErrInvalidScope, "xyz"},
		{"two resources", authzQuery(set("resource", "https://a/mcp", "https://b/mcp")), ErrInvalidTarget, "xyz"},
		{"repeated state", authzQuery(set("state", "a", "b")), ErrInvalidRequest, ""},
		{"huge state", authzQuery(set("state", strings.Repeat("s", 3000))), ErrInvalidRequest, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, e := parseAuthorizeParams(tc.q)
			if errCode(e) != tc.err {
				t.Fatalf("error = %v, want %q", e, tc.err)
			}
			if p.State != tc.state {
				t.Errorf("state = %q, want %q (an error redirect must carry a readable state)", p.State, tc.state)
			}
			if e == nil && p.CodeChallenge != testChallenge {
				t.Errorf("challenge = %q", p.CodeChallenge)
			}
		})
	}
}

func tokenForm(kv ...string) url.Values {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Add(kv[i], kv[i+1])
	}
	return v
}

func TestParseTokenRequest(t *testing.T) {
	code := []string{"grant_type", "authorization_code", "code", "c", "redirect_uri", "https://app/cb", "code_verifier", testVerifier}
	refresh := []string{"grant_type", "refresh_token", "refresh_token", "aar_x"}
	for _, tc := range []struct {
		name string
		form url.Values
		err  ErrorCode
	}{
		{"code", tokenForm(code...), ""},
		{"refresh", tokenForm(refresh...), ""},
		{"refresh narrowing", tokenForm(append(refresh, "scope", "issues:read")...), ""},
		{"refresh unknown scope", tokenForm(append(refresh, "scope", "everything")...), ErrInvalidScope},
		{"no grant type", tokenForm("code", "c"), ErrInvalidRequest},
		{"password grant", tokenForm("grant_type", "password"), ErrUnsupportedGrantType},
		{"client credentials", tokenForm("grant_type", "client_credentials"), ErrUnsupportedGrantType},
		{"no verifier", tokenForm(code[:6]...), ErrInvalidRequest},
		{"short verifier", tokenForm(append(code[:6], "code_verifier", "abc")...), ErrInvalidRequest},
		{"verifier with space", tokenForm(append(code[:6], "code_verifier", strings.Repeat("a", 42)+" ")...), ErrInvalidRequest},
		{"no redirect_uri", tokenForm("grant_type", "authorization_code", "code", "c", "code_verifier", testVerifier), ErrInvalidRequest},
		{"repeated code", tokenForm(append(code, "code", "d")...), ErrInvalidRequest},
		{"two resources", tokenForm(append(code, "resource", "a", "resource", "b")...), ErrInvalidTarget},
		{"no refresh token", tokenForm("grant_type", "refresh_token"), ErrInvalidRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, e := parseTokenRequest(tc.form)
			if errCode(e) != tc.err {
				t.Fatalf("error = %v, want %q", e, tc.err)
			}
		})
	}
}

func TestParseClientAuth(t *testing.T) {
	basic := func(id, secret string) string {
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(id)+":"+url.QueryEscape(secret)))
	}
	for _, tc := range []struct {
		name   string
		header string
		form   url.Values
		want   clientCredentials
		err    ErrorCode
	}{
		{"none", "", tokenForm("client_id", "abc"), clientCredentials{ID: "abc", Method: authNone}, ""},
		{"post", "", tokenForm("client_id", "abc", "client_secret", "s"), clientCredentials{ID: "abc", Secret: "s", Method: authSecretPost}, ""},
		{"basic", basic("abc", "s:e/cret"), nil, clientCredentials{ID: "abc", Secret: "s:e/cret", Method: authSecretBasic}, ""},
		{"basic with matching form id", basic("abc", "s"), tokenForm("client_id", "abc"), clientCredentials{ID: "abc", Secret: "s", Method: authSecretBasic}, ""},
		{"basic with other form id", basic("abc", "s"), tokenForm("client_id", "xyz"), clientCredentials{}, ErrInvalidRequest},
		{"basic and post", basic("abc", "s"), tokenForm("client_secret", "s"), clientCredentials{}, ErrInvalidRequest},
		{"bearer header", "Bearer aao_x", nil, clientCredentials{}, ErrInvalidClient},
		{"bad base64", "Basic !!!", nil, clientCredentials{}, ErrInvalidClient},
		{"nothing", "", nil, clientCredentials{}, ErrInvalidClient},
		{"repeated client_id", "", tokenForm("client_id", "a", "client_id", "b"), clientCredentials{}, ErrInvalidRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, e := parseClientAuth(tc.header, tc.form)
			if errCode(e) != tc.err {
				t.Fatalf("error = %v, want %q", e, tc.err)
			}
			if got != tc.want {
				t.Errorf("credentials = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestParseConsentForm(t *testing.T) {
	for _, tc := range []struct {
		name   string
		form   url.Values
		allow  bool
		scopes []string
		err    ErrorCode
	}{
		{"allow", tokenForm("request", "r", "csrf", "c", "action", "allow", "scope", "issues:write", "scope", "issues:read", "scope", "issues:read"), true, []string{"issues:read", "issues:write"}, ""},
		{"deny", tokenForm("request", "r", "action", "deny"), false, nil, ""},
		{"no action", tokenForm("request", "r"), false, nil, ErrInvalidRequest},
		{"odd action", tokenForm("request", "r", "action", "maybe"), false, nil, ErrInvalidRequest},
		{"two actions", tokenForm("request", "r", "action", "allow", "action", "deny"), false, nil, ErrInvalidRequest},
		{"no request", tokenForm("action", "allow"), false, nil, ErrInvalidRequest},
		{"unknown scope", tokenForm("request", "r", "action", "allow", "scope", "root"), false, nil, ErrInvalidScope},
		{"two scopes in one box", tokenForm("request", "r", "action", "allow", "scope", "issues:read issues:write"), false, nil, ErrInvalidScope},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, e := parseConsentForm(tc.form)
			if errCode(e) != tc.err {
				t.Fatalf("error = %v, want %q", e, tc.err)
			}
			if e == nil && (f.Allow != tc.allow || !slices.Equal(f.Scopes, tc.scopes)) {
				t.Errorf("form = %+v, want allow=%v scopes=%q", f, tc.allow, tc.scopes)
			}
		})
	}
}

func TestRoute(t *testing.T) {
	for _, tc := range []struct {
		path, issuer, want string
	}{
		{"/.well-known/oauth-authorization-server", "http://127.0.0.1:8080", wellKnownAS},
		{"/.well-known/openid-configuration", "http://127.0.0.1:8080", wellKnownAS},
		{"/.well-known/oauth-authorization-server/prod", "https://x.example/prod", wellKnownAS},
		{"/.well-known/openid-configuration/prod", "https://x.example/prod", wellKnownAS},
		{"/prod/.well-known/openid-configuration", "https://x.example/prod", wellKnownAS},
		{"/.well-known/oauth-authorization-server", "https://x.example/prod", wellKnownAS},
		{"/prod/oauth/token", "https://x.example/prod", pathToken},
		{"/oauth/token", "https://x.example/prod", pathToken},
		{"/oauth/grants/revoke", "http://h", pathGrantsRevoke},
		{"/.well-known/oauth-authorization-server/other", "https://x.example/prod", ""},
		{"/oauth/tokens", "http://h", ""},
		{"/mcp", "http://h", ""},
		{"/prodoauth/token", "https://x.example/prod", ""},
	} {
		got, ok := route(tc.path, tc.issuer)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("route(%q, %q) = %q, %v; want %q", tc.path, tc.issuer, got, ok, tc.want)
		}
	}
}

func TestOriginOf(t *testing.T) {
	for in, want := range map[string]string{
		"https://app.example/cb?x=1":    "https://app.example",
		"http://127.0.0.1:33418/cb":     "http://127.0.0.1:33418",
		"cursor://anysphere.cursor/cb":  "cursor:",
		"com.example.app:/oauth2redir":  "com.example.app:",
		"https://a.example;script-src*": "",
		"":                              "",
	} {
		if got := originOf(in); got != want {
			t.Errorf("originOf(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestQuoteNeutralisesControlCharacters(t *testing.T) {
	got := quote("a\r\nb\"c" + strings.Repeat("x", 100))
	if strings.ContainsAny(got[1:len(got)-1], "\r\n\"") || !strings.HasSuffix(got, `..."`) {
		t.Fatalf("quote = %q", got)
	}
}

func TestExpiredTokenIDs(t *testing.T) {
	now := testEpoch
	old := newTokenID(now.Add(-MaxAccessTokenTTL - time.Millisecond))
	fresh := newTokenID(now.Add(-MaxAccessTokenTTL + time.Second))
	got := expiredTokenIDs([]string{old, fresh, "tok_not-a-ulid", "personal"}, now)
	if !slices.Equal(got, []string{old}) {
		t.Fatalf("expiredTokenIDs = %q, want only the one minted more than 24 h ago", got)
	}
}
