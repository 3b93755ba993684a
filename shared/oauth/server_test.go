package oauth

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/store"
)

func TestMetadataEverywhere(t *testing.T) {
	h := newHarness(t)
	for _, tc := range []struct{ issuer, path string }{
		{"https://mcp.example", "/.well-known/oauth-authorization-server"},
		{"https://mcp.example", "/.well-known/openid-configuration"},
		{"https://api.example/prod", "/.well-known/oauth-authorization-server/prod"},
		{"https://api.example/prod", "/.well-known/openid-configuration/prod"},
		{"https://api.example/prod", "/prod/.well-known/openid-configuration"},
		{"https://api.example/prod", "/.well-known/oauth-authorization-server"}, // stage stripped by the mount
	} {
		w := httptest.NewRecorder()
		h.srv.ServeOAuth(w, httptest.NewRequest(http.MethodGet, tc.path, nil), tc.issuer)
		if w.Code != http.StatusOK {
			t.Fatalf("%s for %s: %d %s", tc.path, tc.issuer, w.Code, w.Body)
		}
		var m map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		want := map[string]any{
			"issuer":                                         tc.issuer,
			"authorization_endpoint":                         tc.issuer + "/oauth/authorize",
			"token_endpoint":                                 tc.issuer + "/oauth/token",
			"registration_endpoint":                          tc.issuer + "/oauth/register",
			"revocation_endpoint":                            tc.issuer + "/oauth/revoke",
			"client_id_metadata_document_supported":          true,
			"authorization_response_iss_parameter_supported": true,
		}
		for k, v := range want {
			if m[k] != v {
				t.Errorf("%s: %s = %v, want %v", tc.path, k, m[k], v)
			}
		}
		lists := map[string][]string{
			"response_types_supported":                   {"code"},
			"grant_types_supported":                      {"authorization_code", "refresh_token"},
			"code_challenge_methods_supported":           {"S256"},
			"token_endpoint_auth_methods_supported":      {"none", "client_secret_post", "client_secret_basic", "private_key_jwt"},
			"revocation_endpoint_auth_methods_supported": {"none", "client_secret_post", "client_secret_basic", "private_key_jwt"},
			"scopes_supported":                           auth.AllScopes,
			// Asymmetric only: never none or an HMAC.
			"token_endpoint_auth_signing_alg_values_supported":      {"RS256", "PS256", "ES256", "EdDSA"},
			"revocation_endpoint_auth_signing_alg_values_supported": {"RS256", "PS256", "ES256", "EdDSA"},
		}
		for k, v := range lists {
			var got []string
			for _, x := range m[k].([]any) {
				got = append(got, x.(string))
			}
			if !slices.Equal(got, v) {
				t.Errorf("%s: %s = %q, want %q", tc.path, k, got, v)
			}
		}
	}
}

// TestHappyPath is the whole life of a grant: registration, authorization through
// the dev sign-in and consent, the code, the verifier accepting the token, a refresh,
// and a revocation the verifier sees.
func TestHappyPath(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	id := h.publicClient("Test Client")
	b := h.browser()
	code := b.authorize(t, id, nativeRedirect, "bob", "", "issues:read", "issues:write")

	status, tok := h.redeem(id, code, nativeRedirect, "resource", h.issuer+"/mcp")
	if status != http.StatusOK {
		t.Fatalf("redeem: %d %v", status, tok)
	}
	if str(tok, "token_type") != "Bearer" || str(tok, "scope") != "issues:read issues:write" || tok["expires_in"] != float64(3600) {
		t.Fatalf("token response = %v", tok)
	}
	access, refresh := str(tok, "access_token"), str(tok, "refresh_token")
	if !strings.HasPrefix(access, auth.AccessTokenPrefix) || !auth.ValidRefreshFormat(refresh) {
		t.Fatalf("tokens %q / %q lack their prefixes", access, refresh)
	}
	p := h.mustVerify(access)
	if p.WorkspaceID != "demo" || p.UserID != "bob" || p.ClientID != id || !slices.Equal(p.Scopes, []string{"issues:read", "issues:write"}) {
		t.Fatalf("principal = %+v", p)
	}
	if !p.ExpiresAt.Equal(testEpoch.Add(time.Hour)) {
		t.Errorf("access token expires %v, want an hour from now", p.ExpiresAt)
	}
	rec, err := h.st.GetTokenByHash(ctx, auth.Hash(access))
	if err != nil || rec.Name != "oauth:Test Client" || rec.GrantID == "" {
		t.Fatalf("token record = %+v, %v", rec, err)
	}

	h.clock.Advance(30 * time.Minute)
	status, tok2 := h.refresh(id, refresh)
	if status != http.StatusOK {
		t.Fatalf("refresh: %d %v", status, tok2)
	}
	if str(tok2, "refresh_token") == refresh || str(tok2, "access_token") == access {
		t.Fatal("a refresh must rotate both tokens")
	}
	h.mustVerify(str(tok2, "access_token"))

	// The client revokes with its newest refresh token: the grant ends, with every
	// access token issued under it.
	status, body, _ := h.tokenCall("/oauth/revoke", url.Values{"token": {str(tok2, "refresh_token")}, "client_id": {id}})
	if status != http.StatusOK {
		t.Fatalf("revoke: %d %v", status, body)
	}
	h.mustRefuse(access, "revocation")
	h.mustRefuse(str(tok2, "access_token"), "revocation")
	if status, body := h.refresh(id, str(tok2, "refresh_token")); status != http.StatusBadRequest || str(body, "error") != "invalid_grant" {
		t.Fatalf("refresh after revocation: %d %v", status, body)
	}
	g, err := h.st.GetOAuthGrant(ctx, rec.GrantID)
	if err != nil || g.RevokedAt == nil {
		t.Fatalf("grant after revocation = %+v, %v", g, err)
	}

	// The refused refresh after the revocation is audited too.
	want := []string{audit.ActionClientRegistered, audit.ActionConsentGranted, audit.ActionTokenIssued, audit.ActionTokenRefreshed, audit.ActionGrantRevoked, audit.ActionTokenRefused}
	if got := h.sink.actions(); !slices.Equal(got, want) {
		t.Fatalf("audit actions = %q, want %q", got, want)
	}
	if r, _ := h.sink.last(audit.ActionTokenRefused); r.ClientID != id || r.Outcome != audit.OutcomeDenied || r.Reason != string(apperr.PermissionDenied) || r.SourceIP != "127.0.0.1" {
		t.Errorf("token_refused record = %+v, want client %s, denied, permission_denied (invalid_grant), from 127.0.0.1", r, id)
	}
	for _, r := range h.sink.recs {
		if r.EventType != audit.EventAuthorization || r.Transport != audit.TransportOAuth || r.ClientID != id || r.RequestID != "req-test" {
			t.Errorf("audit record %s = %+v", r.Action, r)
		}
	}
	issued, _ := h.sink.last(audit.ActionTokenIssued)
	if issued.WorkspaceID != "demo" || issued.UserID != "bob" || issued.TokenID != rec.TokenID || issued.ResourceID != g.ID {
		t.Errorf("token_issued record = %+v", issued)
	}
}

