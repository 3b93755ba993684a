// Package assertiontest makes client assertions (RFC 7523) for tests: signed ones,
// and the forgeries a JOSE library refuses to make (alg none, an HMAC keyed with a
// public key).
package assertiontest

import (
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Sign makes a compact JWS of claims with key (any go-jose signing key), with typ
// JWT and, when kid is set, that kid.
func Sign(t testing.TB, alg jose.SignatureAlgorithm, key any, kid string, claims map[string]any) string {
	t.Helper()
	opts := (&jose.SignerOptions{}).WithType("JWT")
	if kid != "" {
		opts = opts.WithHeader("kid", kid)
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, opts)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// Forge builds a compact JWS by hand: sig signs the signing input.
func Forge(header, claims map[string]any, sig func(signingInput string) []byte) string {
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	in := enc(header) + "." + enc(claims)
	return in + "." + base64.RawURLEncoding.EncodeToString(sig(in))
}
