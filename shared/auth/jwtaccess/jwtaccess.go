// Package jwtaccess verifies JWT access tokens from an external OAuth authorization
// server ("bring your own authorization server"): Okta, Entra ID, Auth0, Keycloak,
// Amazon Cognito or any issuer that publishes its signing keys as a JWKS.
//
// A token is accepted when all of these hold:
//   - it is a JWS in compact form, signed with one of the configured asymmetric
//     algorithms (default RS256 and ES256; never none, never HMAC) by a key of the
//     issuer's JWKS whose type fits the algorithm;
//   - its typ header, when present, is at+jwt (RFC 9068), application/at+jwt or JWT
//     (what most issuers still send); with Config.RequireATJWT only the first two;
//   - iss is exactly the configured issuer, aud contains one of the configured
//     audiences (this resource's /mcp URL by default), exp is in the future, and
//     nbf and iat are not in the future, each with Config.ClockSkew of leeway;
//   - the configured user claim (default email) names exactly one member record of
//     this server, in the configured workspace or the one the workspace claim names
//     (see Config).
//
// Keys are fetched from the jwks_uri of the issuer's metadata (RFC 8414, then
// OpenID Connect Discovery) or from a configured JWKS URL, and cached; see keySet
// for rotation and refresh limits.
//
// Every refusal is invalid_token with auth.PublicMessage, as for opaque tokens; the
// reason is in the auth.RejectError inside (for logs). A token is a principal only
// through its member record: the guard reads that record's role at every call, so
// removing the member or lowering the role takes effect at the next call.
package jwtaccess

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/auth/jwtaccess/jwtconf"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// Reasons a JWT is refused, beside auth's own (malformed, expired).
const (
	ReasonAlgorithm      auth.Reason = "jwt_algorithm"     // alg not allowed (none, HS256, ...)
	ReasonType           auth.Reason = "jwt_type"          // typ is not an access token's
	ReasonUnknownKey     auth.Reason = "jwt_unknown_key"   // no key of the JWKS has this kid
	ReasonSignature      auth.Reason = "jwt_signature"     // the signature does not verify
	ReasonIssuer         auth.Reason = "jwt_issuer"        // iss is not the configured issuer
	ReasonAudience       auth.Reason = "jwt_audience"      // aud does not name this resource
	ReasonClient         auth.Reason = "jwt_client"        // client_id is not an allowed client
	ReasonNotYetValid    auth.Reason = "jwt_not_yet_valid" // nbf or iat in the future
	ReasonNoUser         auth.Reason = "jwt_no_user"       // the user claim is missing
	ReasonUnverified     auth.Reason = "jwt_email_unverified"
	ReasonNoMember       auth.Reason = "jwt_no_member"        // no member record for the user here
	ReasonAmbiguous      auth.Reason = "jwt_ambiguous_member" // several workspaces, none chosen
	ReasonWorkspaceClaim auth.Reason = "jwt_no_workspace"     // the workspace claim is missing
)

// Defaults of Config.
const (
	DefaultUserClaim          = "email"
	DefaultClockSkew          = 60 * time.Second
	DefaultKeysMaxAge         = time.Hour
	DefaultMinRefreshInterval = 30 * time.Second
	// MaxTokenLen bounds a JWT presented as a bearer token. API Gateway caps a
	// request's headers at 10 KiB; tokens of real issuers are 1-3 KiB.
	MaxTokenLen = 8 << 10
)

// DefaultAlgorithms are accepted when Config.Algorithms is empty: what issuers sign
// access tokens with (RS256 is the OIDC default; ES256 the compact choice).
var DefaultAlgorithms = []string{"RS256", "ES256"}

// allowedAlgorithms are the only ones a configuration may name: asymmetric, so the
// key that verifies cannot also sign. HS* with a public key is the classic
// algorithm confusion, and none is no signature at all.
var allowedAlgorithms = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA,
}

// Members finds member records by e-mail (store.OAuthStore has it).
type Members interface {
	ListMembersByEmail(ctx context.Context, email string) ([]store.Member, error)
}

