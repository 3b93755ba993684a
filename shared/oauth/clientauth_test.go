package oauth

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/oauth/assertiontest"
	"github.com/aacworkflow/aacmcp/shared/oauth/clientmeta"
)

// keyDocs serves a private_key_jwt client's metadata document at /client.json and
// its key set at /jwks.json over loopback HTTPS, and counts the key set's fetches.
type keyDocs struct {
	mu     sync.Mutex
	jwks   []byte
	hits   int
	id     string
	jwksAt string
}

func (k *keyDocs) setKeys(keys ...jose.JSONWebKey) {
	b, _ := json.Marshal(jose.JSONWebKeySet{Keys: keys})
	k.mu.Lock()
	k.jwks = b
	k.mu.Unlock()
}

func (k *keyDocs) fetches() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.hits
}

// withKeyDocument is withDocument for a client that authenticates with
// private_key_jwt; extra members are added to the document.
func withKeyDocument(k *keyDocs, extra map[string]any) option {
	return func(h *harness, c *Config) {
		var ts *httptest.Server
		ts = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Cache-Control", "max-age=300")
			switch r.URL.Path {
			case "/client.json":
				d := map[string]any{"client_id": ts.URL + "/client.json", "client_name": "ChatGPT-like",
					"redirect_uris": []string{nativeRedirect}, "grant_types": []string{"authorization_code", "refresh_token"},
					"token_endpoint_auth_method": "private_key_jwt", "token_endpoint_auth_signing_alg": "RS256",
					"token_endpoint_auth_methods_supported": []string{"none", "private_key_jwt"},
					"jwks_uri":                              ts.URL + "/jwks.json"}
				for key, v := range extra {
					d[key] = v
				}
				_ = json.NewEncoder(w).Encode(d)
			case "/jwks.json":
				k.mu.Lock()
				k.hits++
				b := k.jwks
				k.mu.Unlock()
				_, _ = w.Write(b)
			default:
				http.NotFound(w, r)
			}
		}))
		h.t.Cleanup(ts.Close)
		k.id, k.jwksAt = ts.URL+"/client.json", ts.URL+"/jwks.json"
		pool := x509.NewCertPool()
		pool.AddCert(ts.Certificate())
		c.Clients = clientmeta.NewFetcher(clientmeta.Options{AllowLoopback: true, RootCAs: pool, Now: h.clock.Now})
	}
}

var (
	keyOnce         sync.Once
	rsaKey, rsaKey2 *rsa.PrivateKey
)

// testKeys are two RSA keys, made once for the package's tests (2048-bit
// generation is slow under -race).
func testKeys(t *testing.T) (*rsa.PrivateKey, *rsa.PrivateKey) {
	t.Helper()
	keyOnce.Do(func() {
		rsaKey, _ = rsa.GenerateKey(rand.Reader, 2048)
		rsaKey2, _ = rsa.GenerateKey(rand.Reader, 2048)
	})
	if rsaKey == nil || rsaKey2 == nil {
		t.Fatal("RSA key generation failed")
	}
	return rsaKey, rsaKey2
}

func publicJWK(k *rsa.PrivateKey, kid string) jose.JSONWebKey {
	return jose.JSONWebKey{Key: &k.PublicKey, KeyID: kid, Algorithm: string(jose.RS256), Use: "sig"}
}

var (
	sign     = assertiontest.Sign
	handMade = assertiontest.Forge
)

// assertionForm is a token endpoint form authenticated by assertion.
func assertionForm(a string, kv ...string) url.Values {
	f := url.Values{"client_assertion_type": {assertionTypeJWT}, "client_assertion": {a}}
	for i := 0; i+1 < len(kv); i += 2 {
		f.Set(kv[i], kv[i+1])
	}
	return f
}

