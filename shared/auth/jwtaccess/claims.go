package jwtaccess

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/aacworkflow/aacmcp/shared/auth"
)

// claims are the parts of an access token's payload the verifier reads. Everything
// is decoded from the signed payload only after the signature has been checked, but
// the decoder must still survive any bytes: a key the issuer publishes signs what
// the issuer says, and a fuzz target (FuzzDecodeClaims) holds it to that.
type claims struct {
	Issuer    string
	Audience  []string
	Expiry    time.Time // zero when absent
	NotBefore time.Time
	IssuedAt  time.Time
	ID        string
	ClientID  string
	Scopes    []string // the known scopes held, sorted, deduplicated
	// User is the configured user claim (a string), Workspace the configured
	// workspace claim; "" when absent.
	User      string
	Workspace string
	// EmailVerified is the email_verified claim when present.
	EmailVerified *bool
	// TokenUse is Amazon Cognito's token_use ("access" or "id"); "" when absent.
	TokenUse string
}

// maxClaimLen bounds the string claims that end up in the principal and the audit
// record: an issuer's values are trusted for who, not for how long.
const maxClaimLen = 512

var errClaims = errors.New("jwtaccess: payload is not a usable claims set")

// decodeClaims reads payload (a JSON object) with userClaim and workspaceClaim as
// the names of the user and workspace claims ("" for none). Unknown scopes are
// dropped; a claim of the wrong JSON type is an error, never silently ignored, so a
// token that means something else than it seems to is refused.
func decodeClaims(payload []byte, userClaim, workspaceClaim string) (claims, error) {
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(payload))
	if err := dec.Decode(&raw); err != nil || raw == nil {
		return claims{}, errClaims
	}
	if dec.More() {
		return claims{}, errClaims // trailing data after the object
	}
	var c claims
	var err error
	str := func(name string) string {
		if err != nil {
			return ""
		}
		var s string
		s, err = stringClaim(raw, name)
		return s
	}
	c.Issuer = str("iss")
	c.ID = str("jti")
	c.TokenUse = str("token_use")
	// RFC 9068 section 2.2 names client_id; OpenID Connect's azp is what some
	// issuers (Keycloak, Auth0 with OIDC tokens) put there instead.
	c.ClientID = str("client_id")
	if c.ClientID == "" {
		c.ClientID = str("azp")
	}
	if userClaim != "" {
		c.User = str(userClaim)
	}
	if workspaceClaim != "" {
		c.Workspace = str(workspaceClaim)
	}
	if err != nil {
		return claims{}, err
	}
	if c.Audience, err = listClaim(raw, "aud", false); err != nil {
		return claims{}, err
	}
	for _, t := range []struct {
		name string
		dst  *time.Time
	}{{"exp", &c.Expiry}, {"nbf", &c.NotBefore}, {"iat", &c.IssuedAt}} {
		if *t.dst, err = dateClaim(raw, t.name); err != nil {
			return claims{}, err
		}
	}
	// scope (RFC 8693, RFC 9068) is one space-separated string; scp (Entra ID, Okta)
	// is an array or a space-separated string. A token may carry both: their union.
	scope, err := listClaim(raw, "scope", true)
	if err != nil {
		return claims{}, err
	}
	scp, err := listClaim(raw, "scp", true)
	if err != nil {
		return claims{}, err
	}
	c.Scopes = knownScopes(append(scope, scp...))
	if v, ok := raw["email_verified"]; ok && !isNull(v) {
		var b bool
		if json.Unmarshal(v, &b) != nil {
			// Some issuers send "true" as a string; anything else is unreadable.
			var s string
			if json.Unmarshal(v, &s) != nil || (s != "true" && s != "false") {
				return claims{}, errClaims
			}
			b = s == "true"
		}
		c.EmailVerified = &b
	}
	return c, nil
}

func isNull(v json.RawMessage) bool { return string(bytes.TrimSpace(v)) == "null" }

func stringClaim(raw map[string]json.RawMessage, name string) (string, error) {
	v, ok := raw[name]
	if !ok || isNull(v) {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", errClaims
	}
	if len(s) > maxClaimLen || strings.ContainsFunc(s, isControl) {
		return "", errClaims
	}
	return s, nil
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// listClaim reads a string or an array of strings. With spaced, a string (and each
// array element) is split on spaces, as scope lists are.
func listClaim(raw map[string]json.RawMessage, name string, spaced bool) ([]string, error) {
	v, ok := raw[name]
	if !ok || isNull(v) {
		return nil, nil
	}
	var list []string
	var one string
	if err := json.Unmarshal(v, &one); err == nil {
		list = []string{one}
	} else if err := json.Unmarshal(v, &list); err != nil {
		return nil, errClaims
	}
	var out []string
	for _, s := range list {
		if spaced {
			out = append(out, strings.Fields(s)...)
		} else if s != "" {
			out = append(out, s)
		}
	}
	return out, nil
}

// dateClaim reads a NumericDate (RFC 7519 section 2: seconds, possibly fractional).
func dateClaim(raw map[string]json.RawMessage, name string) (time.Time, error) {
	v, ok := raw[name]
	if !ok || isNull(v) {
		return time.Time{}, nil
	}
	var f float64
	if err := json.Unmarshal(v, &f); err != nil {
		return time.Time{}, errClaims
	}
	// Before 1970 or past year 9999 is no date an issuer means; refusing it also
	// keeps the conversion below in range.
	if math.IsNaN(f) || f < 0 || f > 253402300799 {
		return time.Time{}, errClaims
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC(), nil
}

// knownScopes keeps the scopes this server knows: an issuer shared with other
// resources hands out theirs too (openid, profile, api://...), and they mean nothing
// here.
func knownScopes(in []string) []string {
	out := make([]string, 0, len(in))
	for _, s := range in {
		if slices.Contains(auth.AllScopes, s) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
