package oauth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/oauth/clientmeta"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// private_key_jwt (RFC 7523 section 2.2, RFC 7521 section 4.2): the client signs a
// short-lived JWT with a key whose public half it published (its document's or its
// registration's jwks_uri or jwks), and sends it as client_assertion.
const (
	authPrivateKeyJWT = clientmeta.AuthPrivateKeyJWT
	assertionTypeJWT  = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
	// maxAssertionLifetime bounds how far ahead an assertion's exp may be (and, with
	// iat, its whole lifetime): an assertion is made for one request, and its jti
	// must be remembered for as long as it lives.
	maxAssertionLifetime = 5 * time.Minute
	// assertionLeeway absorbs clock skew between the client and this server.
	assertionLeeway = 30 * time.Second
	// maxAssertionBytes bounds the compact JWS: a real one is under 1 KB.
	maxAssertionBytes = 8 << 10
	maxJTIBytes       = 256
)

// assertion is a client assertion decoded but not yet verified: its header says
// which key to try, its unverified subject which client's keys to look in.
type assertion struct {
	tok     *jwt.JSONWebToken
	alg     jose.SignatureAlgorithm
	kid     string
	subject string
}

// parseAssertion decodes a compact JWS client assertion. Only the algorithms of
// clientmeta.SigningAlgs parse: "none" and the HMAC algorithms are refused here,
// whatever the header says, before any key is looked at.
func parseAssertion(s string) (assertion, *Error) {
	if len(s) > maxAssertionBytes {
		return assertion{}, oerr(ErrInvalidClient, "client_assertion is larger than 8 KB")
	}
	tok, err := jwt.ParseSigned(s, clientmeta.SigningAlgs)
	if err != nil {
		// The audit record names the client the refused assertion claims to be.
		return assertion{subject: unverifiedSubject(s)}, oerr(ErrInvalidClient, "client_assertion is not a compact JWS signed with RS256, PS256, ES256 or EdDSA")
	}
	if len(tok.Headers) != 1 {
		return assertion{}, oerr(ErrInvalidClient, "client_assertion must carry exactly one signature")
	}
	h := tok.Headers[0]
	var c jwt.Claims
	if err := tok.UnsafeClaimsWithoutVerification(&c); err != nil {
		return assertion{}, oerr(ErrInvalidClient, "client_assertion's claims are not a JSON object of JWT claims")
	}
	return assertion{tok: tok, alg: jose.SignatureAlgorithm(h.Algorithm), kid: h.KeyID, subject: c.Subject}, nil
}

// unverifiedSubject reads the sub of a JWS payload that did not parse as one this
// server accepts (alg none, HMAC): only to say in the audit log who it claims to be.
func unverifiedSubject(s string) string {
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return ""
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return ""
	}
	var c struct {
		Sub string `json:"sub"`
	}
	if json.Unmarshal(b, &c) != nil || len(c.Sub) > maxParamLen {
		return ""
	}
	return c.Sub
}

// verifyAssertion checks a's signature against c's keys and its claims against
// this server, then spends its jti. Each refusal is invalid_client with the check
// that failed; a store failure is server_error.
func (q *request) verifyAssertion(ctx context.Context, c client, a assertion) *Error {
	if c.SigningAlg != "" && string(a.alg) != c.SigningAlg {
		return oerr(ErrInvalidClient, "client_assertion is signed with "+string(a.alg)+", but the client's metadata names "+c.SigningAlg)
	}
	keys, e := q.clientKeys(ctx, c, false)
	if e != nil {
		return e
	}
	cand := candidateKeys(keys, a)
	if len(cand) == 0 && c.JWKSURI != "" {
		// The client may have rotated its keys since the set was cached.
		if keys, e = q.clientKeys(ctx, c, true); e != nil {
			return e
		}
		cand = candidateKeys(keys, a)
	}
	if len(cand) == 0 {
		return oerr(ErrInvalidClient, "no key in the client's key set fits client_assertion (kid "+quote(a.kid)+", alg "+string(a.alg)+")")
	}
	var claims jwt.Claims
	verified := false
	for _, k := range cand {
		if err := a.tok.Claims(k.Key, &claims); err == nil {
			verified = true
			break
		}
	}
	if !verified {
		return oerr(ErrInvalidClient, "client_assertion's signature does not verify with the client's keys")
	}
	if e := q.checkAssertionClaims(c.ClientID, claims); e != nil {
		return e
	}
	// Spent only once everything else holds, so a forged assertion cannot use up a
	// jti of the client's.
	exp := claims.Expiry.Time().Add(assertionLeeway)
	err := q.s.cfg.Store.CreateOAuthAssertion(ctx, auth.Hash(c.ClientID+"\n"+claims.ID), exp)
	if errors.Is(err, store.ErrAlreadyExists) {
		return oerr(ErrInvalidClient, "client_assertion was already used (its jti is single use); sign a new one for each request")
	}
	if err != nil {
		return q.internal("recorded the client assertion", err)
	}
	return nil
}

