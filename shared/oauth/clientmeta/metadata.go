package clientmeta

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

const (
	// maxNameRunes caps client_name: enough for any real product name, short enough
	// that a consent page cannot be filled with text that pushes the host out of view.
	maxNameRunes = 100
	// maxRedirectURIs bounds the registered list; real clients register one to three.
	maxRedirectURIs = 20
	// maxDepth bounds JSON nesting in bodies we only partly understand.
	maxDepth = 16
)

// MaxRegistrationBytes is the largest registration body ParseRegistration accepts. The
// handler should read at most MaxRegistrationBytes+1 bytes so a larger one is refused
// rather than truncated.
const MaxRegistrationBytes = 16 << 10

// origin says which rules apply: a registration may ask for a client secret, a
// metadata document never can (the draft's "Credential and Key Material Restrictions").
type origin int

const (
	fromRegistration origin = iota
	fromDocument
)

// problem is a validation failure before it gets its RFC code: redirect says the fault
// is in redirect_uris (invalid_redirect_uri for a registration).
type problem struct {
	redirect bool
	desc     string
}

func metadataProblem(format string, a ...any) *problem {
	return &problem{desc: fmt.Sprintf(format, a...)}
}

func redirectProblem(format string, a ...any) *problem {
	return &problem{redirect: true, desc: fmt.Sprintf(format, a...)}
}

// ignoredTyped are RFC 7591 §2 members this server does not use. They are still
// type-checked: a body whose known members have the wrong JSON type is malformed, and
// accepting it would hide a client bug until some later version starts reading them.
var ignoredTyped = map[string]jsonKind{
	"scope":            kindString,
	"contacts":         kindStringArray,
	"tos_uri":          kindString,
	"policy_uri":       kindString,
	"jwks_uri":         kindString,
	"jwks":             kindObject,
	"software_id":      kindString,
	"software_version": kindString,
	// A software statement is a JWT this server does not verify (RFC 7591 §3.1.1 lets
	// the AS ignore it); it is only type-checked.
	"software_statement": kindString,
}

type jsonKind int

const (
	kindString jsonKind = iota
	kindStringArray
	kindObject
)

// parseMetadata decodes and validates client metadata. For a document, clientID is the
// URL it was fetched from and must equal the document's client_id.
func parseMetadata(body []byte, from origin, clientID string) (Client, *problem) {
	m, p := decodeObject(body)
	if p != nil {
		return Client{}, p
	}
	var c Client

	if from == fromDocument {
		id, ok, p := getString(m, "client_id")
		if p != nil {
			return Client{}, p
		}
		// Simple string comparison (RFC 3986 §6.2.1), as the draft requires: no
		// trailing-slash, port or case leniency.
		if !ok || id != clientID {
			return Client{}, metadataProblem("client_id in the document does not equal the URL it was fetched from")
		}
		c.ClientID = clientID
		for _, k := range []string{"client_secret", "client_secret_expires_at"} {
			if _, ok := m[k]; ok {
				return Client{}, metadataProblem("%s must not appear in a client metadata document", k)
			}
		}
	}

	for k, kind := range ignoredTyped {
		if p := checkKind(m, k, kind); p != nil {
			return Client{}, p
		}
	}

	name, _, p := getString(m, "client_name")
	if p != nil {
		return Client{}, p
	}
	c.Name = sanitizeName(name)

	for _, f := range []struct {
		key string
		dst *string
	}{{"client_uri", &c.ClientURI}, {"logo_uri", &c.LogoURI}} {
		v, ok, p := getString(m, f.key)
		if p != nil {
			return Client{}, p
		}
		if !ok {
			continue
		}
		if d := checkHTTPSURL(v); d != "" {
			return Client{}, metadataProblem("%s %s", f.key, d)
		}
		*f.dst = v
	}

	if p = authMethod(m, from, &c); p != nil {
		return Client{}, p
	}
	if c.GrantTypes, p = grantTypes(m); p != nil {
		return Client{}, p
	}

	uris, ok, p := getStrings(m, "redirect_uris")
	if p != nil {
		return Client{}, &problem{redirect: true, desc: p.desc}
	}
	if !ok || len(uris) == 0 {
		return Client{}, redirectProblem("redirect_uris is required and must list at least one URI")
	}
	if len(uris) > maxRedirectURIs {
		return Client{}, redirectProblem("redirect_uris lists more than %d URIs", maxRedirectURIs)
	}
	// Duplicates change nothing under exact matching; keep the first of each.
	for _, u := range uris {
		if !slices.Contains(c.RedirectURIs, u) {
			c.RedirectURIs = append(c.RedirectURIs, u)
		}
	}

	appType, ok, p := getString(m, "application_type")
	if p != nil {
		return Client{}, p
	}
	switch {
	case !ok:
		// RFC 7591 has no application_type; OIDC Registration defaults it to "web". The
		// MCP 2026-07-28 revision ("Application Type and Redirect URI Constraints") says
		// clients MUST send it and that "non-OIDC servers safely ignore the parameter".
		// This AS issues no ID tokens, so it does not impose the OIDC default on clients
		// that predate the rule (mcp-go and TS SDK v1 send none): it infers the type from
		// the redirect URIs, and the URIs are then checked against that type.
		c.ApplicationType = inferApplicationType(c.RedirectURIs)
	case appType == ApplicationWeb || appType == ApplicationNative:
		c.ApplicationType = appType
	default:
		return Client{}, metadataProblem(`application_type must be "web" or "native"`)
	}
	for _, u := range c.RedirectURIs {
		if d := checkRedirectURI(u, c.ApplicationType); d != "" {
			return Client{}, redirectProblem("redirect URI %s %s", quoteShort(u), d)
		}
	}
	return c, nil
}

