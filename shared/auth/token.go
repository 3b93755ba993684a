package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"hash/crc32"
	"strings"

	"github.com/oklog/ulid/v2"

	"github.com/aacworkflow/aacmcp/shared/apperr"
)

// Token format: "aac_" + 32 random base62 characters + 6 base62 characters of the
// CRC32 of everything before them. The checksum lets ParseBearer reject typos and
// truncated pastes without a store lookup, and lets secret scanners recognise leaks.
//
// OAuth access tokens share the format under their own prefix, so secret scanners and
// people can tell a connector's short-lived token from a personal one; refresh tokens
// have a third prefix and are never accepted as bearer tokens.
const (
	TokenPrefix        = "aac_"
	AccessTokenPrefix  = "aao_"
	RefreshTokenPrefix = "aar_"
	randomLen          = 32 // 32 * log2(62) ≈ 190 bits
	checksumLen        = 6  // 62^6 > 2^32, so any CRC32 fits
	TokenLen           = len(TokenPrefix) + randomLen + checksumLen
	base62Alphabet     = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
)

// Mint returns a new secret and its hash. The secret is shown to the user once; only
// the hash is stored.
func Mint() (secret, hash string, err error) { return MintWithPrefix(TokenPrefix) }

// MintWithPrefix mints a secret of the token format under one of the three prefixes.
func MintWithPrefix(prefix string) (secret, hash string, err error) {
	if len(prefix) != len(TokenPrefix) {
		return "", "", apperr.Internal(nil)
	}
	b := make([]byte, 0, TokenLen)
	b = append(b, prefix...)
	// Rejection sampling keeps every character uniform: 248 = 4*62 is the largest
	// multiple of 62 that fits in a byte.
	var buf [64]byte
	for len(b) < len(TokenPrefix)+randomLen {
		if _, err := rand.Read(buf[:]); err != nil {
			return "", "", apperr.Internal(err)
		}
		for _, c := range buf {
			if c < 248 && len(b) < len(TokenPrefix)+randomLen {
				b = append(b, base62Alphabet[c%62])
			}
		}
	}
	b = appendChecksum(b)
	secret = string(b)
	return secret, Hash(secret), nil
}

// Hash is the stored form of a secret: hex SHA-256. A fast hash is right here because
// secrets carry 190 random bits; there is nothing to brute-force.
func Hash(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// NewTokenID returns a public token id ("tok_" + ULID): safe to log and to show.
func NewTokenID() string { return "tok_" + ulid.Make().String() }

func appendChecksum(b []byte) []byte {
	c := checksum(string(b))
	return append(b, c[:]...)
}

// checksum is the base62 CRC32 (IEEE) of body, computed byte by byte from the
// standard table: hash/crc32's own functions take a []byte through a function
// value, so converting the string would cost an allocation on every request, and
// a body is 36 bytes.
func checksum(body string) [checksumLen]byte {
	crc := ^uint32(0)
	for i := 0; i < len(body); i++ {
		crc = crc32.IEEETable[byte(crc)^body[i]] ^ crc>>8
	}
	sum := ^crc
	var c [checksumLen]byte
	for i := checksumLen - 1; i >= 0; i-- {
		c[i] = base62Alphabet[sum%62]
		sum /= 62
	}
	return c
}

// ValidFormat reports whether s has the shape of a bearer secret (a personal or an
// OAuth access token) and its checksum matches.
func ValidFormat(s string) bool {
	return validFormat(s, TokenPrefix) || validFormat(s, AccessTokenPrefix)
}

// ValidRefreshFormat is ValidFormat for refresh tokens.
func ValidRefreshFormat(s string) bool { return validFormat(s, RefreshTokenPrefix) }

func validFormat(s, prefix string) bool {
	if len(s) != TokenLen || !strings.HasPrefix(s, prefix) {
		return false
	}
	for i := len(TokenPrefix); i < len(s); i++ {
		if strings.IndexByte(base62Alphabet, s[i]) < 0 {
			return false
		}
	}
	body := s[:len(s)-checksumLen]
	want := checksum(body)
	return string(want[:]) == s[len(body):]
}

// ParseBearer extracts the secret from an Authorization header value. The scheme is
// case-insensitive (RFC 9110); exactly one token must follow. Every failure is
// invalid_token with the public message shared by all token failures; the reason
// (missing or malformed) is available through RejectReason.
func ParseBearer(header string) (string, error) {
	secret, err := parseCredential(header)
	if err != nil {
		return "", err
	}
	if !ValidFormat(secret) {
		return "", reject(ReasonMalformed, "")
	}
	return secret, nil
}

// ParseBearerOrJWT is ParseBearer for a server that also accepts JWT access tokens
// of an external issuer: it returns the credential and whether it has the shape of
// a JWT (which the caller must verify as one). Anything else must be a secret of
// the token format, as for ParseBearer.
func ParseBearerOrJWT(header string) (cred string, isJWT bool, err error) {
	cred, err = parseCredential(header)
	if err != nil {
		return "", false, err
	}
	if ValidFormat(cred) {
		return cred, false, nil
	}
	if LooksLikeJWT(cred) {
		return cred, true, nil
	}
	return "", false, reject(ReasonMalformed, "")
}

// LooksLikeJWT reports whether s has the shape of a JWS in compact serialization:
// three base64url segments, the first two non-empty (the third is empty for alg
// none, which the JWT verifier refuses by name). Opaque secrets never match: they
// have no dots.
func LooksLikeJWT(s string) bool {
	if strings.Count(s, ".") != 2 {
		return false
	}
	h, rest, _ := strings.Cut(s, ".")
	p, _, _ := strings.Cut(rest, ".")
	if h == "" || p == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// parseCredential reads the scheme and the one credential after it.
func parseCredential(header string) (string, error) {
	header = strings.Trim(header, " \t")
	if header == "" {
		return "", reject(ReasonMissing, "")
	}
	scheme, rest, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", reject(ReasonMalformed, "")
	}
	secret := strings.TrimLeft(rest, " ")
	if secret == "" || strings.ContainsAny(secret, " \t") {
		return "", reject(ReasonMalformed, "")
	}
	return secret, nil
}
