// Package clientmeta decides who an OAuth client is: from a Client ID Metadata
// Document (CIMD, draft-ietf-oauth-client-id-metadata-document, fetched safely over
// HTTPS) or from an RFC 7591 Dynamic Client Registration request.
//
// Everything a client says about itself is hostile input: documents and registration
// bodies are decoded strictly (duplicate keys, wrong types, trailing data and oversize
// bodies are refused), redirect URIs are checked against the client's application type
// (RFC 8252, OpenID Connect Registration 1.0 §2 as the MCP 2026-07-28 revision asks),
// and client_name is reduced to plain printable text. Escaping for HTML is the page's
// job, not this package's.
package clientmeta

import (
	"net/url"
	"slices"
	"strings"
)

// Client is what the AS needs of a client, from a metadata document or a registration.
type Client struct {
	ClientID, Name, ClientURI, LogoURI string
	RedirectURIs                       []string
	TokenEndpointAuthMethod            string   // "none", "client_secret_post", "client_secret_basic", "private_key_jwt"
	GrantTypes                         []string // default ["authorization_code"]
	ApplicationType                    string   // "web" or "native"
	// JWKSURI or JWKS (the validated set, as JSON) holds a private_key_jwt client's
	// public keys; SigningAlg is the one algorithm its assertions may use ("" for any
	// of SigningAlgs).
	JWKSURI, JWKS, SigningAlg string
}

// Error codes (RFC 7591 §3.2.2 and RFC 6749 §5.2).
const (
	CodeInvalidClient         = "invalid_client"
	CodeInvalidClientMetadata = "invalid_client_metadata"
	CodeInvalidRedirectURI    = "invalid_redirect_uri"
)

// Values of Client fields.
const (
	AuthNone              = "none"
	AuthClientSecretPost  = "client_secret_post"
	AuthClientSecretBasic = "client_secret_basic"
	AuthPrivateKeyJWT     = "private_key_jwt" // RFC 7523 §2.2

	GrantAuthorizationCode = "authorization_code"
	GrantRefreshToken      = "refresh_token"

	ApplicationWeb    = "web"
	ApplicationNative = "native"
)

// Error carries an RFC error code (invalid_client, invalid_client_metadata,
// invalid_redirect_uri) and a human description safe to show.
type Error struct{ Code, Description string }

func (e *Error) Error() string { return e.Code + ": " + e.Description }

// maxURLBytes bounds every URL this package accepts. Browsers and proxies start failing
// around 2 KB, and a consent page has to show the value.
const maxURLBytes = 2000

// IsMetadataURL: client_id is an https URL with a path (CIMD); such ids are fetched.
//
// The rules are those of the draft's "Client Identifier URL" section: https scheme, no
// userinfo, a path, no "." or ".." path segments, no fragment. A query is allowed (the
// draft says SHOULD NOT, not MUST NOT). The test is on the string as sent, because the
// draft compares client ids by simple string comparison (RFC 3986 §6.2.1): nothing here
// normalises.
func IsMetadataURL(clientID string) bool {
	if len(clientID) > maxURLBytes || !strings.HasPrefix(clientID, "https://") {
		return false
	}
	if hasUnsafeByte(clientID) || strings.ContainsRune(clientID, '#') {
		return false
	}
	u, err := url.Parse(clientID)
	if err != nil || u.Scheme != "https" || u.Opaque != "" || u.User != nil || u.Host == "" || u.Hostname() == "" {
		return false
	}
	// The authority must be exactly what url.Parse took as the host: "@" anywhere before
	// the path would otherwise be userinfo in some other parser's reading.
	if strings.ContainsRune(u.Host, '@') || !validPort(u.Port()) || hostProblem(u.Hostname()) != "" {
		return false
	}
	p := u.EscapedPath()
	if p == "" || p[0] != '/' {
		return false
	}
	for seg := range strings.SplitSeq(p[1:], "/") {
		// %2E is an unreserved character percent-encoded; RFC 3986 §6.2.2.2 normalises it
		// to ".", so "%2e%2E" is a dot segment too. An encoded slash (%2F) is refused
		// outright: it is not a segment boundary to RFC 3986 but is one to servers that
		// decode it, so "/%2f%2E" would be a dot segment to them.
		if s, err := url.PathUnescape(seg); err != nil || s == "." || s == ".." || strings.ContainsRune(s, '/') {
			return false
		}
	}
	return true
}