func TestAuthorizeRefusesBadClientsWithAPageAndNoRedirect(t *testing.T) {
	h := newHarness(t)
	id := h.publicClient("Good")
	lapsed := h.publicClient("Old")
	ctx := context.Background()
	// Lapse one registration: unused for more than 90 days, while the other is used.
	h.clock.Advance(store.OAuthClientLapse - time.Hour)
	if err := h.st.UpdateOAuthClientUsed(ctx, id, h.clock.Now()); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(2 * time.Hour)
	for _, tc := range []struct {
		name, url, want string
	}{
		{"no client_id", h.authzURL("", nativeRedirect), "client_id"},
		{"unknown client", h.authzURL("no-such-client", nativeRedirect), "unknown client_id"},
		{"lapsed registration", h.authzURL(lapsed, nativeRedirect), "lapse"},
		{"open redirect", h.authzURL(id, "https://evil.example/steal"), "is not one the client"},
		{"redirect with extra path", h.authzURL(id, nativeRedirect+"/x"), "is not one the client"},
		{"redirect on another loopback name", h.authzURL(id, "http://localhost:40123/callback"), "is not one the client"},
		{"no redirect_uri", h.authzURL(id, ""), "redirect_uri"},
		{"redirect and bad PKCE", h.authzURL(id, "https://evil.example/", withParam("code_challenge_method", "plain")), "is not one the client"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := h.rows()
			r := h.browser().get(tc.url)
			if r.status != http.StatusBadRequest || r.header.Get("Location") != "" {
				t.Fatalf("status %d, Location %q: an invalid client or redirect URI must get a page", r.status, r.header.Get("Location"))
			}
			if !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
				t.Errorf("Content-Type = %q", r.header.Get("Content-Type"))
			}
			contains(t, r.body, tc.want)
			if strings.Contains(r.body, "evil.example/steal\"") {
				t.Error("the page links to the attacker's URL")
			}
			sameRows(t, before, h.rows(), "a refused authorization")
		})
	}
}

func TestAuthorizeAllowListPolicy(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	listed := h.publicClient("Listed")
	unlisted := h.publicClient("Unlisted")
	if err := h.st.UpdateOAuthPolicy(ctx, store.OAuthPolicy{Mode: store.OAuthPolicyAllowlist, Allowed: []string{listed}}); err != nil {
		t.Fatal(err)
	}
	r := h.browser().get(h.authzURL(unlisted, nativeRedirect))
	if r.status != http.StatusBadRequest || r.header.Get("Location") != "" {
		t.Fatalf("unlisted client: %d %q", r.status, r.header.Get("Location"))
	}
	contains(t, r.body, "allows only listed clients", "aacmcp oauth clients allow")
	if r := h.browser().get(h.authzURL(listed, nativeRedirect)); r.status != http.StatusFound {
		t.Fatalf("listed client: %d %s", r.status, r.body)
	}
	// The policy also holds at the token endpoint: delisting ends refreshes.
	b := h.browser()
	code := b.authorize(t, listed, nativeRedirect, "bob", "", "issues:read")
	_, tok := h.redeem(listed, code, nativeRedirect)
	if err := h.st.UpdateOAuthPolicy(ctx, store.OAuthPolicy{Mode: store.OAuthPolicyAllowlist}); err != nil {
		t.Fatal(err)
	}
	if status, body := h.refresh(listed, str(tok, "refresh_token")); status != http.StatusUnauthorized || str(body, "error") != "invalid_client" {
		t.Fatalf("refresh of a delisted client: %d %v", status, body)
	}
}

func TestAuthorizeErrorsRedirectWithStateAndIss(t *testing.T) {
	h := newHarness(t)
	id := h.publicClient("C")
	for _, tc := range []struct {
		name string
		mod  func(url.Values)
		err  string
	}{
		{"implicit flow", withParam("response_type", "token"), "unsupported_response_type"},
		{"no PKCE", withParam("code_challenge", ""), "invalid_request"},
		{"PKCE plain", withParam("code_challenge_method", "plain"), "invalid_request"},
		{"PKCE method absent", withParam("code_challenge_method", ""), "invalid_request"},
		{"resource mismatch", withParam("resource", "https://other.example/mcp"), "invalid_target"},
		{"resource of another path", withParam("resource", "PLACEHOLDER/api"), "invalid_target"},
		{"unknown scope", withParam("scope", "issues:read admin:all"), "invalid_scope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := h.rows()
			u := h.authzURL(id, nativeRedirect, tc.mod)
			u = strings.ReplaceAll(u, "PLACEHOLDER", url.QueryEscape(h.issuer))
			r := h.browser().get(u)
			if r.status != http.StatusFound {
				t.Fatalf("status %d\n%s", r.status, r.body)
			}
			loc := r.location(t)
			q := loc.Query()
			if loc.Scheme+"://"+loc.Host+loc.Path != nativeRedirect || q.Get("error") != tc.err ||
				q.Get("state") != "st-123" || q.Get("iss") != h.issuer || q.Get("error_description") == "" {
				t.Fatalf("redirect %s, want error=%s with state, iss and a description", loc, tc.err)
			}
			if q.Get("code") != "" {
				t.Fatal("an error redirect carries a code")
			}
			sameRows(t, before, h.rows(), "a refused authorization")
		})
	}
}

