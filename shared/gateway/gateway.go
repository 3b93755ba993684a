// Package gateway is a local stand-in for the API Gateway REST API in front of the
// Lambda functions, the way `sam local start-api` is: it lets a developer (and the
// tests) drive the real authorizer and MCP function code with real HTTP clients.
//
// Per request it does what the deployed API does:
//   - with Config.StageInPath, serve the API under /<stage> as the default
//     execute-api URL does: a path outside the stage is 403 "Missing
//     Authentication Token" (with x-amzn-ErrorType), which no gateway response
//     of the API can change; without it, serve at the root as a custom domain with
//     an empty base path mapping does;
//   - match the route; an unknown route is 403 "Missing Authentication Token";
//   - on a route that needs the authorizer, no Authorization header is a 401 with the
//     WWW-Authenticate challenge, without calling the authorizer; its audit record
//     is made by the forwarder's own conversion of the access-log entry, as in AWS;
//   - otherwise the REQUEST authorizer is invoked (results cached 60 s per header),
//     "Unauthorized" is 401, a Deny the stack's ACCESS_DENIED gateway response (401
//     with error="invalid_token"), an authorizer failure 500;
//   - an allowed request becomes a REST (v1) proxy event with the authorizer's
//     context and stage "local", the MCP function is invoked, and its proxy response
//     is written back with the headers API Gateway REST renames (WWW-Authenticate
//     among them) renamed to X-Amzn-Remapped-<name>, as in AWS. FrontDoor models
//     the CloudFront distribution that gives clients their challenge back and
//     serves the stage at its root (docs/decisions.md).
//
// The caller does the listening (bind 127.0.0.1): New returns an http.Handler.
package gateway

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aacworkflow/aacmcp/shared/apigw"
	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/audit/accesslog"
	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/ratelimit"
)

// Defaults of Config.
const (
	DefaultStage    = "local"
	DefaultAPIID    = "local"
	DefaultCacheTTL = 60 * time.Second
	// IntegrationTimeout is API Gateway's limit for a REST integration.
	IntegrationTimeout = 29 * time.Second
	// MaxBodyBytes is API Gateway's REST payload limit.
	MaxBodyBytes = 10 << 20
	localAccount = "000000000000"
	localRegion  = "us-east-1"
)

