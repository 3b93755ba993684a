// Package oauth is aacmcp's OAuth 2.1 authorization server: the one the MCP clients
// that cannot send a pasted token (claude.ai, Claude Desktop, ChatGPT) sign in with.
//
// It is mounted by shared/mcpserver on the origin of /mcp. The issuer is the public
// base URL of the request; the protected resource is <issuer>/mcp. The flow is the
// authorization code grant with PKCE S256 (no other grant issues tokens):
//
//	GET  /oauth/authorize   validate client, redirect URI, PKCE, resource, scope;
//	                        remember the request (store.OAuthPending) and send the
//	                        browser to sign in
//	GET  /oauth/callback    the upstream OpenID Connect provider's answer, or
//	GET|POST /oauth/signin  the dev sign-in page (--dev with no upstream)
//	GET|POST /oauth/consent the person allows some scopes in one workspace: a grant
//	                        and a 60 s code
//	POST /oauth/token       code (and later refresh token) for an access token
//	POST /oauth/register    Dynamic Client Registration (RFC 7591)
//	POST /oauth/revoke      RFC 7009
//	GET  /oauth/grants      a signed-in person's grants, each revocable
//
// Decisions:
//
//   - Access tokens are opaque (aao_), rows of the existing tokens table with ClientID
//     and GrantID set, so the verifier and the Lambda authorizer accept them with no
//     second code path, and revoking one is one write the next lookup sees. A JWT
//     would save that lookup, but the lookup already happens for personal tokens, and
//     a JWT cannot be revoked before it expires.
//   - People are found by the upstream provider's verified e-mail (email_verified
//     true), compared case-insensitively with the member records' e-mail. One
//     person may hold accounts in several workspaces; the consent page then has a
//     chooser, and a grant is for one workspace.
//   - A client that asks for no scope (claude.ai) gets all seven offered: the read
//     scopes checked, the write scopes not, so allowing without reading grants
//     reads only.
//   - Step-up: when the person already holds a live grant for this client in a
//     workspace, the consent page lists its scopes as already allowed and offers
//     only the ones being added; the new grant covers the union. The older grant is
//     left alone: another install of the same client (one CIMD client_id serves
//     every Claude Desktop) may be using it.
//   - Revoking either token of a grant (RFC 7009) revokes the whole grant: both
//     stand for one decision of the person's.
//   - Registration is open, and rate-limited per source IP, under either client
//     policy; under the allow-list, a registered client still cannot authorize until
//     an admin allows its client_id. The policy is checked at the authorization and
//     the token endpoint, so delisting a client also ends its refreshes.
//   - Nothing is handed out unaudited: a failed audit write fails the consent, the
//     token request or the registration, and undoes what it created. Revocations
//     stand whatever the audit sink says.
package oauth