// authMethod sets c's token endpoint authentication: the method and, for
// private_key_jwt (RFC 7523 §2.2), where its keys are and the algorithm it signs with.
func authMethod(m map[string]json.RawMessage, from origin, c *Client) *problem {
	v, ok, p := getString(m, "token_endpoint_auth_method")
	if p != nil {
		return p
	}
	switch {
	case !ok && from == fromDocument:
		// A document cannot hold a secret, so absent means "none" here, not the
		// RFC 7591 default.
		v = AuthNone
	case !ok:
		// RFC 7591 §2: "If unspecified or omitted, the default is client_secret_basic".
		v = AuthClientSecretBasic
	}
	switch {
	case v == AuthPrivateKeyJWT:
		c.TokenEndpointAuthMethod = v
		return clientKeys(m, c)
	case v == AuthNone, from == fromRegistration && (v == AuthClientSecretPost || v == AuthClientSecretBasic):
		c.TokenEndpointAuthMethod = v
		return nil
	case from == fromDocument:
		// A document is public: there is no channel to agree a shared secret.
		return metadataProblem(`token_endpoint_auth_method must be "none" or "private_key_jwt" for a client metadata document client`)
	}
	return metadataProblem(`token_endpoint_auth_method must be one of "none", "client_secret_post", "client_secret_basic", "private_key_jwt"`)
}