func TestPKCEAtTheTokenEndpoint(t *testing.T) {
	h := newHarness(t)
	id := h.publicClient("C")
	code := h.browser().authorize(t, id, nativeRedirect, "bob", "", "issues:read")
	f := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {nativeRedirect}, "client_id": {id}}
	// No verifier at all: refused before the code is looked at, so it still works.
	if status, body, _ := h.tokenCall("/oauth/token", f); status != http.StatusBadRequest || str(body, "error") != "invalid_request" {
		t.Fatalf("no verifier: %d %v", status, body)
	}
	// The wrong verifier spends the code.
	status, body := h.redeem(id, code, nativeRedirect, "code_verifier", strings.Repeat("A", 43))
	if status != http.StatusBadRequest || str(body, "error") != "invalid_grant" || !strings.Contains(str(body, "error_description"), "code_verifier") {
		t.Fatalf("wrong verifier: %d %v", status, body)
	}
	if status, body := h.redeem(id, code, nativeRedirect); status != http.StatusBadRequest || str(body, "error") != "invalid_grant" {
		t.Fatalf("the right verifier after a wrong one: %d %v", status, body)
	}
}

func TestCodeBindings(t *testing.T) {
	h := newHarness(t)
	id := h.publicClient("C")
	other := h.publicClient("Other")
	for _, tc := range []struct {
		name    string
		client  string
		extra   []string
		errCode string
	}{
		{"another client", other, nil, "invalid_grant"},
		{"another redirect_uri", id, []string{"redirect_uri", nativeRedirect + "?x"}, "invalid_grant"},
		{"resource mismatch", id, []string{"resource", "https://other.example/mcp"}, "invalid_target"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code := h.browser().authorize(t, id, nativeRedirect, "bob", "", "issues:read")
			before := h.rows()["tokens"]
			status, body := h.redeem(tc.client, code, nativeRedirect, tc.extra...)
			if status != http.StatusBadRequest || str(body, "error") != tc.errCode {
				t.Fatalf("%d %v, want %s", status, body, tc.errCode)
			}
			if h.rows()["tokens"] != before {
				t.Fatal("a refused redemption stored a token")
			}
		})
	}
	t.Run("expired", func(t *testing.T) {
		code := h.browser().authorize(t, id, nativeRedirect, "bob", "", "issues:read")
		h.clock.Advance(CodeTTL + time.Second)
		if status, body := h.redeem(id, code, nativeRedirect); status != http.StatusBadRequest || str(body, "error") != "invalid_grant" {
			t.Fatalf("expired code: %d %v", status, body)
		}
	})
}

func TestCodeReplayRevokesTheGrant(t *testing.T) {
	h := newHarness(t)
	id := h.publicClient("C")
	code := h.browser().authorize(t, id, nativeRedirect, "bob", "", "issues:read")
	status, tok := h.redeem(id, code, nativeRedirect)
	if status != http.StatusOK {
		t.Fatalf("redeem: %d %v", status, tok)
	}
	h.mustVerify(str(tok, "access_token"))
	status, body := h.redeem(id, code, nativeRedirect)
	if status != http.StatusBadRequest || str(body, "error") != "invalid_grant" || !strings.Contains(str(body, "error_description"), "already used") {
		t.Fatalf("replayed code: %d %v", status, body)
	}
	h.mustRefuse(str(tok, "access_token"), "a code replay")
	if status, _ := h.refresh(id, str(tok, "refresh_token")); status != http.StatusBadRequest {
		t.Fatalf("refresh after a code replay: %d", status)
	}
	if _, ok := h.sink.last(audit.ActionGrantRevoked); !ok {
		t.Fatal("the revocation after a code replay is not audited")
	}
}

func TestRefreshReplayRevokesTheGrant(t *testing.T) {
	h := newHarness(t)
	id := h.publicClient("C")
	code := h.browser().authorize(t, id, nativeRedirect, "bob", "", "issues:read")
	_, tok1 := h.redeem(id, code, nativeRedirect)
	status, tok2 := h.refresh(id, str(tok1, "refresh_token"))
	if status != http.StatusOK {
		t.Fatalf("refresh: %d %v", status, tok2)
	}
	// The first refresh token comes back: a thief's copy, or the client's.
	status, body := h.refresh(id, str(tok1, "refresh_token"))
	if status != http.StatusBadRequest || str(body, "error") != "invalid_grant" || !strings.Contains(str(body, "error_description"), "already used") {
		t.Fatalf("reused refresh token: %d %v", status, body)
	}
	if status, _ := h.refresh(id, str(tok2, "refresh_token")); status != http.StatusBadRequest {
		t.Fatalf("the current refresh token still works after a reuse: %d", status)
	}
	h.mustRefuse(str(tok1, "access_token"), "a refresh reuse")
	h.mustRefuse(str(tok2, "access_token"), "a refresh reuse")
	r, ok := h.sink.last(audit.ActionRefreshReuseDetected)
	if !ok || r.Outcome != audit.OutcomeDenied || r.UserID != "bob" {
		t.Fatalf("refresh_reuse_detected record = %+v, %v", r, ok)
	}
}