// checkAssertionClaims applies RFC 7523 section 3 with this server's bounds.
func (q *request) checkAssertionClaims(clientID string, c jwt.Claims) *Error {
	now := q.s.now()
	switch {
	case c.Issuer != clientID || c.Subject != clientID:
		return oerr(ErrInvalidClient, "client_assertion's iss and sub must both be the client_id")
	case !slices.Contains(c.Audience, q.url(pathToken)) && !slices.Contains(c.Audience, q.issuer):
		return oerr(ErrInvalidClient, "client_assertion's aud must be the token endpoint "+q.url(pathToken)+" or the issuer "+q.issuer)
	case c.Expiry == nil:
		return oerr(ErrInvalidClient, "client_assertion has no exp")
	case !now.Before(c.Expiry.Time().Add(assertionLeeway)):
		return oerr(ErrInvalidClient, "client_assertion has expired")
	case c.Expiry.Time().Sub(now) > maxAssertionLifetime+assertionLeeway:
		return oerr(ErrInvalidClient, "client_assertion's exp is more than 5 minutes ahead; assertions must be short-lived")
	case c.IssuedAt != nil && c.IssuedAt.Time().After(now.Add(assertionLeeway)):
		return oerr(ErrInvalidClient, "client_assertion's iat is in the future")
	case c.IssuedAt != nil && c.Expiry.Time().Sub(c.IssuedAt.Time()) > maxAssertionLifetime+assertionLeeway:
		return oerr(ErrInvalidClient, "client_assertion's lifetime (exp - iat) is longer than 5 minutes")
	case c.NotBefore != nil && c.NotBefore.Time().After(now.Add(assertionLeeway)):
		return oerr(ErrInvalidClient, "client_assertion is not valid yet (nbf)")
	case c.ID == "" || len(c.ID) > maxJTIBytes:
		return oerr(ErrInvalidClient, "client_assertion needs a jti of at most 256 bytes (each assertion is single use)")
	}
	return nil
}

// candidateKeys are the keys of keys that may have signed a: of its algorithm's
// type, and the one its kid names when it names one.
func candidateKeys(keys []jose.JSONWebKey, a assertion) []jose.JSONWebKey {
	var out []jose.JSONWebKey
	for _, k := range keys {
		if (a.kid == "" || k.KeyID == a.kid) && clientmeta.KeyFitsAlg(k, a.alg) {
			out = append(out, k)
		}
	}
	return out
}

// clientKeys is c's key set: inline (validated when the client was read), or
// fetched from its jwks_uri through the server's key-set cache.
func (q *request) clientKeys(ctx context.Context, c client, refetch bool) ([]jose.JSONWebKey, *Error) {
	if c.JWKS != "" {
		keys, desc := clientmeta.ParseKeySet([]byte(c.JWKS))
		if desc != "" {
			return nil, oerr(ErrInvalidClient, "the client's jwks "+desc)
		}
		return keys, nil
	}
	if c.JWKSURI == "" {
		return nil, oerr(ErrInvalidClient, "client "+quote(c.ClientID)+" has no jwks_uri or jwks to verify client_assertion with")
	}
	if q.s.keys == nil {
		return nil, oerr(ErrInvalidClient, "this server fetches no key sets (it accepts no client metadata documents); register the client with jwks instead")
	}
	keys, err := q.s.keys.Keys(ctx, c.JWKSURI, refetch)
	if err != nil {
		var ce *clientmeta.Error
		if errors.As(err, &ce) {
			return nil, oerr(ErrInvalidClient, ce.Description)
		}
		q.s.log.WarnContext(ctx, "oauth: key set fetch failed", "client_id", c.ClientID, "jwks_uri", c.JWKSURI, "err", err)
		return nil, oerr(ErrInvalidClient, "the key set at jwks_uri could not be fetched")
	}
	return keys, nil
}

// assertionClientID is the client an assertion-authenticated request names: the
// form's client_id when sent (RFC 7521 section 4.2 makes it optional), else the
// assertion's unverified sub, which only chooses whose keys to try.
func assertionClientID(formID string, a assertion) string {
	if formID != "" {
		return formID
	}
	return a.subject
}