import (
	"context"
	"errors"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/aacworkflow/aacmcp/shared/approval"
	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/catalog"
	"github.com/aacworkflow/aacmcp/shared/oauth/clientmeta"
	"github.com/aacworkflow/aacmcp/shared/oauth/upstream"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// Lifetimes. The pending request and its cookie outlive a slow sign-in at an identity
// provider; codes live just long enough for a client to redeem them.
const (
	DefaultAccessTokenTTL  = time.Hour
	DefaultRefreshTokenTTL = 30 * 24 * time.Hour
	// MaxAccessTokenTTL bounds Config.AccessTokenTTL. The grant keeps the ids of its
	// access tokens so that a revocation reaches them; ids older than this bound are
	// known to be expired and are pruned on refresh.
	MaxAccessTokenTTL        = 24 * time.Hour
	DefaultRegistrationLimit = 20
	PendingTTL               = 10 * time.Minute
	CodeTTL                  = 60 * time.Second
	SessionTTL               = 15 * time.Minute
	// DefaultDevWorkspace is the workspace whose members the dev sign-in page lists.
	DefaultDevWorkspace = "demo"
)

// maxFormBytes caps every request body the server reads: a token request or a
// consent form is a few hundred bytes, a registration a few kilobytes.
const maxFormBytes = 64 << 10

// RateCounter counts registrations and sign-ins per source: store.Writer's UpdateRateCounter.
type RateCounter interface {
	UpdateRateCounter(ctx context.Context, ws, key string, windowStart time.Time, window time.Duration) (int64, error)
}

// Config is what New needs. Store, Tokens, Sink, Catalog and Counter are required.
type Config struct {
	Store   store.OAuthStore
	Tokens  auth.TokenStore
	Sink    audit.Sink
	Catalog *catalog.Catalog
	// Clients fetches Client ID Metadata Documents; nil refuses metadata-document
	// client ids (registered clients still work).
	Clients *clientmeta.Fetcher
	// Upstream is the OpenID Connect provider people sign in with; nil: the dev
	// sign-in page, only when Dev.
	Upstream *upstream.Provider
	// Dev enables the dev sign-in page. The caller allows it only on loopback.
	Dev bool
	// AdminOnly: the server only revokes grants for an admin (`aacmcp oauth grants
	// revoke`) and serves no route, so having no sign-in is not worth a warning.
	AdminOnly bool
	// DevWorkspace is the workspace the dev sign-in page lists (default "demo").
	DevWorkspace    string
	AccessTokenTTL  time.Duration // default 1 h, at most MaxAccessTokenTTL
	RefreshTokenTTL time.Duration // default 30 days, rolling from the last use
	// RegistrationLimit is the number of registrations one source IP may make per
	// hour (default 20).
	RegistrationLimit int
	// PendingLimit is the number of sign-ins (each stores a pending request before
	// anyone has signed in) one source address, or IPv6 /64, may start per
	// PendingTTL (default DefaultPendingLimit).
	PendingLimit int
	Counter      RateCounter
	// OnRevoke, when set, is told the token ids of the access tokens a revocation
	// ended, after they are revoked in the store. A process that verifies tokens
	// itself (aacmcp serve) drops them from its verifier cache, so a revocation
	// there takes effect at once instead of within the cache's 60 s.
	OnRevoke func(tokenIDs []string)
	// ServiceDocumentation is advertised in the metadata when set.
	ServiceDocumentation string
	// Approvals serves the approval page (workspace policy approve); nil answers
	// it not_found.
	Approvals *approval.Desk
	Logger    *slog.Logger
	Now       func() time.Time
}

// signer is the upstream leg; *upstream.Provider in production.
type signer interface {
	AuthCodeURL(redirectURL, state, nonce, verifier string) string
	Exchange(ctx context.Context, redirectURL, code, verifier, nonce string) (upstream.Identity, error)
}

// Server answers every authorization server route. Safe for concurrent use.
type Server struct {
	cfg      Config
	upstream signer              // nil when there is none (a nil *Provider is not stored in it)
	keys     *clientmeta.KeySets // private_key_jwt clients' jwks_uri; nil without Clients
	log      *slog.Logger
	now      func() time.Time
	scopes   []scopeInfo // the seven scopes and the tools each unlocks
	pages    map[string]*template.Template
}

// New checks cfg and fills its defaults.
func New(cfg Config) (*Server, error) {
	switch {
	case cfg.Store == nil:
		return nil, errors.New("oauth: Config.Store is required")
	case cfg.Tokens == nil:
		return nil, errors.New("oauth: Config.Tokens is required")
	case cfg.Sink == nil:
		return nil, errors.New("oauth: Config.Sink is required (every grant is audited)")
	case cfg.Catalog == nil:
		return nil, errors.New("oauth: Config.Catalog is required (the consent page lists tools)")
	case cfg.Counter == nil:
		return nil, errors.New("oauth: Config.Counter is required (registration is rate-limited)")
	case cfg.AccessTokenTTL < 0 || cfg.AccessTokenTTL > MaxAccessTokenTTL:
		return nil, errors.New("oauth: Config.AccessTokenTTL must be positive and at most 24h")
	case cfg.RefreshTokenTTL < 0 || cfg.RefreshTokenTTL > auth.MaxTokenTTL:
		return nil, errors.New("oauth: Config.RefreshTokenTTL must be positive and at most 366 days")
	case cfg.RegistrationLimit < 0:
		return nil, errors.New("oauth: Config.RegistrationLimit must not be negative")
	case cfg.PendingLimit < 0:
		return nil, errors.New("oauth: Config.PendingLimit must not be negative")
	}
	if cfg.PendingLimit == 0 {
		cfg.PendingLimit = DefaultPendingLimit
	}
	if cfg.AccessTokenTTL == 0 {
		cfg.AccessTokenTTL = DefaultAccessTokenTTL
	}
	if cfg.RefreshTokenTTL == 0 {
		cfg.RefreshTokenTTL = DefaultRefreshTokenTTL
	}
	if cfg.RegistrationLimit == 0 {
		cfg.RegistrationLimit = DefaultRegistrationLimit
	}
	if cfg.DevWorkspace == "" {
		cfg.DevWorkspace = DefaultDevWorkspace
	}
	s := &Server{cfg: cfg, log: cfg.Logger, now: cfg.Now}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.now == nil {
		s.now = time.Now
	}
	if cfg.Upstream != nil {
		s.upstream = cfg.Upstream
	}
	if cfg.Clients != nil {
		s.keys = clientmeta.NewKeySets(cfg.Clients)
	}
	if s.upstream == nil && !cfg.Dev && !cfg.AdminOnly {
		s.log.Warn("oauth: no upstream identity provider and not --dev: nobody can sign in")
	}
	s.scopes = scopeCatalog(cfg.Catalog)
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	s.pages = pages
	return s, nil
}

// setUpstream replaces the upstream leg (tests of the callback's refusals).
func (s *Server) setUpstream(u signer) { s.upstream = u }

// Route paths, relative to the issuer.
const (
	pathAuthorize    = "/oauth/authorize"
	pathSignin       = "/oauth/signin"
	pathCallback     = "/oauth/callback"
	pathConsent      = "/oauth/consent"
	pathToken        = "/oauth/token"
	pathRegister     = "/oauth/register"
	pathRevoke       = "/oauth/revoke"
	pathGrants       = "/oauth/grants"
	pathGrantsRevoke = "/oauth/grants/revoke"
	pathStyle        = "/oauth/style.css"

	wellKnownAS   = "/.well-known/oauth-authorization-server"
	wellKnownOIDC = "/.well-known/openid-configuration"
)

// Owns reports whether path (as ServeOAuth would see it) is one of the server's
// routes, so a mounting mux can send exactly those here.
func Owns(path, issuer string) bool {
	_, ok := route(path, issuer)
	return ok
}

// route maps a request path to a route. The issuer's own path (an API Gateway stage
// such as /prod) may or may not have been stripped by the mounting handler; the
// metadata is also found at the host root with the issuer path appended (RFC 8414
// section 3.1) and at the OpenID-style <issuer>/.well-known/openid-configuration.
func route(path, issuer string) (string, bool) {
	ip := issuerPath(issuer)
	if ip != "" {
		switch path {
		case wellKnownAS + ip, wellKnownOIDC + ip:
			return wellKnownAS, true
		}
		if rest, ok := strings.CutPrefix(path, ip); ok && strings.HasPrefix(rest, "/") {
			path = rest
		}
	}
	switch path {
	case wellKnownAS, wellKnownOIDC:
		return wellKnownAS, true
	case pathAuthorize, pathSignin, pathCallback, pathConsent, pathToken, pathRegister,
		pathRevoke, pathGrants, pathGrantsRevoke, pathStyle, pathApprove:
		return path, true
	}
	return "", false
}

func issuerPath(issuer string) string {
	u, err := url.Parse(issuer)
	if err != nil {
		return ""
	}
	return strings.TrimRight(u.Path, "/")
}

// ServeOAuth answers every authorization server route. issuer is the public base URL
// of this request (no trailing slash), computed by the mounting handler.
func (s *Server) ServeOAuth(w http.ResponseWriter, r *http.Request, issuer string) {
	issuer = strings.TrimRight(issuer, "/")
	p, ok := route(r.URL.Path, issuer)
	if !ok {
		writeJSON(w, http.StatusNotFound, errorBody{Error: "not_found", Description: "no such authorization server route: " + r.URL.Path})
		return
	}
	if r.Body != nil {
		r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	}
	h := routes[p]
	if h.cors {
		w.Header().Set("Access-Control-Allow-Origin", "*")
		if r.Method == http.MethodOptions {
			w.Header().Set("Access-Control-Allow-Methods", strings.Join(h.methods, ", "))
			w.Header().Set("Access-Control-Allow-Headers", "Authorization, Content-Type, MCP-Protocol-Version")
			w.Header().Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
	if !slices.Contains(h.methods, r.Method) {
		w.Header().Set("Allow", strings.Join(h.methods, ", "))
		writeJSON(w, http.StatusMethodNotAllowed, errorBody{Error: string(ErrInvalidRequest), Description: r.Method + " is not allowed on " + p + "; use " + strings.Join(h.methods, " or ")})
		return
	}
	h.fn(&request{s: s, w: w, r: r, issuer: issuer})
}

// endpoint is one route's methods and handler.
type endpoint struct {
	methods []string
	fn      func(*request)
	// cors: answered to browser-based clients of any origin. Only the JSON endpoints,
	// which use no cookies, so a foreign page gains nothing it could not do itself.
	cors bool
}

var routes = map[string]endpoint{
	wellKnownAS:      {[]string{http.MethodGet}, (*request).metadata, true},
	pathAuthorize:    {[]string{http.MethodGet}, (*request).authorize, false},
	pathSignin:       {[]string{http.MethodGet, http.MethodPost}, (*request).signin, false},
	pathCallback:     {[]string{http.MethodGet}, (*request).callback, false},
	pathConsent:      {[]string{http.MethodGet, http.MethodPost}, (*request).consent, false},
	pathToken:        {[]string{http.MethodPost}, (*request).token, true},
	pathRegister:     {[]string{http.MethodPost}, (*request).register, true},
	pathRevoke:       {[]string{http.MethodPost}, (*request).revoke, true},
	pathGrants:       {[]string{http.MethodGet}, (*request).grants, false},
	pathGrantsRevoke: {[]string{http.MethodPost}, (*request).grantsRevoke, false},
	pathStyle:        {[]string{http.MethodGet}, serveStyle, false},
	pathApprove:      {[]string{http.MethodGet, http.MethodPost}, (*request).approvePage, false},
}

// request is one request in flight.
type request struct {
	s      *Server
	w      http.ResponseWriter
	r      *http.Request
	issuer string
	// claimed is the client id a token or revocation request named, before (or
	// whether or not) it authenticated: what a refusal's audit record names.
	claimed string
}

func (q *request) ctx() context.Context { return q.r.Context() }

func (q *request) resource() string { return q.issuer + "/mcp" }

func (q *request) url(path string) string { return q.issuer + path }

// secure reports whether cookies get the Secure attribute: whenever the issuer is
// https. A loopback http issuer (make run) cannot carry Secure cookies.
func (q *request) secure() bool { return strings.HasPrefix(q.issuer, "https://") }

// cookiePath scopes every cookie to the server's /oauth routes.
func (q *request) cookiePath() string { return issuerPath(q.issuer) + "/oauth" }