func TestRefreshScopes(t *testing.T) {
	h := newHarness(t)
	id := h.publicClient("C")
	other := h.publicClient("Other")
	code := h.browser().authorize(t, id, nativeRedirect, "bob", "", "issues:read", "comments:read")
	_, tok := h.redeem(id, code, nativeRedirect)
	rt := str(tok, "refresh_token")

	if status, body := h.refresh(id, rt, "scope", "issues:read issues:write"); status != http.StatusBadRequest || str(body, "error") != "invalid_scope" {
		t.Fatalf("widening refresh: %d %v", status, body)
	}
	if status, body := h.refresh(other, rt); status != http.StatusBadRequest || str(body, "error") != "invalid_grant" {
		t.Fatalf("another client's refresh: %d %v", status, body)
	}
	if status, body := h.refresh(id, rt, "resource", "https://other.example/mcp"); status != http.StatusBadRequest || str(body, "error") != "invalid_target" {
		t.Fatalf("refresh for another resource: %d %v", status, body)
	}
	status, narrow := h.refresh(id, rt, "scope", "issues:read")
	if status != http.StatusOK || str(narrow, "scope") != "issues:read" {
		t.Fatalf("narrowing refresh: %d %v", status, narrow)
	}
	if p := h.mustVerify(str(narrow, "access_token")); !slices.Equal(p.Scopes, []string{"issues:read"}) {
		t.Fatalf("narrowed token scopes = %q", p.Scopes)
	}
	// Narrowed means narrowed: the grant does not widen back.
	if status, body := h.refresh(id, str(narrow, "refresh_token"), "scope", "comments:read"); status != http.StatusBadRequest || str(body, "error") != "invalid_scope" {
		t.Fatalf("widening after narrowing: %d %v", status, body)
	}
}

func TestRefreshStopsWhenTheMembershipGoes(t *testing.T) {
	h := newHarness(t)
	id := h.publicClient("C")
	_, tok := h.redeem(id, h.browser().authorize(t, id, nativeRedirect, "bob", "", "issues:read"), nativeRedirect)
	if err := h.st.DeleteMember(context.Background(), "demo", "bob"); err != nil {
		t.Fatal(err)
	}
	if status, body := h.refresh(id, str(tok, "refresh_token")); status != http.StatusBadRequest || !strings.Contains(str(body, "error_description"), "no longer a member") {
		t.Fatalf("refresh of a removed member: %d %v", status, body)
	}
}

func TestConfidentialClientAuthentication(t *testing.T) {
	h := newHarness(t)
	id, secret := h.register(map[string]any{
		"client_name": "Web", "redirect_uris": []string{webRedirect},
		"token_endpoint_auth_method": "client_secret_basic", "grant_types": []string{"authorization_code", "refresh_token"},
	})
	if secret == "" {
		t.Fatal("a confidential registration returned no secret")
	}
	code := h.browser().authorize(t, id, webRedirect, "bob", "", "issues:read")
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {webRedirect}, "code_verifier": {testVerifier}}

	for _, tc := range []struct {
		name  string
		form  url.Values
		basic []string
	}{
		{"wrong secret", form, []string{id, secret + "x"}},
		{"no secret", withForm(form, "client_id", id), nil},
		{"post instead of basic", withForm(withForm(form, "client_id", id), "client_secret", secret), nil},
	} {
		status, body, hdr := h.tokenCall("/oauth/token", tc.form, tc.basic...)
		if status != http.StatusUnauthorized || str(body, "error") != "invalid_client" || !strings.HasPrefix(hdr.Get("WWW-Authenticate"), "Basic") {
			t.Fatalf("%s: %d %v %q", tc.name, status, body, hdr.Get("WWW-Authenticate"))
		}
	}
	status, body, _ := h.tokenCall("/oauth/token", form, id, secret)
	if status != http.StatusOK {
		t.Fatalf("right secret: %d %v", status, body)
	}
}

func withForm(v url.Values, k, val string) url.Values {
	out := url.Values{}
	for kk, vv := range v {
		out[kk] = slices.Clone(vv)
	}
	out.Set(k, val)
	return out
}

func TestTokenEndpointRefusals(t *testing.T) {
	h := newHarness(t)
	id := h.publicClient("C")
	req, _ := http.NewRequest(http.MethodPost, h.issuer+"/oauth/token", strings.NewReader(`{"grant_type":"authorization_code"}`))
	req.Header.Set("Content-Type", "application/json")
	if status, body, _ := h.doJSON(req); status != http.StatusBadRequest || str(body, "error") != "invalid_request" {
		t.Fatalf("JSON body: %d %v", status, body)
	}
	req, _ = http.NewRequest(http.MethodGet, h.issuer+"/oauth/token", nil)
	if status, _, hdr := h.doJSON(req); status != http.StatusMethodNotAllowed || hdr.Get("Allow") != "POST" {
		t.Fatalf("GET: %d %q", status, hdr.Get("Allow"))
	}
	for _, tc := range []struct {
		form url.Values
		want string
	}{
		{url.Values{"grant_type": {"password"}, "client_id": {id}}, "unsupported_grant_type"},
		{url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"aar_nonsense"}, "client_id": {id}}, "invalid_grant"},
		{url.Values{"grant_type": {"authorization_code"}, "code": {"nope"}, "redirect_uri": {nativeRedirect}, "code_verifier": {testVerifier}, "client_id": {id}}, "invalid_grant"},
		{url.Values{"grant_type": {"authorization_code"}, "code": {"nope"}, "redirect_uri": {nativeRedirect}, "code_verifier": {testVerifier}, "client_id": {"ghost"}}, "invalid_client"},
	} {
		status, body, _ := h.tokenCall("/oauth/token", tc.form)
		if str(body, "error") != tc.want || str(body, "error_description") == "" || status == http.StatusOK {
			t.Errorf("%v: %d %v, want %s with a description", tc.form, status, body, tc.want)
		}
	}
}

var checkboxRE = regexp.MustCompile(`<input type="checkbox" id="scope-([a-z:]+)" name="scope" value="([a-z:]+)"( checked)?>\s*<label for="scope-([a-z:]+)">([^<]*)</label>`)

type box struct {
	name    string
	checked bool
}

func checkboxes(t *testing.T, body string) []box {
	t.Helper()
	var out []box
	for _, m := range checkboxRE.FindAllStringSubmatch(body, -1) {
		if m[1] != m[2] || m[2] != m[4] || m[5] != m[2] {
			t.Errorf("checkbox %q is labelled %q: the label must be exactly the scope name", m[2], m[5])
		}
		out = append(out, box{m[2], m[3] != ""})
	}
	return out
}

