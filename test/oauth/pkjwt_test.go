package oauth_test

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/audit/file"
	"github.com/aacworkflow/aacmcp/shared/oauth/assertiontest"
	"github.com/aacworkflow/aacmcp/test/oauth/flow"
)

const assertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

var redirectLine = regexp.MustCompile(`(?m)^REDIRECT (.*)$`)

// TestChatGPTLikeClient is a client shaped like ChatGPT's: its metadata document,
// served over loopback HTTPS by the test's CA, names private_key_jwt with RS256 and
// a jwks_uri on the same host. A person signs in and consents in Chromium; the test
// is the client, and signs RS256 assertions with its own key. Before the code is
// redeemed, every hostile assertion is refused with invalid_client, each with its
// token_refused audit record, and none spends the code: it redeems afterwards
// (aud the token endpoint). Then /mcp answers, a refresh (aud the issuer) and a
// revocation work, and the revoked token's refusal names the client.
func TestChatGPTLikeClient(t *testing.T) {
	ca := flow.NewCA(t)
	docs := flow.StartCIMD(t, ca)
	srv := flow.Serve(t, flow.ServeOptions{Dev: true, Env: []string{"SSL_CERT_FILE=" + ca.WriteBundle(t)}})
	tokenURL := srv.Base + "/oauth/token"

	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	const kid = "cimd-20260428030119" // the shape of ChatGPT's key ids
	jwksURI := docs.PublishJSON(t, "chatgpt-jwks", jose.JSONWebKeySet{Keys: []jose.JSONWebKey{
		{Key: &key.PublicKey, KeyID: kid, Algorithm: "RS256", Use: "sig"}}})
	rd := flow.NewRedirect(t)
	clientID := docs.PublishJSON(t, "chatgpt", map[string]any{
		"client_name": "ChatGPT (e2e)", "client_uri": "https://chatgpt.example",
		"redirect_uris": []string{rd.URL}, "grant_types": []string{"authorization_code", "refresh_token"},
		"response_types": []string{"code"}, "token_endpoint_auth_method": "private_key_jwt",
		"token_endpoint_auth_signing_alg": "RS256", "jwks_uri": jwksURI,
		"token_endpoint_auth_methods_supported": []string{"none", "private_key_jwt"},
	})

	// The person's part, in Chromium.
	verifier := strings.Repeat("v", 50)
	authURL := flow.AuthorizationURL(srv.Base, clientID, rd.URL, "issues:read", "st-1", verifier)
	out, err := flow.NodeScript(t, "signin.mjs", []string{"AACMCP_AUTH_URL=" + authURL, "AACMCP_ANSWER=" + devAnswer,
		"AACMCP_SCOPES=" + scopesJSON(t)}, rd, 2*time.Minute)
	m := redirectLine.FindSubmatch(out)
	if err != nil || m == nil {
		t.Fatalf("node signin.mjs: %v\n%s\nserver log:\n%s", err, out, srv.Logs())
	}
	back, err := url.ParseQuery(string(m[1]))
	if err != nil || back.Get("code") == "" || back.Get("iss") != srv.Base {
		t.Fatalf("redirect %q: want a code and iss %s", m[1], srv.Base)
	}
	code := back.Get("code")

	n := 0
	claims := func(mod func(map[string]any)) map[string]any {
		n++
		now := time.Now()
		c := map[string]any{"iss": clientID, "sub": clientID, "aud": tokenURL, "iat": now.Unix(),
			"exp": now.Add(2 * time.Minute).Unix(), "jti": "e2e-" + strings.Repeat("j", n)}
		if mod != nil {
			mod(c)
		}
		return c
	}
	good := func(mod func(map[string]any)) string { return signRS256(t, key, kid, claims(mod)) }
	codeForm := func(assertion string) url.Values {
		return url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {rd.URL},
			"code_verifier": {verifier}, "client_id": {clientID},
			"client_assertion_type": {assertionType}, "client_assertion": {assertion}}
	}
	der, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})

	// A good assertion spent on a request with a wrong code: replaying it must fail
	// on its jti alone.
	spent := good(nil)
	wrong := codeForm(spent)
	wrong.Set("code", "not-the-code")
	if status, body := postForm(t, tokenURL, wrong); status != http.StatusBadRequest || body["error"] != "invalid_grant" {
		t.Fatalf("a good assertion with a wrong code: %d %v, want invalid_grant", status, body)
	}

	hostile := []struct{ name, assertion string }{
		{"another key", signRS256(t, other, kid, claims(nil))},
		{"another audience", good(func(c map[string]any) { c["aud"] = "https://elsewhere.example/oauth/token" })},
		{"expired", good(func(c map[string]any) {
			c["iat"], c["exp"] = time.Now().Add(-10*time.Minute).Unix(), time.Now().Add(-2*time.Minute).Unix()
		})},
		{"alg none", assertiontest.Forge(map[string]any{"alg": "none", "kid": kid}, claims(nil), func(string) []byte { return nil })},
		{"HS256 keyed with the public key", assertiontest.Forge(map[string]any{"alg": "HS256", "kid": kid}, claims(nil), func(in string) []byte {
			h := hmac.New(sha256.New, pubPEM)
			h.Write([]byte(in))
			return h.Sum(nil)
		})},
		{"another client's iss and sub", good(func(c map[string]any) {
			c["iss"], c["sub"] = docs.URL("someone-else"), docs.URL("someone-else")
		})},
		{"replayed jti", spent},
		{"no exp", good(func(c map[string]any) { delete(c, "exp") })},
		{"too long a lifetime", good(func(c map[string]any) { c["exp"] = time.Now().Add(time.Hour).Unix() })},
	}
	for _, tc := range hostile {
		t.Run(tc.name, func(t *testing.T) {
			if status, body := postForm(t, tokenURL, codeForm(tc.assertion)); status != http.StatusUnauthorized || body["error"] != "invalid_client" {
				t.Errorf("%d %v, want 401 invalid_client", status, body)
			}
		})
	}
	// No assertion at all: the document names private_key_jwt, so the client is
	// confidential.
	bare := codeForm("")
	bare.Del("client_assertion")
	bare.Del("client_assertion_type")
	if status, body := postForm(t, tokenURL, bare); status != http.StatusUnauthorized || body["error"] != "invalid_client" {
		t.Errorf("no assertion: %d %v, want 401 invalid_client", status, body)
	}

	// None of that spent the code.
	status, tok := postForm(t, tokenURL, codeForm(good(nil)))
	if status != http.StatusOK {
		t.Fatalf("redeem after the hostile assertions: %d %v\n%s", status, tok, srv.Logs())
	}
	access, _ := tok["access_token"].(string)
	if got := mcpStatus(t, srv.MCPURL, access); got != http.StatusOK {
		t.Fatalf("tools/list with the access token: HTTP %d", got)
	}
	// Refresh with aud the issuer.
	status, tok2 := postForm(t, tokenURL, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok["refresh_token"].(string)},
		"client_assertion_type": {assertionType}, "client_assertion": {good(func(c map[string]any) { c["aud"] = srv.Base })}})
	if status != http.StatusOK {
		t.Fatalf("refresh with aud the issuer: %d %v", status, tok2)
	}
	access2, _ := tok2["access_token"].(string)
	if got := mcpStatus(t, srv.MCPURL, access2); got != http.StatusOK {
		t.Fatalf("tools/list with the refreshed token: HTTP %d", got)
	}
	// Revocation, authenticated the same way.
	if status, body := postForm(t, srv.Base+"/oauth/revoke", url.Values{"token": {tok2["refresh_token"].(string)},
		"client_assertion_type": {assertionType}, "client_assertion": {good(nil)}}); status != http.StatusOK {
		t.Fatalf("revoke: %d %v", status, body)
	}
	if got := mcpStatus(t, srv.MCPURL, access2); got != http.StatusUnauthorized {
		t.Errorf("tools/list after the revocation: HTTP %d, want 401", got)
	}

	// Each record was appended before its answer was sent.
	recs, bad, err := file.ReadAll(srv.Data)
	if err != nil || len(bad) > 0 {
		t.Fatalf("audit log: %v, damaged lines %v", err, bad)
	}
	var revokedCalls int
	refused := map[string]int{} // by reason
	issued := map[string]bool{}
	for _, r := range recs {
		switch {
		case r.Action == audit.ActionTokenRefused && r.SourceIP == "127.0.0.1" && r.Outcome == audit.OutcomeDenied:
			// The one wrong-code request is invalid_grant; the rest invalid_client.
			if r.ClientID != clientID && r.ClientID != docs.URL("someone-else") {
				t.Errorf("token_refused record names client %q", r.ClientID)
			}
			refused[r.Reason]++
		case r.Action == audit.ActionTokenIssued || r.Action == audit.ActionTokenRefreshed:
			issued[r.Action] = r.ClientID == clientID
		case r.EventType == audit.EventToolCall && r.Reason == "invalid_token" && r.TokenID != "":
			if r.ClientID != clientID {
				t.Errorf("the revoked token's refusal names client %q, want %q", r.ClientID, clientID)
			}
			revokedCalls++
		}
	}
	// invalid_client is filed as invalid_token, invalid_grant as permission_denied.
	if want := map[string]int{"invalid_token": len(hostile) + 1, "permission_denied": 1}; !maps.Equal(refused, want) {
		t.Errorf("token_refused records by reason %v, want %v (each hostile assertion and the bare client_id; the wrong code)", refused, want)
	}
	if !issued[audit.ActionTokenIssued] || !issued[audit.ActionTokenRefreshed] {
		t.Errorf("token_issued and token_refreshed for the client: %v", issued)
	}
	if revokedCalls != 1 {
		t.Errorf("%d refused calls with the revoked token audited, want 1", revokedCalls)
	}
}

func signRS256(t *testing.T, key *rsa.PrivateKey, kid string, claims map[string]any) string {
	t.Helper()
	return assertiontest.Sign(t, jose.RS256, key, kid, claims)
}

func postForm(t *testing.T, u string, form url.Values) (int, map[string]any) {
	t.Helper()
	resp, err := http.PostForm(u, form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil && resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %d, body not JSON: %v", u, resp.StatusCode, err)
	}
	return resp.StatusCode, body
}
