package clientmeta

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// SigningAlgs are the algorithms a private_key_jwt client may sign its assertions
// with: asymmetric only. "none" and the HMAC algorithms are absent on purpose (a
// public key is public, so an HMAC keyed with it proves nothing).
var SigningAlgs = []jose.SignatureAlgorithm{jose.RS256, jose.PS256, jose.ES256, jose.EdDSA}

const (
	// maxKeys bounds a client's key set: real ones hold one to three keys.
	maxKeys = 10
	// minRSABits refuses RSA keys too short to be trusted.
	minRSABits = 2048
	// keysRefetchEvery is how often an unknown kid may send the server back to a
	// client's jwks_uri: a flood of assertions naming random kids costs the client's
	// host one request per interval.
	keysRefetchEvery = 30 * time.Second
)

// clientKeys reads the key material of a private_key_jwt client: exactly one of
// jwks_uri (an https URL) and jwks (RFC 7591 §2 forbids both), and the optional
// token_endpoint_auth_signing_alg, which must be one of SigningAlgs.
func clientKeys(m map[string]json.RawMessage, c *Client) *problem {
	uri, hasURI, p := getString(m, "jwks_uri")
	if p != nil {
		return p
	}
	raw, hasSet := m["jwks"]
	hasSet = hasSet && !isNull(raw)
	switch {
	case hasURI && hasSet:
		return metadataProblem("jwks_uri and jwks must not both be given (RFC 7591 §2)")
	case !hasURI && !hasSet:
		return metadataProblem(`token_endpoint_auth_method "private_key_jwt" needs jwks_uri or jwks: where the client's public keys are`)
	case hasURI:
		if d := checkHTTPSURL(uri); d != "" {
			return metadataProblem("jwks_uri %s", d)
		}
		c.JWKSURI = uri
	default:
		keys, desc := ParseKeySet(raw)
		if desc != "" {
			return metadataProblem("jwks %s", desc)
		}
		b, err := json.Marshal(jose.JSONWebKeySet{Keys: keys})
		if err != nil {
			return metadataProblem("jwks could not be read back")
		}
		c.JWKS = string(b)
	}
	alg, ok, p := getString(m, "token_endpoint_auth_signing_alg")
	if p != nil {
		return p
	}
	if ok {
		if !slices.Contains(SigningAlgs, jose.SignatureAlgorithm(alg)) {
			return metadataProblem("token_endpoint_auth_signing_alg must be one of RS256, PS256, ES256, EdDSA")
		}
		c.SigningAlg = alg
	}
	return nil
}