func TestConsentPageContract(t *testing.T) {
	h := newHarness(t)
	id := h.publicClient("Contract Client")
	b := h.browser()
	page := b.signIn(t, h.authzURL(id, nativeRedirect, withParam("scope", "issues:write issues:read")), "bob")
	if page.status != http.StatusOK {
		t.Fatalf("consent: %d %s", page.status, page.body)
	}
	if got := checkboxes(t, page.body); !slices.Equal(got, []box{{"issues:read", true}, {"issues:write", true}}) {
		t.Fatalf("checkboxes = %v, want the two requested, checked", got)
	}
	contains(t, page.body,
		`<button type="submit" name="action" value="allow" class="allow">Allow</button>`,
		`<button type="submit" name="action" value="deny" class="deny">Deny</button>`,
		"Contract Client", "127.0.0.1:40123", // the client and the host it sends the browser to
		"delete_issue", "destructive", "create_issue", "list_issues")
	if strings.Contains(page.body, `<select`) {
		t.Error("bob has one workspace: no chooser")
	}
	if strings.Contains(page.body, "<script") {
		t.Error("the consent page has a script")
	}
	csp := page.header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "style-src 'self'", "form-action 'self' http://127.0.0.1:40123", "frame-ancestors 'none'", "base-uri 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	if page.header.Get("X-Frame-Options") != "DENY" || page.header.Get("Cache-Control") != "no-store" {
		t.Errorf("framing and caching headers: %q %q", page.header.Get("X-Frame-Options"), page.header.Get("Cache-Control"))
	}

	// A person who belongs to several workspaces gets a labelled chooser; a client
	// asking for nothing gets all seven scopes offered, reads checked.
	ab := h.browser()
	page = ab.signIn(t, h.authzURL(id, nativeRedirect), "alice")
	contains(t, page.body, `<label for="workspace">Workspace</label>`, `<select id="workspace" name="workspace">`, `value="demo"`, `value="other"`)
	var want []box
	for _, s := range auth.AllScopes {
		want = append(want, box{s, strings.HasSuffix(s, ":read")})
	}
	if got := checkboxes(t, page.body); !slices.Equal(got, want) {
		t.Fatalf("checkboxes for an empty scope = %v, want %v", got, want)
	}
	r := ab.consent(t, page, "allow", "other", "comments:read")
	if r.status != http.StatusSeeOther {
		t.Fatalf("consent: %d %s", r.status, r.body)
	}
	_, tok := h.redeem(id, r.location(t).Query().Get("code"), nativeRedirect)
	if p := h.mustVerify(str(tok, "access_token")); p.WorkspaceID != "other" || !slices.Equal(p.Scopes, []string{"comments:read"}) {
		t.Fatalf("principal = %+v: the chosen workspace and the ticked scopes only", p)
	}
}