// TestPrivateKeyJWT drives a ChatGPT-like client (its document names private_key_jwt
// and a jwks_uri) through a code, a refresh and a revocation, with aud the token
// endpoint and the issuer. Before the code is redeemed, every hostile assertion is
// refused with invalid_client and an audit record, and the code survives them all.
func TestPrivateKeyJWT(t *testing.T) {
	key, other := testKeys(t)
	k := &keyDocs{}
	k.setKeys(publicJWK(key, "k1"))
	h := newHarness(t, withKeyDocument(k, nil))
	id := k.id
	code := h.browser().authorize(t, id, nativeRedirect, "bob", "", "issues:read")
	tokenURL := h.issuer + "/oauth/token"

	jti := 0
	claims := func(mod func(map[string]any)) map[string]any {
		jti++
		now := h.clock.Now()
		c := map[string]any{"iss": id, "sub": id, "aud": tokenURL, "iat": now.Unix(),
			"exp": now.Add(2 * time.Minute).Unix(), "jti": "jti-" + strings.Repeat("x", jti)}
		if mod != nil {
			mod(c)
		}
		return c
	}
	good := func(mod func(map[string]any)) string { return sign(t, jose.RS256, key, "k1", claims(mod)) }
	redeemWith := func(form url.Values) (int, map[string]any) {
		t.Helper()
		form.Set("grant_type", "authorization_code")
		form.Set("code", code)
		form.Set("redirect_uri", nativeRedirect)
		form.Set("code_verifier", testVerifier)
		status, body, _ := h.tokenCall("/oauth/token", form)
		return status, body
	}

	// Spent by a request whose assertion was good but whose code was not: replaying
	// it later must fail on the jti alone.
	spent := good(nil)
	if status, body, _ := h.tokenCall("/oauth/token", assertionForm(spent, "grant_type", "authorization_code",
		"code", "not-a-code", "redirect_uri", nativeRedirect, "code_verifier", testVerifier)); status != http.StatusBadRequest || str(body, "error") != "invalid_grant" {
		t.Fatalf("a good assertion with an unknown code: %d %v, want invalid_grant", status, body)
	}

	pubPEM := func() []byte {
		der, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
		return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	}()
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	hostile := []struct {
		name string
		form url.Values
		want string // a fragment of error_description
	}{
		{"no assertion (the client is confidential)", url.Values{"client_id": {id}}, "authenticates with private_key_jwt"},
		{"another key, same kid", assertionForm(sign(t, jose.RS256, other, "k1", claims(nil))), "does not verify"},
		{"another audience", assertionForm(good(func(c map[string]any) { c["aud"] = "https://elsewhere.example/token" })), "aud must be"},
		{"expired", assertionForm(good(func(c map[string]any) {
			c["iat"], c["exp"] = h.clock.Now().Add(-10*time.Minute).Unix(), h.clock.Now().Add(-time.Minute).Unix()
		})), "expired"},
		{"alg none", assertionForm(handMade(map[string]any{"alg": "none", "kid": "k1"}, claims(nil),
			func(string) []byte { return nil })), "RS256, PS256, ES256 or EdDSA"},
		{"HS256 keyed with the public key", assertionForm(handMade(map[string]any{"alg": "HS256", "kid": "k1"}, claims(nil),
			func(in string) []byte { m := hmac.New(sha256.New, pubPEM); m.Write([]byte(in)); return m.Sum(nil) })), "RS256, PS256, ES256 or EdDSA"},
		{"ES256, which the document does not name", assertionForm(sign(t, jose.ES256, ec, "k1", claims(nil))), "names RS256"},
		{"another client's iss and sub", assertionForm(good(func(c map[string]any) {
			c["iss"], c["sub"] = "https://other.example/client.json", "https://other.example/client.json"
		}), "client_id", id), "iss and sub"},
		{"another client's sub, no client_id", assertionForm(good(func(c map[string]any) { c["sub"] = "c_someone_else" })), "unknown client_id"},
		{"replayed jti", assertionForm(spent), "already used"},
		{"no exp", assertionForm(good(func(c map[string]any) { delete(c, "exp") })), "no exp"},
		{"too long a lifetime", assertionForm(good(func(c map[string]any) { c["exp"] = h.clock.Now().Add(time.Hour).Unix() })), "more than 5 minutes"},
		{"no jti", assertionForm(good(func(c map[string]any) { delete(c, "jti") })), "jti"},
		{"wrong assertion type", func() url.Values {
			f := assertionForm(good(nil))
			f.Set("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:saml2-bearer")
			return f
		}(), "client_assertion_type"},
	}
	before := h.rows()
	refusedBefore := countAction(h.sink, audit.ActionTokenRefused)
	for _, tc := range hostile {
		t.Run(tc.name, func(t *testing.T) {
			status, body := redeemWith(tc.form)
			if status != http.StatusUnauthorized || str(body, "error") != "invalid_client" || !strings.Contains(str(body, "error_description"), tc.want) {
				t.Fatalf("%d %v, want 401 invalid_client mentioning %q", status, body, tc.want)
			}
			r, _ := h.sink.last(audit.ActionTokenRefused)
			if r.Reason != string(apperr.InvalidToken) || r.Outcome != audit.OutcomeDenied || r.SourceIP != "127.0.0.1" || r.ClientID == "" {
				t.Errorf("audit record %+v, want token_refused, denied, invalid_token, with the client and 127.0.0.1", r)
			}
		})
	}
	if got := countAction(h.sink, audit.ActionTokenRefused) - refusedBefore; got != len(hostile) {
		t.Errorf("%d token_refused records for %d refusals", got, len(hostile))
	}
	// Nothing but the used assertions' jtis was written: no code spent, no token.
	after := h.rows()
	for table, n := range after {
		if table != "oauth_assertions" && before[table] != n {
			t.Errorf("the refusals changed %s from %d to %d rows", table, before[table], n)
		}
	}

	// The code still redeems, with aud the token endpoint.
	status, tok := redeemWith(assertionForm(good(nil)))
	if status != http.StatusOK {
		t.Fatalf("redeem with a good assertion after the hostile ones: %d %v", status, tok)
	}
	if p := h.mustVerify(str(tok, "access_token")); p.ClientID != id {
		t.Fatalf("principal client %q, want %q", p.ClientID, id)
	}
	// A refresh with aud the issuer, and with no client_id (the sub names it).
	status, tok2, _ := h.tokenCall("/oauth/token", assertionForm(good(func(c map[string]any) { c["aud"] = h.issuer }),
		"grant_type", "refresh_token", "refresh_token", str(tok, "refresh_token")))
	if status != http.StatusOK {
		t.Fatalf("refresh with aud the issuer: %d %v", status, tok2)
	}
	// A refresh without an assertion is refused: the client is confidential.
	if status, body := h.refresh(id, str(tok2, "refresh_token")); status != http.StatusUnauthorized || str(body, "error") != "invalid_client" {
		t.Fatalf("refresh with only client_id: %d %v, want invalid_client", status, body)
	}
	// A revocation without an assertion is refused and audited; with one it works.
	if status, body, _ := h.tokenCall("/oauth/revoke", url.Values{"token": {str(tok2, "refresh_token")}, "client_id": {id}}); status != http.StatusUnauthorized || str(body, "error") != "invalid_client" {
		t.Fatalf("revoke with only client_id: %d %v", status, body)
	}
	if r, ok := h.sink.last(audit.ActionRevocationRefused); !ok || r.ClientID != id || r.Reason != string(apperr.InvalidToken) {
		t.Errorf("revocation_refused record %+v (found %v)", r, ok)
	}
	if status, body, _ := h.tokenCall("/oauth/revoke", assertionForm(good(nil), "token", str(tok2, "refresh_token"))); status != http.StatusOK {
		t.Fatalf("revoke with an assertion: %d %v", status, body)
	}
	h.mustRefuse(str(tok2, "access_token"), "the revocation")
	if n := k.fetches(); n != 1 {
		t.Errorf("the key set was fetched %d times, want once (cached)", n)
	}
}