// grantTypes applies RFC 7591 §2 defaults and keeps the grant types this server
// offers ("authorization_code", "refresh_token"). Others are dropped, not refused: a
// client lists every grant it can use anywhere (claude.ai's document lists
// urn:ietf:params:oauth:grant-type:jwt-bearer), RFC 7591 §2 lets the server replace
// requested values with what it supports, and a grant the server does not offer is
// refused where it is used, at the token endpoint, with unsupported_grant_type. The
// same goes for response types: only "code" is kept. What must remain is the code
// flow (§2.1 pairs response type "code" with grant type "authorization_code"), since
// it is the only flow here: a client without it could never get a token.
func grantTypes(m map[string]json.RawMessage) ([]string, *problem) {
	gts, ok, p := getStrings(m, "grant_types")
	if p != nil {
		return nil, p
	}
	if !ok {
		gts = []string{GrantAuthorizationCode}
	}
	var out []string
	for _, g := range gts {
		if (g == GrantAuthorizationCode || g == GrantRefreshToken) && !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	if !slices.Contains(out, GrantAuthorizationCode) {
		return nil, metadataProblem(`grant_types must include "authorization_code", the only flow this server runs`)
	}
	rts, ok, p := getStrings(m, "response_types")
	if p != nil {
		return nil, p
	}
	if ok && !slices.Contains(rts, "code") {
		return nil, metadataProblem(`response_types must include "code" (RFC 7591 §2.1: the authorization_code grant uses it)`)
	}
	return out, nil
}

// inferApplicationType is the type of a client that sent no application_type: native
// when any redirect URI is on loopback or uses a private-use scheme, so one whose
// redirect URIs are all loopback (Claude Code's document) is native; otherwise web.
// Such a client runs on the person's device (RFC 8252 §7), and a web client could
// not register those URIs at all (checkRedirectURI). A mix with https URIs is native
// too: native clients may also use https (claimed URLs, RFC 8252 §7.2).
func inferApplicationType(uris []string) string {
	for _, raw := range uris {
		u, err := url.Parse(raw)
		if err != nil {
			continue
		}
		if (u.Scheme != "https" && u.Scheme != "http") || isLoopbackHost(u.Hostname()) {
			return ApplicationNative
		}
	}
	return ApplicationWeb
}

// checkRedirectURI returns "" when raw may be registered for a client of appType, or a
// reason. The rules:
//   - absolute, no fragment (RFC 6749 §3.1.2), no userinfo (a "https://good@evil"
//     redirect misleads the person reading the consent page);
//   - web: https on a non-loopback host. The MCP 2026-07-28 revision classes apps
//     served from localhost as native, OIDC Registration §2 says web clients "MUST NOT
//     use localhost", and MCP's security considerations allow only https or localhost;
//   - native (RFC 8252): http on the loopback literals 127.0.0.1 and [::1] (§7.3) or
//     localhost (§8.3 says NOT RECOMMENDED, but OIDC Registration's errata and the MCP
//     example document use it), a private-use scheme (§7.1: reverse domain name, so the
//     scheme contains a "."; this also rules out javascript:, data: and file:), or
//     https (§7.2, claimed URLs).
func checkRedirectURI(raw, appType string) string {
	if raw == "" {
		return "is empty"
	}
	if len(raw) > maxURLBytes {
		return fmt.Sprintf("is longer than %d bytes", maxURLBytes)
	}
	if hasUnsafeByte(raw) {
		return "contains a space, control character or backslash"
	}
	if strings.ContainsRune(raw, '#') {
		return "must not contain a fragment"
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return "is not an absolute URI"
	}
	if u.User != nil || strings.ContainsRune(u.Host, '@') {
		return "must not contain userinfo"
	}
	if !validPort(u.Port()) {
		return "has an invalid port"
	}
	host := u.Hostname()
	if p := hostProblem(host); p != "" {
		return p
	}
	switch u.Scheme {
	case "https":
		if host == "" {
			return "has no host"
		}
		if appType == ApplicationWeb && isLoopbackHost(host) {
			return `points at loopback, which only a client registered with application_type "native" may use`
		}
		return ""
	case "http":
		if !isLoopbackHost(host) {
			return "must use https (http is allowed only on loopback for native clients)"
		}
		if appType != ApplicationNative {
			return `uses http on loopback, which only a client registered with application_type "native" may use`
		}
		return ""
	}
	if appType != ApplicationNative {
		return `uses a private-use scheme, which only a client registered with application_type "native" may use`
	}
	if !strings.Contains(u.Scheme, ".") {
		return "must use https, http on loopback, or a reverse-domain private-use scheme such as com.example.app:/callback (RFC 8252 §7.1)"
	}
	return ""
}

// isLoopbackHost accepts exactly the spellings RFC 8252 and OIDC Registration name.
func isLoopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(h)
	return err == nil && a.Zone() == "" && (a == netip.MustParseAddr("127.0.0.1") || a == netip.IPv6Loopback())
}