func TestConsentEscapesClientSuppliedStrings(t *testing.T) {
	h := newHarness(t)
	id := h.publicClient(`<script>alert("x")</script><img src=x onerror=alert(1)>`)
	page := h.browser().signIn(t, h.authzURL(id, nativeRedirect, withParam("state", `"><script>alert(2)</script>`)), "bob")
	if page.status != http.StatusOK {
		t.Fatalf("consent: %d", page.status)
	}
	if strings.Contains(page.body, "<script") || strings.Contains(page.body, "<img") {
		t.Fatalf("client-supplied markup reached the page:\n%s", page.body)
	}
	contains(t, page.body, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;")
}

func TestConsentCSRF(t *testing.T) {
	h := newHarness(t)
	id := h.publicClient("C")
	b := h.browser()
	page := b.signIn(t, h.authzURL(id, nativeRedirect, withParam("scope", "issues:read")), "bob")
	f := hidden(t, page.body)
	f.Set("action", "allow")
	f.Set("scope", "issues:read")

	before := h.rows()
	for name, csrf := range map[string]string{"missing": "", "forged": randomString()} {
		g := withForm(f, "csrf", csrf)
		if r := b.post("/oauth/consent", g); r.status != http.StatusForbidden || r.header.Get("Location") != "" {
			t.Fatalf("%s CSRF token: %d %q", name, r.status, r.header.Get("Location"))
		}
	}
	sameRows(t, before, h.rows(), "a consent POST without its CSRF token")

	// The page still works after the forgeries, once.
	r := b.post("/oauth/consent", f)
	if r.status != http.StatusSeeOther || r.location(t).Query().Get("code") == "" {
		t.Fatalf("genuine consent: %d %s", r.status, r.body)
	}
	before = h.rows()
	if r := b.post("/oauth/consent", f); r.status != http.StatusBadRequest || r.header.Get("Location") != "" {
		t.Fatalf("replayed consent: %d %q", r.status, r.header.Get("Location"))
	}
	sameRows(t, before, h.rows(), "a replayed consent POST")

	// Another browser cannot use the request even with the token.
	page = b.signIn(t, h.authzURL(id, nativeRedirect), "bob")
	f = hidden(t, page.body)
	f.Set("action", "allow")
	if r := h.browser().post("/oauth/consent", f); r.status != http.StatusForbidden {
		t.Fatalf("consent from another browser: %d", r.status)
	}
	if r := h.browser().get("/oauth/consent?request=" + url.QueryEscape(f.Get("request"))); r.status != http.StatusForbidden {
		t.Fatalf("consent page in another browser: %d", r.status)
	}
}

func TestConsentDeny(t *testing.T) {
	h := newHarness(t)
	id := h.publicClient("C")
	b := h.browser()
	page := b.signIn(t, h.authzURL(id, nativeRedirect, withParam("scope", "issues:read")), "bob")
	before := h.rows()
	r := b.consent(t, page, "deny", "", "issues:read")
	q := r.location(t).Query()
	if r.status != http.StatusSeeOther || q.Get("error") != "access_denied" || q.Get("state") != "st-123" || q.Get("iss") != h.issuer || q.Get("code") != "" {
		t.Fatalf("deny: %d %v", r.status, q)
	}
	after := h.rows()
	for k, v := range after {
		if strings.Contains(k, "grant") || strings.Contains(k, "code") || k == "tokens" {
			if before[k] != v {
				t.Errorf("deny changed %s", k)
			}
		}
	}
	if rec, ok := h.sink.last(audit.ActionConsentDenied); !ok || rec.Outcome != audit.OutcomeDenied || rec.UserID != "bob" {
		t.Fatalf("consent_denied record = %+v, %v", rec, ok)
	}
	// Unticking everything is a refusal too.
	page = b.signIn(t, h.authzURL(id, nativeRedirect, withParam("scope", "issues:read")), "bob")
	r = b.consent(t, page, "allow", "")
	if q := r.location(t).Query(); q.Get("error") != "access_denied" {
		t.Fatalf("allow with nothing ticked: %v", q)
	}
}

func TestStepUpShowsOnlyTheAddedScopes(t *testing.T) {
	h := newHarness(t)
	id := h.publicClient("C")
	b := h.browser()
	_, tok := h.redeem(id, b.authorize(t, id, nativeRedirect, "bob", "", "issues:read"), nativeRedirect)
	h.mustVerify(str(tok, "access_token"))

	// The client met 403 insufficient_scope and asks for issues:write.
	page := b.signIn(t, h.authzURL(id, nativeRedirect, withParam("scope", "issues:read issues:write")), "bob")
	if got := checkboxes(t, page.body); !slices.Equal(got, []box{{"issues:write", true}}) {
		t.Fatalf("step-up checkboxes = %v, want only issues:write", got)
	}
	contains(t, page.body, "Already allowed", "<code>issues:read</code>", "Additional access requested")
	r := b.consent(t, page, "allow", "", "issues:write")
	status, tok2 := h.redeem(id, r.location(t).Query().Get("code"), nativeRedirect)
	if status != http.StatusOK || str(tok2, "scope") != "issues:read issues:write" {
		t.Fatalf("step-up token: %d %v, want the union", status, tok2)
	}
}

func TestRegistration(t *testing.T) {
	h := newHarness(t, func(_ *harness, c *Config) { c.RegistrationLimit = 3 })
	status, body, _ := h.postJSON("/oauth/register", map[string]any{
		"client_name": "Reg", "redirect_uris": []string{nativeRedirect}, "application_type": "native", "token_endpoint_auth_method": "none",
	})
	if status != http.StatusCreated || str(body, "client_id") == "" || body["client_id_issued_at"] != float64(testEpoch.Unix()) ||
		str(body, "client_name") != "Reg" || str(body, "token_endpoint_auth_method") != "none" || body["client_secret"] != nil {
		t.Fatalf("registration: %d %v", status, body)
	}
	if rec, ok := h.sink.last(audit.ActionClientRegistered); !ok || rec.ClientID != str(body, "client_id") {
		t.Fatalf("client_registered record = %+v, %v", rec, ok)
	}

	before := h.rows()
	status, body, _ = h.postJSON("/oauth/register", map[string]any{"client_name": "Bad", "redirect_uris": []string{"http://evil.example/cb"}})
	if status != http.StatusBadRequest || !strings.HasPrefix(str(body, "error"), "invalid_") || str(body, "error_description") == "" {
		t.Fatalf("web client with an http redirect: %d %v", status, body)
	}
	req, _ := http.NewRequest(http.MethodPost, h.issuer+"/oauth/register", strings.NewReader(`{"redirect_uris":`))
	req.Header.Set("Content-Type", "application/json")
	if status, body, _ := h.doJSON(req); status != http.StatusBadRequest || str(body, "error") != "invalid_client_metadata" {
		t.Fatalf("truncated JSON: %d %v", status, body)
	}
	after := h.rows()
	for k, v := range after {
		if strings.Contains(k, "client") && before[k] != v {
			t.Errorf("a refused registration changed %s", k)
		}
	}
	// The fourth attempt in the hour is throttled.
	status, body, hdr := h.postJSON("/oauth/register", map[string]any{"client_name": "More", "redirect_uris": []string{nativeRedirect}, "application_type": "native"})
	if status != http.StatusTooManyRequests || hdr.Get("Retry-After") == "" || str(body, "error") == "" {
		t.Fatalf("over the limit: %d %v %q", status, body, hdr.Get("Retry-After"))
	}
	h.clock.Advance(time.Hour)
	if status, body, _ := h.postJSON("/oauth/register", map[string]any{"client_name": "Later", "redirect_uris": []string{nativeRedirect}, "application_type": "native"}); status != http.StatusCreated {
		t.Fatalf("the next hour: %d %v", status, body)
	}
}

func TestRevocationEndpoint(t *testing.T) {
	h := newHarness(t)
	id := h.publicClient("C")
	other := h.publicClient("Other")
	_, tok := h.redeem(id, h.browser().authorize(t, id, nativeRedirect, "bob", "", "issues:read"), nativeRedirect)
	access := str(tok, "access_token")

	for name, form := range map[string]url.Values{
		"unknown token":         {"token": {"aar_unknown"}, "client_id": {id}},
		"personal token":        {"token": {"aac_whatever"}, "client_id": {id}},
		"another client's":      {"token": {access}, "client_id": {other}},
		"another client's hint": {"token": {str(tok, "refresh_token")}, "token_type_hint": {"refresh_token"}, "client_id": {other}},
	} {
		if status, body, _ := h.tokenCall("/oauth/revoke", form); status != http.StatusOK {
			t.Fatalf("%s: %d %v", name, status, body)
		}
	}
	h.mustVerify(access) // nobody but its own client can revoke it
	if status, body, _ := h.tokenCall("/oauth/revoke", url.Values{"token": {access}}); status != http.StatusUnauthorized || str(body, "error") != "invalid_client" {
		t.Fatalf("revocation without a client: %d %v", status, body)
	}
	if status, _, _ := h.tokenCall("/oauth/revoke", url.Values{"token": {access}, "client_id": {id}}); status != http.StatusOK {
		t.Fatalf("revoke access token: %d", status)
	}
	h.mustRefuse(access, "revoking it")
	if status, _ := h.refresh(id, str(tok, "refresh_token")); status != http.StatusBadRequest {
		t.Fatal("revoking the access token leaves its grant's refresh token working")
	}
}

func TestGrantsPage(t *testing.T) {
	h := newHarness(t)
	id := h.publicClient("Grants Client")
	_, tok := h.redeem(id, h.browser().authorize(t, id, nativeRedirect, "alice", "other", "issues:read"), nativeRedirect)
	h.redeem(id, h.browser().authorize(t, id, nativeRedirect, "bob", "", "comments:read"), nativeRedirect)

	b := h.browser()
	r := b.get("/oauth/grants")
	if r.status != http.StatusFound {
		t.Fatalf("grants without a session: %d", r.status)
	}
	signin := b.get(r.location(t).String())
	f := hidden(t, signin.body)
	f.Set("user", "alice")
	r = b.post("/oauth/signin", f)
	page := b.get(r.location(t).String())
	if page.status != http.StatusOK {
		t.Fatalf("grants page: %d %s", page.status, page.body)
	}
	contains(t, page.body, "Grants Client", "other", "issues:read", "Revoke")
	if ck := sessionCookieOf(page.header); ck == nil || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/oauth" {
		t.Fatalf("session cookie = %+v", ck)
	}
	form := hidden(t, page.body)
	// Without the CSRF token nothing happens.
	if r := b.post("/oauth/grants/revoke", withForm(form, "csrf", "")); r.status != http.StatusForbidden {
		t.Fatalf("revoke without CSRF: %d", r.status)
	}
	h.mustVerify(str(tok, "access_token"))
	// Another person's session cannot revoke alice's grant.
	bob := h.browser()
	r = bob.get("/oauth/grants")
	sp := bob.get(r.location(t).String())
	bf := hidden(t, sp.body)
	bf.Set("user", "bob")
	bobPage := bob.get(bob.post("/oauth/signin", bf).location(t).String())
	if strings.Contains(bobPage.body, "issues:read") || !strings.Contains(bobPage.body, "comments:read") {
		t.Fatalf("bob's page shows other grants than his own:\n%s", bobPage.body)
	}
	if r := bob.post("/oauth/grants/revoke", withForm(hidden(t, bobPage.body), "grant", form.Get("grant"))); r.status != http.StatusNotFound {
		t.Fatalf("bob revoking alice's grant: %d", r.status)
	}
	h.mustVerify(str(tok, "access_token"))

	r = b.post("/oauth/grants/revoke", form)
	if r.status != http.StatusSeeOther {
		t.Fatalf("revoke: %d %s", r.status, r.body)
	}
	h.mustRefuse(str(tok, "access_token"), "the person revoked the grant")
	after := b.get(r.location(t).String())
	contains(t, after.body, "Access revoked")
	if strings.Contains(after.body, "Grants Client") {
		t.Fatal("the revoked grant is still listed")
	}
}