func countAction(m *memSink, action string) int {
	n := 0
	for _, a := range m.actions() {
		if a == action {
			n++
		}
	}
	return n
}

// TestPrivateKeyJWTKeyRotation: an assertion naming a kid the cached set lacks
// fetches the set again once, and a second unknown kid soon after does not.
func TestPrivateKeyJWTKeyRotation(t *testing.T) {
	key, next := testKeys(t)
	k := &keyDocs{}
	k.setKeys(publicJWK(key, "old"))
	h := newHarness(t, withKeyDocument(k, nil))
	code := h.browser().authorize(t, k.id, nativeRedirect, "bob", "", "issues:read")
	assert := func(signer *rsa.PrivateKey, kid, jti string) url.Values {
		now := h.clock.Now()
		return assertionForm(sign(t, jose.RS256, signer, kid, map[string]any{"iss": k.id, "sub": k.id,
			"aud": h.issuer + "/oauth/token", "exp": now.Add(time.Minute).Unix(), "jti": jti}),
			"grant_type", "authorization_code", "code", code, "redirect_uri", nativeRedirect, "code_verifier", testVerifier)
	}
	// The first use fetches the set (a good assertion, a wrong code: the real one
	// stays unspent).
	first := assert(key, "old", "first")
	first.Set("code", "not-the-code")
	if status, body, _ := h.tokenCall("/oauth/token", first); status != http.StatusBadRequest || k.fetches() != 1 {
		t.Fatalf("a known kid: %d %v, %d fetches, want invalid_grant after 1", status, body, k.fetches())
	}
	// Later, a kid the cached set lacks fetches it once more.
	h.clock.Advance(time.Minute)
	if status, body, _ := h.tokenCall("/oauth/token", assert(next, "ghost", "a")); status != http.StatusUnauthorized {
		t.Fatalf("unknown kid: %d %v", status, body)
	}
	if n := k.fetches(); n != 2 {
		t.Fatalf("after an unknown kid: %d fetches, want 2 (the first, and one again)", n)
	}
	if status, _, _ := h.tokenCall("/oauth/token", assert(next, "ghost2", "b")); status != http.StatusUnauthorized || k.fetches() != 2 {
		t.Fatalf("a second unknown kid within the refetch interval: %d, %d fetches, want 401 and still 2", status, k.fetches())
	}
	// The client rotates to "new"; after the interval its first assertion gets in.
	k.setKeys(publicJWK(key, "old"), publicJWK(next, "new"))
	h.clock.Advance(time.Minute)
	code = h.browser().authorize(t, k.id, nativeRedirect, "bob", "", "issues:read") // the first one expired
	if status, body, _ := h.tokenCall("/oauth/token", assert(next, "new", "c")); status != http.StatusOK {
		t.Fatalf("the rotated key: %d %v", status, body)
	}
}

