package oauth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"slices"
	"strings"
	"testing"

	"github.com/go-jose/go-jose/v4"

	"github.com/aacworkflow/aacmcp/shared/oauth/clientmeta"
)

// FuzzParseAssertion: the client assertion decoder refuses with invalid_client or
// accepts a single-signature JWS of an allowed algorithm; never "none" or an HMAC.
func FuzzParseAssertion(f *testing.F) {
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		f.Fatal(err)
	}
	claims := map[string]any{"iss": "c", "sub": "c", "aud": "https://as/oauth/token", "exp": 2000000000, "jti": "j"}
	f.Add(sign(f, jose.ES256, ec, "k1", claims))
	f.Add(handMade(map[string]any{"alg": "none"}, claims, func(string) []byte { return nil }))
	f.Add(handMade(map[string]any{"alg": "HS256", "kid": "k"}, claims, func(string) []byte { return []byte("sig") }))
	f.Add(handMade(map[string]any{"alg": "RS256", "crit": []string{"x"}}, claims, func(string) []byte { return []byte("s") }))
	f.Add("a.b.c")
	f.Add("..")
	f.Add(strings.Repeat("A", maxAssertionBytes+1))
	f.Fuzz(func(t *testing.T, s string) {
		a, e := parseAssertion(s)
		if e != nil {
			if e.Code != ErrInvalidClient || e.Description == "" {
				t.Fatalf("error %+v, want invalid_client with a description", e)
			}
			return
		}
		if a.tok == nil || len(a.tok.Headers) != 1 || !slices.Contains(clientmeta.SigningAlgs, a.alg) {
			t.Fatalf("accepted %q with alg %q", s, a.alg)
		}
	})
}