// Config configures a Verifier.
type Config struct {
	// Settings say which issuer's tokens are accepted and for whom: what an
	// operator configures (lambdaenv reads them from the environment).
	jwtconf.Settings
	// ClockSkew is the leeway on exp, nbf and iat; 0 means DefaultClockSkew, and
	// it is capped at 5 minutes.
	ClockSkew time.Duration
	// KeysMaxAge is how long a fetched JWKS is used before it is fetched again
	// (so a removed key stops working); 0 means DefaultKeysMaxAge.
	KeysMaxAge time.Duration
	// MinRefreshInterval is the least time between two fetches of the JWKS,
	// whatever tokens arrive; 0 means DefaultMinRefreshInterval.
	MinRefreshInterval time.Duration

	Members    Members
	HTTPClient *http.Client
	Now        func() time.Time
	Logger     *slog.Logger
}

func (c *Config) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

func (c *Config) logger() *slog.Logger {
	if c.Logger != nil {
		return c.Logger
	}
	return slog.Default()
}

// Verifier checks JWT access tokens. Safe for concurrent use.
type Verifier struct {
	cfg  Config
	algs []jose.SignatureAlgorithm
	keys *keySet
}

// New validates cfg and returns a Verifier. No network is touched until the
// first token (or Prime).
func New(cfg Config) (*Verifier, error) {
	if err := checkURL(cfg.Issuer); err != nil {
		return nil, fmt.Errorf("jwtaccess: issuer: %w", err)
	}
	if cfg.JWKSURL != "" {
		if err := checkURL(cfg.JWKSURL); err != nil {
			return nil, fmt.Errorf("jwtaccess: JWKS URL: %w", err)
		}
	}
	if (len(cfg.Audiences) == 0 && len(cfg.Clients) == 0) || slices.Contains(cfg.Audiences, "") || slices.Contains(cfg.Clients, "") {
		return nil, errors.New("jwtaccess: at least one audience (this resource's URL) or allowed client is required")
	}
	if cfg.Members == nil {
		return nil, errors.New("jwtaccess: no member store")
	}
	if cfg.Workspace != "" && cfg.WorkspaceClaim != "" {
		return nil, errors.New("jwtaccess: set a workspace or a workspace claim, not both")
	}
	if cfg.UserClaim == "" {
		cfg.UserClaim = DefaultUserClaim
	}
	if cfg.ClockSkew <= 0 {
		cfg.ClockSkew = DefaultClockSkew
	}
	cfg.ClockSkew = min(cfg.ClockSkew, 5*time.Minute)
	if cfg.KeysMaxAge <= 0 {
		cfg.KeysMaxAge = DefaultKeysMaxAge
	}
	if cfg.MinRefreshInterval <= 0 {
		cfg.MinRefreshInterval = DefaultMinRefreshInterval
	}
	algs, err := ParseAlgorithms(cfg.Algorithms)
	if err != nil {
		return nil, err
	}
	v := &Verifier{cfg: cfg, algs: algs}
	v.keys = newKeySet(&v.cfg)
	return v, nil
}