// Config configures the gateway.
type Config struct {
	// Authorizer is the REQUEST authorizer function; Function the MCP function.
	Authorizer Invoker
	Function   Invoker
	// OAuth is the authorization server's function (functions/oauth), behind the
	// routes infra gives it without the authorizer; nil: those routes do not exist.
	OAuth Invoker
	// Audit receives the records of requests refused without reaching the
	// authorizer (in AWS: the forwarder puts them on the stream).
	Audit audit.Sink
	// Tools describes tools for those records (a catalog.Catalog).
	Tools accesslog.ToolLookup
	// Stage and APIID appear in events and method ARNs (default "local").
	Stage, APIID string
	// StageInPath serves the API under /<Stage>, as the default execute-api URL
	// does; false serves it at the root, as a custom domain whose base path mapping
	// is empty does.
	StageInPath bool
	// PublicURL is the base URL clients use (scheme://host[/base]), as the stack
	// writes it into its gateway responses' challenges: the distribution's root
	// behind the front door. "" derives it per request from Host and the stage,
	// which is what the stack's static value is on the API's own URL.
	PublicURL string
	// OriginVerify, when set, is the regional web ACL's first rule behind the
	// front door: a request whose apigw.OriginVerifyHeader is not this secret did
	// not come through the distribution and is blocked before API Gateway sees it
	// (403 waf_blocked, no access log line). FrontDoor sends it as the
	// distribution's origin custom header.
	OriginVerify string
	// RateRules, when set, are the regional web ACL's rate rules of the stack
	// without the front door (ratelimit.EdgeLimits.Rules; behind the front door
	// the distribution's web ACL holds them: Distribution.RateRules). A request
	// over a limit is WAF's 429 before API Gateway sees it.
	RateRules []ratelimit.EdgeRule
	// CacheTTL is the authorizer result cache TTL: 0 means DefaultCacheTTL, negative
	// turns caching off.
	CacheTTL time.Duration
	// Now is the clock; nil means time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// route is one API resource and method.
type route struct {
	method   string // "" matches any method (API Gateway's ANY)
	resource string
	auth     bool
	oauth    bool // served by Config.OAuth instead of Config.Function
}

// routes mirror the deployed REST API (infra). /mcp takes ANY so that GET and DELETE
// reach the function, which answers 405 (stateless server, no stream, no session).
var routes = []route{
	{method: "", resource: "/mcp", auth: true},
	{method: http.MethodGet, resource: "/tools", auth: true},
	{method: http.MethodPost, resource: "/tools/{name}", auth: true},
	{method: http.MethodGet, resource: "/.well-known/oauth-protected-resource", auth: false},
	{method: http.MethodGet, resource: "/.well-known/oauth-protected-resource/mcp", auth: false},
	{method: http.MethodGet, resource: "/healthz", auth: false},
	// The authorization server's routes (infra/oauth.go): no authorizer, since a
	// client registers, authorizes and redeems codes before it has a token.
	{method: "", resource: "/oauth/{proxy+}", oauth: true},
	{method: http.MethodGet, resource: "/.well-known/oauth-authorization-server", oauth: true},
	{method: http.MethodGet, resource: "/.well-known/openid-configuration", oauth: true},
}

// match finds the route of a path; params holds {name} or {proxy}. oauth says
// whether the authorization server's routes exist.
func match(method, path string, oauth bool) (route, map[string]string, bool) {
	for _, rt := range routes {
		if (rt.method != "" && rt.method != method) || (rt.oauth && !oauth) {
			continue
		}
		if prefix, ok := strings.CutSuffix(rt.resource, "{proxy+}"); ok {
			// A greedy path variable takes one or more segments, none empty.
			rest, ok := strings.CutPrefix(path, prefix)
			if ok && rest != "" && !strings.HasSuffix(rest, "/") && !strings.Contains(rest, "//") {
				return rt, map[string]string{"proxy": rest}, true
			}
			continue
		}
		if prefix, ok := strings.CutSuffix(rt.resource, "{name}"); ok {
			name, ok := strings.CutPrefix(path, prefix)
			if ok && name != "" && !strings.Contains(name, "/") {
				return rt, map[string]string{"name": name}, true
			}
			continue
		}
		if path == rt.resource {
			return rt, nil, true
		}
	}
	return route{}, nil, false
}

type gateway struct {
	cfg   Config
	log   *slog.Logger
	cache *policyCache
	waf   *edgeWAF // the regional web ACL's rate rules; nil: none
}

// New returns the gateway handler.
func New(cfg Config) http.Handler {
	if cfg.Stage == "" {
		cfg.Stage = DefaultStage
	}
	if cfg.APIID == "" {
		cfg.APIID = DefaultAPIID
	}
	if cfg.CacheTTL == 0 {
		cfg.CacheTTL = DefaultCacheTTL
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	g := &gateway{cfg: cfg, log: log, cache: newPolicyCache(cfg.CacheTTL, 1024)}
	if cfg.RateRules != nil {
		g.waf = newEdgeWAF(cfg.RateRules, cfg.Now)
	}
	return g
}

// exchange is one request's state, for the access log line.
type exchange struct {
	requestID string
	start     time.Time
	entry     accesslog.Entry
}

func (g *gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if g.cfg.OriginVerify != "" && subtle.ConstantTimeCompare([]byte(r.Header.Get(apigw.OriginVerifyHeader)), []byte(g.cfg.OriginVerify)) != 1 {
		// The web ACL answers before the stage: no authorizer, no function, no
		// access log line (the stack's WAF log reaches the audit pipeline instead).
		b, _ := json.Marshal(apperr.Body{Error: apigw.NotThroughFrontDoor, Code: apperr.WAFBlocked})
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write(b)
		return
	}
	if g.waf != nil {
		if rule := g.waf.block(r, sourceIP(r)); rule != nil {
			g.log.Info("blocked by the web ACL", "rule", rule.Name, "source_ip", sourceIP(r))
			refuse(w, rule)
			return
		}
	}
	now := g.cfg.Now()
	x := &exchange{requestID: newRequestID(), start: now}
	ip := sourceIP(r)
	full := r.URL.Path
	x.entry = accesslog.Entry{
		// One id serves as both: locally no client can choose either.
		ExtendedRequestID:   x.requestID,
		RequestID:           x.requestID,
		IP:                  ip,
		UserAgent:           dash(r.UserAgent()),
		RequestTime:         strconv.FormatInt(now.UnixMilli(), 10),
		HTTPMethod:          r.Method,
		ResourcePath:        "-",
		Path:                full,
		Stage:               g.cfg.Stage,
		Protocol:            r.Proto,
		ResponseType:        "-",
		IntegrationLatency:  "-",
		AuthorizerStatus:    "-",
		AuthorizerLatency:   "-",
		AuthorizerRequestID: "-",
		AuthorizerError:     "-",
	}
	var status int
	if route, ok := g.inStage(full); ok {
		r.URL.Path, r.URL.RawPath = route, ""
		status = g.serve(w, r, x, ip, full)
	} else {
		x.entry.ResponseType = "-"
		status = outsideStage(w)
	}
	x.entry.Status = strconv.Itoa(status)
	x.entry.ResponseLatency = strconv.FormatInt(g.cfg.Now().Sub(x.start).Milliseconds(), 10)
	g.log.Info("access", "access_log", x.entry)
}

// serve handles the request and returns the status it answered with.
func (g *gateway) serve(w http.ResponseWriter, r *http.Request, x *exchange, ip, full string) int {
	rt, params, ok := match(r.Method, r.URL.Path, g.cfg.OAuth != nil)
	if !ok {
		x.entry.ResponseType = "MISSING_AUTHENTICATION_TOKEN"
		return writeMessage(w, http.StatusForbidden, "Missing Authentication Token")
	}
	x.entry.ResourcePath = rt.resource

	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		x.entry.ResponseType = "REQUEST_TOO_LARGE"
		return writeMessage(w, http.StatusRequestEntityTooLarge, "Request Too Long")
	}

	var authz *authorization
	if rt.auth {
		header := strings.TrimSpace(r.Header.Get("Authorization"))
		if header == "" {
			x.entry.ResponseType = "UNAUTHORIZED"
			return g.unauthorized(w, r, x, true)
		}
		authz, err = g.authorize(r.Context(), header, r, rt, params, x, ip)
		switch {
		case errors.Is(err, errUnauthorized):
			x.entry.ResponseType = "UNAUTHORIZED"
			return g.unauthorized(w, r, x, false)
		case err != nil:
			g.log.Error("authorizer failed", "request_id", x.requestID, "err", err)
			x.entry.ResponseType = "AUTHORIZER_FAILURE"
			x.entry.AuthorizerError = err.Error()
			return writeMessage(w, http.StatusInternalServerError, "")
		case !authz.allows(g.methodArn(r.Method, r.URL.Path)):
			// The stack's ACCESS_DENIED gateway response (infra/api.go): a token the
			// authorizer saw and denied is a 401 that says error="invalid_token".
			x.entry.ResponseType = "ACCESS_DENIED"
			return g.challenge(w, r, `, error="invalid_token"`)
		}
	}

	ev := g.proxyEvent(r, rt, params, body, x, ip, authz, full)
	fn := g.cfg.Function
	if rt.oauth {
		fn = g.cfg.OAuth
	}
	return g.invokeFunction(w, r.Context(), fn, ev, x)
}

var errUnauthorized = errors.New("unauthorized")

// unauthorized answers 401 with the challenge. When the authorizer never ran (no
// header), the request's audit record is made here the way the forwarder makes it from
// the access log in AWS, and written to the audit sink.
func (g *gateway) unauthorized(w http.ResponseWriter, r *http.Request, x *exchange, noHeader bool) int {
	if noHeader {
		e := x.entry
		e.Status = "401"
		if rec, ok := e.Record(g.cfg.Tools); ok {
			// The record is owed even if the client has gone away.
			if err := g.cfg.Audit.Write(context.WithoutCancel(r.Context()), rec); err != nil {
				g.log.Error("audit record of a request without a token not delivered",
					"audit_fallback", true, "record", rec, "err", err)
			}
		}
	}
	return g.challenge(w, r, "")
}

// challenge writes the stack's UNAUTHORIZED or ACCESS_DENIED gateway response: 401
// with a static challenge (extra is what follows the pointer). API Gateway sets
// these headers itself, so they reach the client under their own name.
func (g *gateway) challenge(w http.ResponseWriter, r *http.Request, extra string) int {
	base := strings.TrimRight(g.cfg.PublicURL, "/")
	if base == "" {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		base = scheme + "://" + r.Host + g.fullPath("")
	}
	w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+base+`/.well-known/oauth-protected-resource/mcp"`+extra)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusUnauthorized)
	b, _ := json.Marshal(apperr.New(apperr.InvalidToken, auth.PublicMessage).Body())
	_, _ = w.Write(append(b, '\n'))
	return http.StatusUnauthorized
}

