package ratelimit

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aacworkflow/aacmcp/shared/apperr"
)

// The edge's rate rules: the stack's web ACL builds one WAF rate-based rule from
// each (infra rateRules), and `aacmcp gateway --front-door` enforces the same
// table (shared/gateway), so both refuse the same traffic with the same answer.
//
// One address may carry a whole organisation: a hosted client (claude.ai,
// ChatGPT) sends every user's calls from a few egress addresses. So the
// per-address limit that stops a flood applies only to requests without a bearer
// token; a request with one is counted per token (one caller) and, far more
// loosely, per address, which still stops a flood of made-up tokens from one
// address (docs/decisions.md, "One address, many callers").

// EdgeWindow is every edge rule's evaluation window: WAF's rate-based rules count
// over the last 5 minutes.
const EdgeWindow = 5 * time.Minute

// EdgeRetryAfterSeconds is the Retry-After of an edge refusal. WAF's custom
// response headers are static, so it cannot be the time left in the window.
const EdgeRetryAfterSeconds = 60

// EdgeKey is what an edge rule counts by.
type EdgeKey int

const (
	// KeyIP counts per client address (WAF's aggregate key IP: behind CloudFront,
	// the viewer's).
	KeyIP EdgeKey = iota
	// KeyToken counts per Authorization header value (WAF custom key: the header).
	KeyToken
)

// EdgeScope is which requests an edge rule counts (its scope-down statement).
type EdgeScope int

const (
	// ScopeNoBearer: requests without a bearer token: discovery, OAuth, and every
	// request a flood can send without holding anything.
	ScopeNoBearer EdgeScope = iota
	// ScopeBearer: requests with `Authorization: Bearer ...`, valid or not.
	ScopeBearer
	// ScopeOAuthToken: the token and revocation endpoints.
	ScopeOAuthToken
	// ScopeOAuthRegister: the registration endpoint.
	ScopeOAuthRegister
)

// Paths the OAuth scopes match anywhere in the decoded, lower-cased path, as the
// WAF rules do, so that every spelling the function would serve is counted.
const (
	OAuthTokenPath    = "/oauth/token"
	OAuthRevokePath   = "/oauth/revoke"
	OAuthRegisterPath = "/oauth/register"
)

// bearerPrefix is matched case-insensitively (RFC 6750 section 2.1: the scheme is
// case-insensitive), as the WAF rule's LOWERCASE transformation does.
const bearerPrefix = "bearer "

// HasBearer reports whether a request carries a bearer token, the way the WAF
// scope-down statement reads it: the first Authorization header, lower-cased,
// starts with "bearer ".
func HasBearer(h http.Header) bool {
	return strings.HasPrefix(strings.ToLower(h.Get("Authorization")), bearerPrefix)
}

// Matches reports whether a request is in the scope.
func (s EdgeScope) Matches(path string, h http.Header) bool {
	switch s {
	case ScopeNoBearer:
		return !HasBearer(h)
	case ScopeBearer:
		return HasBearer(h)
	case ScopeOAuthToken:
		return pathContains(path, OAuthTokenPath) || pathContains(path, OAuthRevokePath)
	case ScopeOAuthRegister:
		return pathContains(path, OAuthRegisterPath)
	}
	return false
}

// pathContains is the WAF byte match CONTAINS after URL_DECODE and LOWERCASE.
func pathContains(path, s string) bool {
	if d, err := url.PathUnescape(path); err == nil {
		path = d
	}
	return strings.Contains(strings.ToLower(path), s)
}

// EdgeRule is one rate-based rule of the edge.
type EdgeRule struct {
	// Name is the WAF rule's name; Metric its CloudWatch metric.
	Name, Metric string
	Key          EdgeKey
	Scope        EdgeScope
	// Limit is the requests per EdgeWindow and key before the rule blocks.
	Limit int
	// OAuth answers with an RFC 6749 section 5.2 error, which OAuth clients
	// parse, instead of the API's {"error","code"} body.
	OAuth bool
	// Message is the refusal's human text.
	Message string
}

// Body is the JSON body of the rule's 429.
func (r EdgeRule) Body() string {
	m := map[string]string{"error": r.Message, "code": string(apperr.RateLimited)}
	if r.OAuth {
		m = map[string]string{"error": "temporarily_unavailable", "error_description": r.Message + "; retry later"}
	}
	// Marshalling a map of strings cannot fail.
	b, _ := json.Marshal(m)
	return string(b)
}

// EdgeLimits are the limits per EdgeWindow an operator tunes (docs/deploy.md).
type EdgeLimits struct {
	// Unauthenticated is per address, for requests without a bearer token.
	Unauthenticated int
	// BearerPerAddress is per address, for requests with a bearer token: sized for
	// an organisation behind a few egress addresses.
	BearerPerAddress int
	// PerToken is per bearer token: one caller.
	PerToken int
	// OAuthToken and OAuthRegister are per address, on those endpoints.
	OAuthToken    int
	OAuthRegister int
}

// DefaultEdgeLimits hold, for example, 500 people at one call a second through 8
// addresses (500 x 300 s / 8 = 18,750 bearer requests per address and window,
// 300 per token), while a flood without a token is stopped after 1,000.
func DefaultEdgeLimits() EdgeLimits {
	return EdgeLimits{Unauthenticated: 1000, BearerPerAddress: 50000, PerToken: 3000, OAuthToken: 300, OAuthRegister: 20}
}

// Rules are the edge's rate rules, in evaluation order.
func (l EdgeLimits) Rules() []EdgeRule {
	const fromAddress = "too many requests from this address"
	return []EdgeRule{
		{Name: "RateLimitPerIp", Metric: "aacmcp-rate-limit-per-ip", Key: KeyIP, Scope: ScopeNoBearer,
			Limit: l.Unauthenticated, Message: fromAddress},
		{Name: "OAuthTokenRateLimitPerIp", Metric: "aacmcp-oauth-token-rate-limit", Key: KeyIP, Scope: ScopeOAuthToken,
			Limit: l.OAuthToken, OAuth: true, Message: fromAddress},
		{Name: "OAuthRegisterRateLimitPerIp", Metric: "aacmcp-oauth-register-rate-limit", Key: KeyIP, Scope: ScopeOAuthRegister,
			Limit: l.OAuthRegister, OAuth: true, Message: fromAddress},
		{Name: "RateLimitPerToken", Metric: "aacmcp-rate-limit-per-token", Key: KeyToken, Scope: ScopeBearer,
			Limit: l.PerToken, Message: "too many requests with this token"},
		{Name: "BearerRateLimitPerIp", Metric: "aacmcp-bearer-rate-limit-per-ip", Key: KeyIP, Scope: ScopeBearer,
			Limit: l.BearerPerAddress, Message: fromAddress},
	}
}