// checkHTTPSURL validates client_uri and logo_uri: the consent page links or shows
// them, so only https URLs with a host are acceptable.
func checkHTTPSURL(raw string) string {
	if len(raw) > maxURLBytes {
		return fmt.Sprintf("is longer than %d bytes", maxURLBytes)
	}
	if hasUnsafeByte(raw) {
		return "contains a space, control character or backslash"
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.Hostname() == "" {
		return "must be an https URL"
	}
	if u.User != nil || strings.ContainsRune(u.Host, '@') || !validPort(u.Port()) {
		return "must be an https URL without userinfo"
	}
	return hostProblem(u.Hostname())
}

// sanitizeName makes client_name plain text: whitespace of every kind becomes one
// space, control and format characters (Cc, Cf: including bidi overrides and zero-width
// characters that can disguise a name) are dropped, and the result is capped. It is not
// HTML-escaped: "<script>" stays as those characters, for html/template to escape.
func sanitizeName(s string) string {
	var b strings.Builder
	n, space := 0, false
	for _, r := range s {
		switch {
		case unicode.IsSpace(r):
			space = b.Len() > 0
			continue
		case unicode.Is(unicode.Cc, r), unicode.Is(unicode.Cf, r), r == utf8.RuneError:
			continue
		}
		if space {
			if n+1 >= maxNameRunes {
				break
			}
			b.WriteByte(' ')
			n++
			space = false
		}
		if n >= maxNameRunes {
			break
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}

// quoteShort quotes a client-supplied value for a description, cut so that an error
// message stays readable.
func quoteShort(s string) string {
	const limit = 80
	if utf8.RuneCountInString(s) > limit {
		r := []rune(s)
		s = string(r[:limit]) + "..."
	}
	return fmt.Sprintf("%q", s)
}

// decodeObject decodes a JSON object strictly: valid UTF-8, a single object and nothing
// after it, no duplicate member names at any depth (RFC 8259 §4 leaves their meaning to
// the parser, so two parsers could read two different clients), bounded nesting.
// Member names are matched exactly, unlike encoding/json's case-insensitive struct
// fields, so "Client_ID" is not client_id.
func decodeObject(body []byte) (map[string]json.RawMessage, *problem) {
	if !utf8.Valid(body) {
		return nil, metadataProblem("the body is not valid UTF-8")
	}
	if p := checkStrict(body); p != nil {
		return nil, p
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, metadataProblem("the body is not a valid JSON object")
	}
	return m, nil
}

// jsonFrame is one open object or array while checkStrict walks the tokens.
type jsonFrame struct {
	object, wantKey bool
	keys            map[string]struct{}
}

func checkStrict(body []byte) *problem {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var stack []*jsonFrame
	// valueDone records that the enclosing object's current member has its value.
	valueDone := func() {
		if len(stack) > 0 {
			stack[len(stack)-1].wantKey = true
		}
	}
	invalid := metadataProblem("the body is not a valid JSON object")
	started := false
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			if !started || len(stack) != 0 {
				return invalid
			}
			return nil
		}
		if err != nil {
			return invalid
		}
		if started && len(stack) == 0 {
			return metadataProblem("the body has data after the JSON object")
		}
		if !started {
			if d, ok := tok.(json.Delim); !ok || d != '{' {
				return metadataProblem("the body must be a JSON object")
			}
			started = true
			stack = append(stack, &jsonFrame{object: true, wantKey: true, keys: map[string]struct{}{}})
			continue
		}
		top := stack[len(stack)-1]
		if top.object && top.wantKey {
			if tok == json.Delim('}') {
				stack = stack[:len(stack)-1]
				valueDone()
				continue
			}
			key, ok := tok.(string)
			if !ok {
				return invalid
			}
			if _, dup := top.keys[key]; dup {
				return metadataProblem("the member %s appears more than once", quoteShort(key))
			}
			top.keys[key] = struct{}{}
			top.wantKey = false
			continue
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			if len(stack) >= maxDepth {
				return metadataProblem("the body nests deeper than %d levels", maxDepth)
			}
			f := &jsonFrame{object: tok == json.Delim('{'), wantKey: true}
			if f.object {
				f.keys = map[string]struct{}{}
			}
			stack = append(stack, f)
		case json.Delim(']'):
			stack = stack[:len(stack)-1]
			valueDone()
		default:
			valueDone()
		}
	}
}

// getString reads an optional string member; null counts as absent.
func getString(m map[string]json.RawMessage, key string) (string, bool, *problem) {
	raw, ok := m[key]
	if !ok || isNull(raw) {
		return "", false, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false, metadataProblem("%s must be a string", key)
	}
	return s, true, nil
}

// getStrings reads an optional array of strings; null counts as absent.
func getStrings(m map[string]json.RawMessage, key string) ([]string, bool, *problem) {
	raw, ok := m[key]
	if !ok || isNull(raw) {
		return nil, false, nil
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		return nil, false, metadataProblem("%s must be an array of strings", key)
	}
	out := make([]string, 0, len(elems))
	for _, e := range elems {
		var s string
		if isNull(e) || json.Unmarshal(e, &s) != nil {
			return nil, false, metadataProblem("%s must be an array of strings", key)
		}
		out = append(out, s)
	}
	return out, true, nil
}

func checkKind(m map[string]json.RawMessage, key string, kind jsonKind) *problem {
	switch kind {
	case kindString:
		_, _, p := getString(m, key)
		return p
	case kindStringArray:
		_, _, p := getStrings(m, key)
		return p
	}
	raw, ok := m[key]
	if !ok || isNull(raw) {
		return nil
	}
	if raw[0] != '{' {
		return metadataProblem("%s must be an object", key)
	}
	return nil
}

func isNull(raw json.RawMessage) bool { return string(raw) == "null" }