// authorize returns the (possibly cached) authorizer result for header.
func (g *gateway) authorize(ctx context.Context, header string, r *http.Request, rt route, params map[string]string, x *exchange, ip string) (*authorization, error) {
	now := g.cfg.Now()
	if a, ok := g.cache.get(header, now); ok {
		x.entry.AuthorizerStatus = "200"
		return a, nil
	}
	ev := events.APIGatewayCustomAuthorizerRequestTypeRequest{
		Type:                            "REQUEST",
		MethodArn:                       g.methodArn(r.Method, r.URL.Path),
		Resource:                        rt.resource,
		Path:                            r.URL.Path,
		HTTPMethod:                      r.Method,
		Headers:                         singleHeaders(r.Header),
		MultiValueHeaders:               r.Header,
		QueryStringParameters:           singleQuery(r.URL.Query()),
		MultiValueQueryStringParameters: r.URL.Query(),
		PathParameters:                  params,
		RequestContext: events.APIGatewayCustomAuthorizerRequestTypeRequestContext{
			Path:         g.fullPath(r.URL.Path),
			AccountID:    localAccount,
			ResourcePath: rt.resource,
			Stage:        g.cfg.Stage,
			RequestID:    x.requestID,
			Identity:     events.APIGatewayCustomAuthorizerRequestTypeRequestIdentity{SourceIP: ip},
			HTTPMethod:   r.Method,
			APIID:        g.cfg.APIID,
		},
	}
	payload, err := json.Marshal(ev)
	if err != nil {
		return nil, err
	}
	start := g.cfg.Now()
	ictx, cancel := context.WithTimeout(ctx, IntegrationTimeout)
	defer cancel()
	out, err := g.cfg.Authorizer.Invoke(ictx, payload)
	x.entry.AuthorizerLatency = strconv.FormatInt(g.cfg.Now().Sub(start).Milliseconds(), 10)
	x.entry.AuthorizerRequestID = x.requestID
	if err != nil {
		// API Gateway's contract: exactly the message "Unauthorized" means 401.
		if err.Error() == "Unauthorized" {
			x.entry.AuthorizerStatus = "401"
			return nil, errUnauthorized
		}
		x.entry.AuthorizerStatus = "500"
		return nil, err
	}
	var resp events.APIGatewayCustomAuthorizerResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		x.entry.AuthorizerStatus = "500"
		return nil, fmt.Errorf("authorizer answer is not a policy: %w", err)
	}
	a := &authorization{principalID: resp.PrincipalID, policy: resp.PolicyDocument, context: resp.Context}
	g.cache.put(header, a, now)
	x.entry.AuthorizerStatus = "200"
	return a, nil
}