func sessionCookieOf(h http.Header) *http.Cookie {
	for _, c := range (&http.Response{Header: h}).Cookies() {
		if c.Name == sessionCookie {
			return c
		}
	}
	return nil
}

func TestBrowserCookieAttributes(t *testing.T) {
	h := newHarness(t)
	id := h.publicClient("C")
	r := h.browser().get(h.authzURL(id, nativeRedirect))
	var ck *http.Cookie
	for _, c := range (&http.Response{Header: r.header}).Cookies() {
		if c.Name == browserCookie {
			ck = c
		}
	}
	if ck == nil || !ck.HttpOnly || ck.SameSite != http.SameSiteLaxMode || ck.Path != "/oauth" || ck.Secure {
		t.Fatalf("browser cookie on an http issuer = %+v", ck)
	}
	// An https issuer's cookies are Secure.
	w := httptest.NewRecorder()
	// (localhost: the dev sign-in is refused to a public name.)
	h.srv.ServeOAuth(w, httptest.NewRequest(http.MethodGet, h.authzURL(id, nativeRedirect), nil), "https://localhost/prod")
	cs := w.Result().Cookies()
	if w.Code != http.StatusFound || len(cs) != 1 || !cs[0].Secure || cs[0].Path != "/prod/oauth" {
		t.Fatalf("https issuer: %d cookies %+v", w.Code, cs)
	}
}

func TestNoSignInConfigured(t *testing.T) {
	h := newHarness(t, func(_ *harness, c *Config) { c.Dev = false })
	id := h.publicClient("C")
	before := h.rows()
	r := h.browser().get(h.authzURL(id, nativeRedirect))
	if r.status != http.StatusServiceUnavailable || r.header.Get("Location") != "" {
		t.Fatalf("no sign-in method: %d %q", r.status, r.header.Get("Location"))
	}
	contains(t, r.body, "no identity provider")
	sameRows(t, before, h.rows(), "an authorization with no sign-in")
	if r := h.browser().get("/oauth/signin?request=x"); r.status != http.StatusNotFound {
		t.Fatalf("dev sign-in without --dev: %d", r.status)
	}
}

func TestAuditFailureIssuesNothing(t *testing.T) {
	h := newHarness(t)
	id := h.publicClient("C")
	code := h.browser().authorize(t, id, nativeRedirect, "bob", "", "issues:read")
	h.sink.mu.Lock()
	h.sink.fail = true
	h.sink.mu.Unlock()
	status, body := h.redeem(id, code, nativeRedirect)
	if status != http.StatusInternalServerError || str(body, "error") != "server_error" || body["access_token"] != nil {
		t.Fatalf("redeem with a failing audit sink: %d %v", status, body)
	}
}