// ParseKeySet decodes a JSON Web Key Set (RFC 7517 §5) a client published, or
// returns why it is refused ("" when it is not). The set is decoded strictly, like
// a document; every key must be a public signing key of a type SigningAlgs can use
// (RSA of at least 2048 bits, P-256, Ed25519). A private or symmetric key refuses
// the whole set: a client that publishes one has leaked it.
func ParseKeySet(raw []byte) ([]jose.JSONWebKey, string) {
	m, p := decodeObject(raw)
	if p != nil {
		return nil, p.desc
	}
	if _, ok := m["keys"]; !ok {
		return nil, `must be an object with a "keys" array`
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(raw, &set); err != nil {
		return nil, "holds a key that is not a valid JSON Web Key"
	}
	if len(set.Keys) == 0 || len(set.Keys) > maxKeys {
		return nil, "must hold between 1 and 10 keys"
	}
	var out []jose.JSONWebKey
	for _, k := range set.Keys {
		if !k.Valid() || !k.IsPublic() {
			return nil, "holds a private or symmetric key; publish only public keys"
		}
		if k.Use != "" && k.Use != "sig" {
			continue // an encryption key, of no use to this server
		}
		if !usableKey(k.Key) {
			return nil, "holds a key that is not RSA of at least 2048 bits, P-256 or Ed25519"
		}
		out = append(out, k)
	}
	if len(out) == 0 {
		return nil, "holds no signing key"
	}
	return out, ""
}

func usableKey(k any) bool {
	switch k := k.(type) {
	case *rsa.PublicKey:
		return k.N.BitLen() >= minRSABits
	case *ecdsa.PublicKey:
		return k.Curve == elliptic.P256()
	case ed25519.PublicKey:
		return true
	}
	return false
}

// KeyFitsAlg: the key is of the type alg signs with.
func KeyFitsAlg(k jose.JSONWebKey, alg jose.SignatureAlgorithm) bool {
	if k.Algorithm != "" && k.Algorithm != string(alg) {
		return false
	}
	switch k.Key.(type) {
	case *rsa.PublicKey:
		return alg == jose.RS256 || alg == jose.PS256
	case *ecdsa.PublicKey:
		return alg == jose.ES256
	case ed25519.PublicKey:
		return alg == jose.EdDSA
	}
	return false
}

// KeySets fetches the key sets at clients' jwks_uri with a Fetcher (its SSRF guard,
// timeout and size limit, as for documents) and caches each for its HTTP freshness
// lifetime. Safe for concurrent use.
type KeySets struct {
	f *Fetcher

	mu      sync.Mutex
	entries map[string]*keysEntry
}

type keysEntry struct {
	keys      []jose.JSONWebKey
	expires   time.Time
	fetchedAt time.Time // of the last fetch attempt
	inflight  chan struct{}
	err       error
}

// NewKeySets caches key sets fetched through f.
func NewKeySets(f *Fetcher) *KeySets {
	return &KeySets{f: f, entries: map[string]*keysEntry{}}
}

// Keys returns the key set at jwksURI: from cache while it is fresh, unless
// refetch asks for a new copy (an assertion named a kid the cached set lacks).
// A refetch happens at most once per keysRefetchEvery per URL; callers that arrive
// during a fetch share it. Failures are *Error with code invalid_client.
func (ks *KeySets) Keys(ctx context.Context, jwksURI string, refetch bool) ([]jose.JSONWebKey, error) {
	now := ks.f.opts.Now()
	ks.mu.Lock()
	e, ok := ks.entries[jwksURI]
	if !ok {
		if len(ks.entries) >= maxCacheEntries {
			ks.evict(now)
		}
		e = &keysEntry{}
		ks.entries[jwksURI] = e
	}
	fresh := e.keys != nil && now.Before(e.expires)
	throttled := now.Sub(e.fetchedAt) < keysRefetchEvery
	if e.inflight == nil && (!fresh && !(e.err != nil && throttled) || refetch && !throttled) {
		e.inflight = make(chan struct{})
		e.fetchedAt = now
		go ks.fetch(jwksURI, e, e.inflight)
	}
	wait := e.inflight
	ks.mu.Unlock()
	if wait != nil {
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	ks.mu.Lock()
	defer ks.mu.Unlock()
	if e.keys == nil {
		if e.err == nil {
			return nil, invalidClient("the key set at jwks_uri could not be fetched")
		}
		return nil, e.err
	}
	return slices.Clone(e.keys), nil
}

// fetch runs detached from any caller's context, bounded by the fetcher's timeout.
func (ks *KeySets) fetch(uri string, e *keysEntry, done chan struct{}) {
	keys, ttl, err := ks.get(uri)
	ks.mu.Lock()
	defer ks.mu.Unlock()
	e.inflight = nil
	now := ks.f.opts.Now()
	switch {
	case err != nil:
		// A failed refetch for an unknown kid keeps the set while it is fresh; an
		// expired set is dropped, so a key the client withdrew does not outlive
		// its host's outage.
		e.err = err
		if !now.Before(e.expires) {
			e.keys = nil
		}
	default:
		// No-store or no freshness at all would mean one fetch per assertion.
		e.keys, e.err, e.expires = keys, nil, now.Add(max(ttl, keysRefetchEvery))
	}
	close(done)
}

func (ks *KeySets) get(uri string) ([]jose.JSONWebKey, time.Duration, error) {
	if d := checkHTTPSURL(uri); d != "" {
		return nil, 0, invalidClient("jwks_uri " + d)
	}
	body, h, ferr := ks.f.getJSON(uri)
	if ferr != nil {
		return nil, 0, invalidClient("the key set at jwks_uri could not be fetched: " + ferr.Description)
	}
	keys, desc := ParseKeySet(body)
	if desc != "" {
		return nil, 0, invalidClient("the key set at jwks_uri " + desc)
	}
	opts := ks.f.opts
	return keys, freshness(h, opts.Now(), min(defaultTTL, opts.MaxAge), opts.MaxAge), nil
}

// evict makes room: expired sets go first, then, if none had, every set not being
// fetched (the cache refills on demand).
func (ks *KeySets) evict(now time.Time) {
	n := len(ks.entries)
	for k, e := range ks.entries {
		if e.inflight == nil && !now.Before(e.expires) {
			delete(ks.entries, k)
		}
	}
	if len(ks.entries) < n {
		return
	}
	for k, e := range ks.entries {
		if e.inflight == nil {
			delete(ks.entries, k)
		}
	}
}