// methodArn is the ARN API Gateway passes to the authorizer for a request.
func (g *gateway) methodArn(method, path string) string {
	return "arn:aws:execute-api:" + localRegion + ":" + localAccount + ":" + g.cfg.APIID + "/" +
		g.cfg.Stage + "/" + method + path
}

// inStage returns the route path of a request path: the path itself at the root, or
// what follows /<stage> under StageInPath.
func (g *gateway) inStage(path string) (string, bool) {
	if !g.cfg.StageInPath {
		return path, true
	}
	rest, ok := strings.CutPrefix(path, "/"+g.cfg.Stage)
	if !ok || rest == "" || rest[0] != '/' {
		return "", false
	}
	return rest, true
}

// fullPath is the path a client uses for a route path.
func (g *gateway) fullPath(route string) string {
	if g.cfg.StageInPath {
		return "/" + g.cfg.Stage + route
	}
	return route
}

// outsideStage is the execute-api host's answer to a path that names no stage of the
// API (the host root, where RFC 8414 and RFC 9728 put their well-known documents
// for a URL with a path). No stage means no deployment, so no gateway response of
// the API applies: it is always this 403.
func outsideStage(w http.ResponseWriter) int {
	w.Header().Set("x-amzn-ErrorType", "MissingAuthenticationTokenException")
	return writeMessage(w, http.StatusForbidden, "Missing Authentication Token")
}

// writeMessage writes API Gateway's own {"message": ...} answers.
func writeMessage(w http.ResponseWriter, status int, msg string) int {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	var v any
	if msg != "" {
		v = msg
	}
	b, _ := json.Marshal(map[string]any{"message": v})
	_, _ = w.Write(b)
	return status
}

func sourceIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// newRequestID is a random UUID (API Gateway's request ids are UUIDs).
func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