func TestDevSignInRefusals(t *testing.T) {
	h := newHarness(t)
	id := h.publicClient("C")
	b := h.browser()
	page := b.get(b.get(h.authzURL(id, nativeRedirect)).location(t).String())
	contains(t, page.body,
		`<button type="submit" name="user" value="alice">alice</button>`,
		`<button type="submit" name="user" value="bob">bob</button>`)
	f := hidden(t, page.body)
	f.Set("user", "bob")
	before := h.rows()
	for name, g := range map[string]url.Values{
		"no CSRF token": withForm(f, "csrf", ""),
		"forged token":  withForm(f, "csrf", randomString()),
		"not a member":  withForm(f, "user", "mallory"),
		"no user":       withForm(f, "user", ""),
	} {
		if r := b.post("/oauth/signin", g); r.status < 400 || r.header.Get("Location") != "" {
			t.Errorf("%s: %d %q", name, r.status, r.header.Get("Location"))
		}
	}
	if r := h.browser().post("/oauth/signin", f); r.status != http.StatusForbidden {
		t.Errorf("sign-in from another browser: %d", r.status)
	}
	sameRows(t, before, h.rows(), "a refused sign-in")
	if r := b.post("/oauth/signin", f); r.status != http.StatusSeeOther {
		t.Fatalf("genuine sign-in after the refusals: %d %s", r.status, r.body)
	}
	if r := b.post("/oauth/signin", f); r.status != http.StatusConflict {
		t.Fatalf("second sign-in to one request: %d", r.status)
	}
}

// Two submissions of one consent form, or two refreshes with one refresh token, at
// the same time: exactly one wins.
func TestConcurrentSingleUse(t *testing.T) {
	h := newHarness(t)
	id := h.publicClient("C")
	b := h.browser()
	page := b.signIn(t, h.authzURL(id, nativeRedirect, withParam("scope", "issues:read")), "bob")
	f := hidden(t, page.body)
	f.Set("action", "allow")
	f.Set("scope", "issues:read")
	const n = 8
	codes := make(chan int, n)
	for range n {
		go func() { codes <- b.post("/oauth/consent", f).status }()
	}
	won := 0
	for range n {
		if <-codes == http.StatusSeeOther {
			won++
		}
	}
	if won != 1 {
		t.Fatalf("%d of %d concurrent consent POSTs succeeded, want exactly 1", won, n)
	}

	_, tok := h.redeem(id, b.authorize(t, id, nativeRedirect, "bob", "", "issues:read"), nativeRedirect)
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {str(tok, "refresh_token")}, "client_id": {id}}
	for range n {
		go func() {
			status, _, _ := h.tokenCall("/oauth/token", form)
			codes <- status
		}()
	}
	won = 0
	for range n {
		if <-codes == http.StatusOK {
			won++
		}
	}
	if won != 1 {
		t.Fatalf("%d of %d concurrent refreshes succeeded, want exactly 1", won, n)
	}
}

func TestEveryPageCarriesTheSecurityHeaders(t *testing.T) {
	h := newHarness(t)
	id := h.publicClient("C")
	b := h.browser()
	signin := b.get(b.get(h.authzURL(id, nativeRedirect)).location(t).String())
	for name, r := range map[string]response{
		"sign-in":         signin,
		"error page":      h.browser().get(h.authzURL("nobody", nativeRedirect)),
		"unknown request": h.browser().get("/oauth/consent?request=nope"),
	} {
		csp := r.header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "default-src 'none'") ||
			r.header.Get("X-Frame-Options") != "DENY" || r.header.Get("Cache-Control") != "no-store" ||
			r.header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s headers: %v", name, r.header)
		}
		if strings.Contains(r.body, "<script") {
			t.Errorf("%s has a script", name)
		}
	}
	css := b.get("/oauth/style.css")
	if css.status != http.StatusOK || !strings.HasPrefix(css.header.Get("Content-Type"), "text/css") {
		t.Fatalf("style.css: %d %q", css.status, css.header.Get("Content-Type"))
	}
}

// The dev sign-in page lets anyone act as any member, so a dev server reached by a
// public name (a tunnel or proxy in front of a loopback listener) refuses it, both at
// the authorization request and on the page itself.
func TestDevSigninOnlyOnLoopbackIssuer(t *testing.T) {
	h := newHarness(t)
	clientID, _ := h.register(map[string]any{"redirect_uris": []string{nativeRedirect}, "token_endpoint_auth_method": "none", "client_name": "Tunnelled"})
	before := h.rows()
	for _, path := range []string{
		"/oauth/authorize?" + url.Values{"response_type": {"code"}, "client_id": {clientID}, "redirect_uri": {nativeRedirect},
			"code_challenge": {testChallenge}, "code_challenge_method": {"S256"}, "state": {"s"}}.Encode(),
		"/oauth/signin?request=anything",
	} {
		for _, issuer := range []string{"https://mcp.example.com", "http://10.0.0.7:8080", "http://127.0.0.1.nip.example:8080"} {
			rec := httptest.NewRecorder()
			h.srv.ServeOAuth(rec, httptest.NewRequest(http.MethodGet, path, nil), issuer)
			if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "--oidc-issuer") || rec.Header().Get("Location") != "" {
				t.Errorf("GET %s as %s: status %d, Location %q, want a 403 page naming --oidc-issuer:\n%s", path, issuer, rec.Code, rec.Header().Get("Location"), rec.Body.String())
			}
		}
	}
	if after := h.rows(); !maps.Equal(before, after) {
		t.Errorf("refused requests stored something: %v -> %v", before, after)
	}
	for _, issuer := range []string{"http://localhost:8080", "http://[::1]:8080", h.issuer} {
		if !loopbackIssuer(issuer) {
			t.Errorf("loopbackIssuer(%q) = false", issuer)
		}
	}
}

// A process that verifies tokens itself is told which access tokens a revocation
// ended, so it can drop them from its cache (aacmcp serve does).
func TestRevocationTellsOnRevoke(t *testing.T) {
	var told [][]string
	h := newHarness(t, func(_ *harness, c *Config) { c.OnRevoke = func(ids []string) { told = append(told, ids) } })
	id := h.publicClient("C")
	code := h.browser().authorize(t, id, nativeRedirect, "bob", "", "issues:read")
	_, tok := h.redeem(id, code, nativeRedirect)
	p := h.mustVerify(str(tok, "access_token"))
	if status, _ := h.redeem(id, code, nativeRedirect); status != http.StatusBadRequest { // a replay revokes the grant
		t.Fatalf("replayed code: %d", status)
	}
	if len(told) != 1 || !slices.Equal(told[0], []string{p.TokenID}) {
		t.Fatalf("OnRevoke was told %v, want [[%s]]", told, p.TokenID)
	}
}
