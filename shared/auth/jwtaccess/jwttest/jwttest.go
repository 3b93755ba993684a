// Package jwttest is an external authorization server for tests: signing keys made
// in the test, and an issuer on 127.0.0.1 serving its metadata and JWKS, whose keys
// the test adds, rotates and removes.
package jwttest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-jose/go-jose/v4"
)

// Key is a signing key with its kid and algorithm.
type Key struct {
	Kid  string
	Alg  jose.SignatureAlgorithm
	Use  string
	priv crypto.Signer
}

// RSAKey makes a 2048-bit RSA key.
func RSAKey(t testing.TB) *rsa.PrivateKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// RSA makes an RS256 key that no issuer publishes (yet).
func RSA(t testing.TB, kid string) *Key { return &Key{Kid: kid, Alg: jose.RS256, priv: RSAKey(t)} }

// EC makes an ES256 key that no issuer publishes (yet).
func EC(t testing.TB, kid string) *Key {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return &Key{Kid: kid, Alg: jose.ES256, priv: k}
}

// Public is the public half.
func (k *Key) Public() crypto.PublicKey { return k.priv.Public() }

// WithKid is the same key under another kid.
func (k *Key) WithKid(kid string) *Key { c := *k; c.Kid = kid; return &c }

// WithoutKid is the same key signing tokens that name no kid.
func (k *Key) WithoutKid() *Key { return k.WithKid("") }

// JWK is the public key as the JWKS publishes it.
func (k *Key) JWK() jose.JSONWebKey {
	return jose.JSONWebKey{Key: k.priv.Public(), KeyID: k.Kid, Algorithm: string(k.Alg), Use: k.Use}
}

// Sign signs claims as an RFC 9068 access token (typ at+jwt).
func (k *Key) Sign(t testing.TB, claims any) string { return k.SignTyp(t, claims, "at+jwt") }

// SignTyp signs claims with the given typ header ("" for none).
func (k *Key) SignTyp(t testing.TB, claims any, typ string) string {
	t.Helper()
	opts := &jose.SignerOptions{}
	if typ != "" {
		opts = opts.WithType(jose.ContentType(typ))
	}
	if k.Kid != "" {
		opts = opts.WithHeader(jose.HeaderKey("kid"), k.Kid)
	}
	alg := k.Alg
	if _, isRSA := k.priv.(*rsa.PrivateKey); !isRSA && alg == jose.RS256 {
		alg = jose.ES256
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: k.priv}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return sign(t, s, claims)
}

// SignHMAC signs claims with HS256 and secret: what an attacker does with a
// public key's bytes to confuse a verifier that lets the token pick the algorithm.
func SignHMAC(t testing.TB, secret []byte, kid string, claims any) string {
	t.Helper()
	opts := (&jose.SignerOptions{}).WithType("at+jwt")
	if kid != "" {
		opts = opts.WithHeader(jose.HeaderKey("kid"), kid)
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: secret}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return sign(t, s, claims)
}

func sign(t testing.TB, s jose.Signer, claims any) string {
	t.Helper()
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	obj, err := s.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := obj.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// Issuer is an authorization server's metadata and JWKS on 127.0.0.1.
type Issuer struct {
	URL string
	srv *httptest.Server

	mu      sync.Mutex
	keys    []jose.JSONWebKey
	fetches atomic.Int64
	opts    options
}

type options struct {
	oidcOnly, noMetadata bool
	mdIssuer             string
}

// Option changes what the issuer serves.
type Option func(*options)

// OIDCOnly serves /.well-known/openid-configuration and no RFC 8414 metadata.
func OIDCOnly() Option { return func(o *options) { o.oidcOnly = true } }

// NoMetadata serves the JWKS only.
func NoMetadata() Option { return func(o *options) { o.noMetadata = true } }

// MetadataIssuer makes the metadata name another issuer than the server's URL.
func MetadataIssuer(iss string) Option { return func(o *options) { o.mdIssuer = iss } }

// NewIssuer starts an issuer, stopped at the end of the test.
func NewIssuer(t testing.TB, opts ...Option) *Issuer {
	iss := &Issuer{}
	for _, o := range opts {
		o(&iss.opts)
	}
	iss.srv = httptest.NewServer(http.HandlerFunc(iss.serve))
	iss.URL = iss.srv.URL
	t.Cleanup(iss.srv.Close)
	return iss
}

func (iss *Issuer) serve(w http.ResponseWriter, r *http.Request) {
	md := func() {
		name := iss.URL
		if iss.opts.mdIssuer != "" {
			name = iss.opts.mdIssuer
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": name, "jwks_uri": iss.URL + "/jwks"})
	}
	switch r.URL.Path {
	case "/.well-known/oauth-authorization-server":
		if iss.opts.oidcOnly || iss.opts.noMetadata {
			http.NotFound(w, r)
			return
		}
		md()
	case "/.well-known/openid-configuration":
		if iss.opts.noMetadata {
			http.NotFound(w, r)
			return
		}
		md()
	case "/jwks":
		iss.fetches.Add(1)
		iss.mu.Lock()
		set := jose.JSONWebKeySet{Keys: append([]jose.JSONWebKey(nil), iss.keys...)}
		iss.mu.Unlock()
		w.Header().Set("Content-Type", "application/jwk-set+json")
		_ = json.NewEncoder(w).Encode(set)
	default:
		http.NotFound(w, r)
	}
}

// Publish adds keys to the JWKS.
func (iss *Issuer) Publish(keys ...*Key) {
	iss.mu.Lock()
	defer iss.mu.Unlock()
	for _, k := range keys {
		iss.keys = append(iss.keys, k.JWK())
	}
}

// Remove takes the key with this kid out of the JWKS.
func (iss *Issuer) Remove(kid string) {
	iss.mu.Lock()
	defer iss.mu.Unlock()
	out := iss.keys[:0]
	for _, k := range iss.keys {
		if k.KeyID != kid {
			out = append(out, k)
		}
	}
	iss.keys = out
}

// AddRSA makes and publishes an RS256 key.
func (iss *Issuer) AddRSA(t testing.TB, kid string) *Key { k := RSA(t, kid); iss.Publish(k); return k }

// AddEC makes and publishes an ES256 key.
func (iss *Issuer) AddEC(t testing.TB, kid string) *Key { k := EC(t, kid); iss.Publish(k); return k }

// Add publishes an RSA key with a use ("sig", "enc" or "").
func (iss *Issuer) Add(t testing.TB, priv *rsa.PrivateKey, kid, use string) *Key {
	k := &Key{Kid: kid, Alg: jose.RS256, Use: use, priv: priv}
	iss.Publish(k)
	return k
}

// JWKSFetches counts the requests for the JWKS so far.
func (iss *Issuer) JWKSFetches() int64 { return iss.fetches.Load() }

// Close stops the issuer: the next fetch fails.
func (iss *Issuer) Close() { iss.srv.Close() }

// WithAlg is the same key signing with another algorithm of its family (the JWKS
// keeps publishing the original alg).
func (k *Key) WithAlg(alg jose.SignatureAlgorithm) *Key { c := *k; c.Alg = alg; return &c }

// AddUnbound makes and publishes an RSA key whose JWK names no alg.
func (iss *Issuer) AddUnbound(t testing.TB, kid string) *Key {
	k := RSA(t, kid)
	k.Alg = ""
	iss.Publish(k)
	k.Alg = jose.RS256
	return k
}