// ParseAlgorithms checks a list of algorithm names (empty: DefaultAlgorithms).
func ParseAlgorithms(names []string) ([]jose.SignatureAlgorithm, error) {
	if len(names) == 0 {
		names = DefaultAlgorithms
	}
	out := make([]jose.SignatureAlgorithm, 0, len(names))
	for _, n := range names {
		a := jose.SignatureAlgorithm(strings.TrimSpace(n))
		if !slices.Contains(allowedAlgorithms, a) {
			return nil, fmt.Errorf("jwtaccess: algorithm %q is not accepted (asymmetric only: RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, ES512, EdDSA)", n)
		}
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out, nil
}

// Issuer is the configured issuer (for the resource metadata).
func (v *Verifier) Issuer() string { return v.cfg.Issuer }

// Prime fetches the issuer's keys now, so a wrong issuer or JWKS URL fails at
// start instead of at the first token.
func (v *Verifier) Prime(ctx context.Context) error {
	_, err := v.keys.lookup(ctx, "")
	if errors.Is(err, errFetch) {
		return err
	}
	return nil
}

func reject(r auth.Reason, tokenID string) error {
	return apperr.Wrap(apperr.InvalidToken, auth.PublicMessage, &auth.RejectError{Reason: r, TokenID: tokenID})
}

// Verify implements the verifier interfaces of mcpserver and the authorizer. An
// issuer that cannot be reached while its keys are unknown is internal_error: the
// token may be good, and a 401 would make the client throw it away.
func (v *Verifier) Verify(ctx context.Context, token string) (auth.Principal, error) {
	if len(token) > MaxTokenLen || !auth.LooksLikeJWT(token) {
		return auth.Principal{}, reject(auth.ReasonMalformed, "")
	}
	jws, err := jose.ParseSignedCompact(token, v.algs)
	if err != nil {
		// go-jose refuses an alg outside the list at parse time; tell that apart
		// for the log, since it is the signature of an attack (none, HS256).
		if alg := headerAlg(token); alg != "" && !slices.Contains(v.algs, jose.SignatureAlgorithm(alg)) {
			return auth.Principal{}, reject(ReasonAlgorithm, "")
		}
		return auth.Principal{}, reject(auth.ReasonMalformed, "")
	}
	if len(jws.Signatures) != 1 {
		return auth.Principal{}, reject(auth.ReasonMalformed, "")
	}
	h := jws.Signatures[0].Protected
	alg := jose.SignatureAlgorithm(h.Algorithm)
	if !slices.Contains(v.algs, alg) {
		return auth.Principal{}, reject(ReasonAlgorithm, "")
	}
	if !v.typeAccepted(h.ExtraHeaders[jose.HeaderType]) {
		return auth.Principal{}, reject(ReasonType, "")
	}
	keys, err := v.keys.lookup(ctx, h.KeyID)
	if err != nil {
		return auth.Principal{}, apperr.Internal(err)
	}
	payload, ok := verifyWith(jws, alg, keys)
	if !ok {
		if len(keys) == 0 {
			return auth.Principal{}, reject(ReasonUnknownKey, "")
		}
		return auth.Principal{}, reject(ReasonSignature, "")
	}
	// From here the issuer vouches for the payload, so its id may be logged.
	c, err := decodeClaims(payload, v.cfg.UserClaim, v.cfg.WorkspaceClaim)
	if err != nil {
		return auth.Principal{}, reject(auth.ReasonMalformed, "")
	}
	tokenID := TokenID(c.ID, token)
	if err := v.checkClaims(c); err != nil {
		return auth.Principal{}, reject(auth.RejectReason(err), tokenID)
	}
	m, err := v.member(ctx, c)
	if err != nil {
		if r := auth.RejectReason(err); r != "" {
			return auth.Principal{}, reject(r, tokenID)
		}
		return auth.Principal{}, err
	}
	return auth.Principal{
		WorkspaceID: m.WorkspaceID,
		UserID:      m.UserID,
		TokenID:     tokenID,
		Scopes:      c.Scopes,
		ClientID:    c.ClientID,
		ExpiresAt:   c.Expiry,
	}, nil
}

// typeAccepted: RFC 9068 section 4 has resource servers check typ at+jwt; an ID
// token (typ JWT or none) is kept out by its audience, which is a client id and
// never this resource. Any other explicit typ (dpop+jwt, logout+jwt, ...) is a
// different kind of token.
func (v *Verifier) typeAccepted(t any) bool {
	if t == nil {
		return !v.cfg.RequireATJWT
	}
	s, ok := t.(string)
	if !ok {
		return false
	}
	switch strings.ToLower(s) {
	case "at+jwt", "application/at+jwt":
		return true
	case "jwt":
		return !v.cfg.RequireATJWT
	}
	return false
}

// verifyWith checks the signature with each candidate key whose type fits alg.
// go-jose would refuse a mismatched key too; checking here first means no key is
// ever used with an algorithm of another family, whatever the library does.
func verifyWith(jws *jose.JSONWebSignature, alg jose.SignatureAlgorithm, keys []jose.JSONWebKey) ([]byte, bool) {
	for _, k := range keys {
		if !keyFits(k, alg) {
			continue
		}
		if payload, err := jws.Verify(&k); err == nil {
			return payload, true
		}
	}
	return nil, false
}

func keyFits(k jose.JSONWebKey, alg jose.SignatureAlgorithm) bool {
	if k.Algorithm != "" && k.Algorithm != string(alg) {
		return false // the issuer bound this key to one algorithm (RFC 7517 4.4)
	}
	switch k.Key.(type) {
	case *rsa.PublicKey:
		return strings.HasPrefix(string(alg), "RS") || strings.HasPrefix(string(alg), "PS")
	case *ecdsa.PublicKey:
		return strings.HasPrefix(string(alg), "ES")
	case ed25519.PublicKey:
		return alg == jose.EdDSA
	}
	return false
}

func (v *Verifier) checkClaims(c claims) error {
	now := v.cfg.now()
	skew := v.cfg.ClockSkew
	switch {
	case c.Issuer != v.cfg.Issuer:
		return &auth.RejectError{Reason: ReasonIssuer}
	case len(v.cfg.Audiences) > 0 && !slices.ContainsFunc(c.Audience, func(a string) bool { return slices.Contains(v.cfg.Audiences, a) }):
		return &auth.RejectError{Reason: ReasonAudience}
	case len(v.cfg.Clients) > 0 && !slices.Contains(v.cfg.Clients, c.ClientID):
		return &auth.RejectError{Reason: ReasonClient}
	case c.TokenUse != "" && c.TokenUse != "access":
		// Cognito marks its ID tokens token_use id; they carry no aud of ours, but
		// with Clients alone only this tells them apart.
		return &auth.RejectError{Reason: ReasonType}
	case c.Expiry.IsZero():
		// An access token without exp never expires: fail closed.
		return &auth.RejectError{Reason: auth.ReasonMalformed}
	case !now.Before(c.Expiry.Add(skew)):
		return &auth.RejectError{Reason: auth.ReasonExpired}
	case !c.NotBefore.IsZero() && now.Add(skew).Before(c.NotBefore):
		return &auth.RejectError{Reason: ReasonNotYetValid}
	case !c.IssuedAt.IsZero() && now.Add(skew).Before(c.IssuedAt):
		return &auth.RejectError{Reason: ReasonNotYetValid}
	case c.User == "":
		return &auth.RejectError{Reason: ReasonNoUser}
	case c.EmailVerified != nil && !*c.EmailVerified:
		return &auth.RejectError{Reason: ReasonUnverified}
	}
	return nil
}

// member resolves the token's person to one member record. The token itself
// carries no role: the guard reads the record's role at every call.
func (v *Verifier) member(ctx context.Context, c claims) (store.Member, error) {
	ms, err := v.cfg.Members.ListMembersByEmail(ctx, c.User)
	if err != nil {
		return store.Member{}, apperr.Internal(err)
	}
	ws := v.cfg.Workspace
	if v.cfg.WorkspaceClaim != "" {
		if c.Workspace == "" {
			return store.Member{}, &auth.RejectError{Reason: ReasonWorkspaceClaim}
		}
		ws = c.Workspace
	}
	if ws != "" {
		ms = slices.DeleteFunc(ms, func(m store.Member) bool { return m.WorkspaceID != ws })
	}
	switch len(ms) {
	case 0:
		return store.Member{}, &auth.RejectError{Reason: ReasonNoMember}
	case 1:
		return ms[0], nil
	}
	return store.Member{}, &auth.RejectError{Reason: ReasonAmbiguous}
}

// TokenID is the public id of a JWT: "jwt:" + its jti when that is short and
// plain, else "jwt:sha256:" + the first 128 bits of the token's SHA-256 (stable
// for one token, and never the token).
func TokenID(jti, token string) string {
	if jti != "" && len(jti) <= 64 && !strings.ContainsFunc(jti, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.')
	}) {
		return "jwt:" + jti
	}
	sum := sha256.Sum256([]byte(token))
	return "jwt:sha256:" + hex.EncodeToString(sum[:16])
}

// headerAlg reads the alg of an unverified token, for the refusal's reason only.
func headerAlg(token string) string {
	seg, _, _ := strings.Cut(token, ".")
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return ""
	}
	var h struct {
		Alg string `json:"alg"`
	}
	if json.Unmarshal(b, &h) != nil {
		return ""
	}
	return h.Alg
}
