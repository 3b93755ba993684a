package oauth

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/url"
	"slices"
	"strings"

	"github.com/aacworkflow/aacmcp/shared/auth"
)

// single returns the one value of name in v. RFC 6749 section 3.1 and 3.2: request
// parameters must not be repeated; a repeated one is invalid_request, so two parts of
// the server can never read different values of the same parameter.
func single(v url.Values, name string) (string, *Error) {
	vals := v[name]
	switch len(vals) {
	case 0:
		return "", nil
	case 1:
		return vals[0], nil
	}
	return "", oerr(ErrInvalidRequest, "the parameter "+name+" is repeated; send it once")
}

// maxParamLen bounds every string parameter: nothing legitimate comes close, and a
// bound keeps what is stored and echoed small.
const maxParamLen = 2048

// param is single with the length bound and a required flag.
func param(v url.Values, name string, required bool) (string, *Error) {
	s, e := single(v, name)
	switch {
	case e != nil:
		return "", e
	case s == "" && required:
		return "", oerr(ErrInvalidRequest, "the parameter "+name+" is required")
	case len(s) > maxParamLen:
		return "", oerr(ErrInvalidRequest, "the parameter "+name+" is longer than 2048 bytes")
	}
	return s, nil
}

// parseScope decodes an RFC 6749 section 3.3 scope: space-separated scope names,
// each one of auth.AllScopes. The result is sorted and deduplicated; "" gives nil.
func parseScope(s string) ([]string, *Error) {
	if len(s) > maxParamLen {
		return nil, oerr(ErrInvalidScope, "the scope is longer than 2048 bytes")
	}
	var out []string
	for _, name := range strings.Split(s, " ") {
		if name == "" {
			continue // tolerate doubled spaces: they cannot change the meaning
		}
		if !slices.Contains(auth.AllScopes, name) {
			return nil, oerr(ErrInvalidScope, "unknown scope "+quote(name)+"; this server offers "+strings.Join(auth.AllScopes, " "))
		}
		out = append(out, name)
	}
	if len(out) == 0 {
		return nil, nil
	}
	return slices.Compact(slices.Sorted(slices.Values(out))), nil
}

// subset reports whether every scope of a is in b.
func subset(a, b []string) bool {
	for _, s := range a {
		if !slices.Contains(b, s) {
			return false
		}
	}
	return true
}

// union is a ∪ b, sorted.
func union(a, b []string) []string {
	return slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(a), b...))))
}

// minus is a \ b, in a's order.
func minus(a, b []string) []string {
	var out []string
	for _, s := range a {
		if !slices.Contains(b, s) {
			out = append(out, s)
		}
	}
	return out
}

// quote shows a client-supplied value in a description, cut short and with control
// characters dropped, so an error message cannot be made to say something else.
func quote(s string) string {
	const max = 64
	var b strings.Builder
	b.WriteByte('"')
	n := 0
	for _, r := range s {
		if n == max {
			b.WriteString("...")
			break
		}
		if r < 0x20 || r == 0x7f || r == '"' || r == '\\' {
			r = '?'
		}
		b.WriteRune(r)
		n++
	}
	b.WriteByte('"')
	return b.String()
}

// PKCE (RFC 7636). A challenge is BASE64URL(SHA-256(verifier)) without padding:
// exactly 43 characters. A verifier is 43 to 128 unreserved characters.
func validChallenge(c string) bool {
	if len(c) != 43 {
		return false
	}
	for i := 0; i < len(c); i++ {
		if !isBase64URL(c[i]) {
			return false
		}
	}
	return true
}

func isBase64URL(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_'
}

func validVerifier(v string) bool {
	if len(v) < 43 || len(v) > 128 {
		return false
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; !isBase64URL(c) && c != '.' && c != '~' {
			return false
		}
	}
	return true
}

// s256 is the S256 challenge of a verifier.
func s256(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// verifierMatches compares in constant time: the challenge is not secret, but the
// comparison should not be where a timing difference is even a question.
func verifierMatches(verifier, challenge string) bool {
	return subtle.ConstantTimeCompare([]byte(s256(verifier)), []byte(challenge)) == 1
}

// randomString is 32 random bytes, base64url: ids of pending requests, codes,
// cookies, CSRF tokens, client ids and secrets. 256 bits leave nothing to guess.
func randomString() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// hashEqual compares a secret against a stored hash in constant time; an empty
// stored hash never matches.
func hashEqual(secret, storedHash string) bool {
	if storedHash == "" || secret == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(auth.Hash(secret)), []byte(storedHash)) == 1
}