// TestPrivateKeyJWTRegistered: a registered client with an inline jwks gets no
// secret and authenticates with assertions; one with both jwks and jwks_uri, or
// neither, is refused at registration.
func TestPrivateKeyJWTRegistered(t *testing.T) {
	key, _ := testKeys(t)
	h := newHarness(t)
	set := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{publicJWK(key, "r1")}}
	meta := map[string]any{"client_name": "Keyed", "redirect_uris": []string{nativeRedirect}, "application_type": "native",
		"grant_types": []string{"authorization_code", "refresh_token"}, "token_endpoint_auth_method": "private_key_jwt", "jwks": set}
	status, reg, _ := h.postJSON("/oauth/register", meta)
	id := str(reg, "client_id")
	keys, _ := reg["jwks"].(map[string]any)
	if status != http.StatusCreated || id == "" || reg["client_secret"] != nil || str(reg, "token_endpoint_auth_method") != "private_key_jwt" || keys["keys"] == nil {
		t.Fatalf("registration: %d %v, want a client with its jwks and no client_secret", status, reg)
	}
	code := h.browser().authorize(t, id, nativeRedirect, "bob", "", "issues:read")
	now := h.clock.Now()
	a := sign(t, jose.RS256, key, "r1", map[string]any{"iss": id, "sub": id, "aud": h.issuer, "exp": now.Add(time.Minute).Unix(), "jti": "r-1"})
	status, tok, _ := h.tokenCall("/oauth/token", assertionForm(a, "grant_type", "authorization_code", "code", code,
		"redirect_uri", nativeRedirect, "code_verifier", testVerifier, "client_id", id))
	if status != http.StatusOK {
		t.Fatalf("redeem: %d %v", status, tok)
	}
	for name, mod := range map[string]func(map[string]any){
		"both":    func(m map[string]any) { m["jwks_uri"] = "https://keys.example/jwks.json" },
		"neither": func(m map[string]any) { delete(m, "jwks") },
		"private": func(m map[string]any) {
			m["jwks"] = jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: key, KeyID: "p"}}}
		},
		"hmac alg": func(m map[string]any) { m["token_endpoint_auth_signing_alg"] = "HS256" },
	} {
		m := map[string]any{}
		for k, v := range meta {
			m[k] = v
		}
		mod(m)
		if status, body, _ := h.postJSON("/oauth/register", m); status != http.StatusBadRequest || str(body, "error") != "invalid_client_metadata" {
			t.Errorf("%s: registration %d %v, want invalid_client_metadata", name, status, body)
		}
	}
}

// TestPrivateKeyJWTAlgorithms: each allowed algorithm authenticates a registered
// client whose inline jwks holds its key, and a key of another type is not tried.
func TestPrivateKeyJWTAlgorithms(t *testing.T) {
	rsaK, _ := testKeys(t)
	ecK, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	edPub, edK, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t)
	for _, tc := range []struct {
		alg       jose.SignatureAlgorithm
		priv, pub any
	}{
		{jose.RS256, rsaK, &rsaK.PublicKey},
		{jose.PS256, rsaK, &rsaK.PublicKey},
		{jose.ES256, ecK, &ecK.PublicKey},
		{jose.EdDSA, edK, edPub},
	} {
		t.Run(string(tc.alg), func(t *testing.T) {
			id, _ := h.register(map[string]any{"client_name": "Keyed " + string(tc.alg), "redirect_uris": []string{nativeRedirect},
				"application_type": "native", "token_endpoint_auth_method": "private_key_jwt",
				"jwks": jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: tc.pub, KeyID: "k"}}}})
			code := h.browser().authorize(t, id, nativeRedirect, "bob", "", "issues:read")
			now := h.clock.Now()
			a := sign(t, tc.alg, tc.priv, "k", map[string]any{"iss": id, "sub": id, "aud": h.issuer + "/oauth/token",
				"exp": now.Add(time.Minute).Unix(), "jti": "alg-" + string(tc.alg)})
			if status, body, _ := h.tokenCall("/oauth/token", assertionForm(a, "grant_type", "authorization_code", "code", code,
				"redirect_uri", nativeRedirect, "code_verifier", testVerifier)); status != http.StatusOK {
				t.Fatalf("%s: %d %v", tc.alg, status, body)
			}
		})
	}
}