// RedirectAllowed: got is one of the client's redirect URIs. RFC 9700 §4.1.3 and
// OAuth 2.1 §2.3.1 require exact string matching (no normalisation), with one
// exception, RFC 8252 §7.3: for an http redirect URI on a loopback host (127.0.0.1,
// [::1], localhost) the port may differ, because a native app listens on whatever
// port the system gives it at the time. Everything else still matches exactly:
// scheme, host as spelt (localhost is not 127.0.0.1), path and query. The token
// endpoint compares against the redirect URI of the authorization, not this list,
// so a code cannot be redeemed on yet another port.
func RedirectAllowed(c Client, got string) bool {
	if got == "" {
		return false
	}
	if slices.Contains(c.RedirectURIs, got) {
		return true
	}
	host, port, rest, ok := splitLoopbackRedirect(got)
	if !ok {
		return false
	}
	// The port is the only part left to vary, so it must be a port: one to five
	// digits without a leading zero, 1-65535 (absent is port 80).
	if port != "" && (port[0] == '0' || !validPort(port)) {
		return false
	}
	for _, u := range c.RedirectURIs {
		if h, _, r, ok := splitLoopbackRedirect(u); ok && h == host && r == rest {
			return true
		}
	}
	return false
}

// splitLoopbackRedirect splits an http loopback redirect URI into its host as spelt
// (brackets kept), its port ("" when absent) and the rest (path and query). It works
// on the string, not on a parsed URL, so the comparison of host and rest stays exact:
// no parser's normalisation can make two different strings equal. ok is false for
// anything else, and for strings a browser might read differently from this
// function: controls, spaces, backslashes, a fragment or userinfo.
func splitLoopbackRedirect(raw string) (host, port, rest string, ok bool) {
	const scheme = "http://"
	if !strings.HasPrefix(raw, scheme) || hasUnsafeByte(raw) || strings.ContainsAny(raw, "#@") {
		return "", "", "", false
	}
	authority := raw[len(scheme):]
	if i := strings.IndexAny(authority, "/?"); i >= 0 {
		authority, rest = authority[:i], authority[i:]
	}
	host = authority
	// The last colon starts the port unless it is inside an IPv6 literal's brackets.
	if i := strings.LastIndexByte(authority, ':'); i >= 0 && !strings.Contains(authority[i:], "]") {
		host, port = authority[:i], authority[i+1:]
		if port == "" {
			return "", "", "", false
		}
	}
	name := host
	if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		name = host[1 : len(host)-1]
		if !strings.Contains(name, ":") {
			return "", "", "", false
		}
	} else if strings.ContainsAny(host, "[]:") {
		return "", "", "", false
	}
	return host, port, rest, isLoopbackHost(name)
}

// hasUnsafeByte reports ASCII control characters, space and backslash. url.Parse accepts
// some of these, browsers strip or reinterpret them (WHATWG URL treats "\" as "/"), and
// an identifier that two parsers read differently is an attack surface.
func hasUnsafeByte(s string) bool {
	for i := 0; i < len(s); i++ {
		if b := s[i]; b <= 0x20 || b == 0x7f || b == '\\' {
			return true
		}
	}
	return false
}

func validPort(p string) bool {
	if p == "" {
		return true
	}
	if len(p) > 5 {
		return false
	}
	n := 0
	for i := 0; i < len(p); i++ {
		if p[i] < '0' || p[i] > '9' {
			return false
		}
		n = n*10 + int(p[i]-'0')
	}
	return n > 0 && n <= 65535
}

func (c Client) clone() Client {
	c.RedirectURIs = append([]string(nil), c.RedirectURIs...)
	c.GrantTypes = append([]string(nil), c.GrantTypes...)
	return c
}
