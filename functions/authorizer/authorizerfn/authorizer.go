// Package authorizerfn is the API Gateway REQUEST authorizer: it turns
// `Authorization: Bearer <token>` into an Allow policy for the whole API and the
// principal as authorizer context, with the same auth.Verifier the local server uses.
//
// Every refusal writes one audit record; an Allow writes none (the MCP function
// audits the call). The answers, and the 401 API Gateway makes of each
// (infra/api.go's gateway responses):
//   - a credential the authorizer looked at and refused (malformed, another scheme,
//     unknown, expired, revoked, a JWT that fails) is a Deny policy for the whole
//     API under the PrincipalID DeniedPrincipal, with no context. API Gateway
//     answers it with the ACCESS_DENIED gateway response, whose challenge says
//     error="invalid_token" (RFC 6750 section 3.1, the rule `aacmcp serve` applies
//     to any non-blank header), and caches it per Authorization header for the
//     TTL like any policy, which holds no valid token: revocation and expiry are
//     final (docs/decisions.md has the rare exceptions);
//   - no credential at all is the error "Unauthorized": the UNAUTHORIZED gateway
//     response, a challenge without an error code;
//   - a verification that could not be done (tokens table or the issuer's JWKS
//     unreachable) is any other error: a 500, so the client keeps its token.
//
// Every credential is verified, whatever its source address did before: one
// address may be a hosted client's egress shared by a whole organisation, and an
// authorizer can only answer 401 or 500, never the 429 a refusal for volume must
// be. Volume is refused at the edge (WAF); failed attempts are only counted per
// address, and an address past the limit is reported (docs/decisions.md, "One
// address, many callers").
package authorizerfn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aacworkflow/aacmcp/shared/apigw"
	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/audit/record"
	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/authzctx"
)

// ErrUnauthorized is the one error text API Gateway maps to 401 (its UNAUTHORIZED
// gateway response). Any other error is a 500. It answers a request about whose
// token nothing was decided; a refused token gets a Deny policy instead.
// API Gateway matches this exact, capitalised text.
var ErrUnauthorized = errors.New("Unauthorized")

// DeniedPrincipal is the PrincipalID of a Deny: API Gateway requires one, and it
// must name no user, since access logs and $context.authorizer.principalId show it.
const DeniedPrincipal = "invalid_token"

// Verifier checks a bearer secret (auth.Verifier does).
type Verifier interface {
	Verify(ctx context.Context, secret string) (auth.Principal, error)
}

// Rejecter audits a refused request (GuardRejecter does).
type Rejecter interface {
	RecordRejected(ctx context.Context, req record.Request, err *apperr.Error)
}

// Config wires an Authorizer.
type Config struct {
	Verifier Verifier
	// JWT, when set, verifies bearer credentials shaped like a JWT: access tokens of
	// an external authorization server (shared/auth/jwtaccess). Opaque secrets
	// still go to Verifier.
	JWT   Verifier
	Audit Rejecter
	// Failures counts rejected credentials per IP; nil counts nothing.
	Failures FailureCounter
	// FailureLimit is how many failures an IP may have per window before the
	// authorizer reports it as probing (msgOverFailureLimit). It refuses nothing.
	FailureLimit int64
	// TrustViewerAddress attributes a request to its CloudFront-Viewer-Address
	// (apigw.SourceIP) instead of API Gateway's source IP, which behind the front
	// door is a CloudFront edge server: the failed-attempt limit would otherwise
	// count every viewer of that edge together, and audit records name the edge.
	TrustViewerAddress bool

	Now    func() time.Time
	Logger *slog.Logger
}

// Authorizer is the handler. Safe for concurrent use.
type Authorizer struct {
	cfg Config
	log *slog.Logger
}

// New returns an Authorizer.
func New(cfg Config) *Authorizer {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Authorizer{cfg: cfg, log: log}
}

// Handle is the Lambda handler.
func (a *Authorizer) Handle(ctx context.Context, req events.APIGatewayCustomAuthorizerRequestTypeRequest) (events.APIGatewayCustomAuthorizerResponse, error) {
	now := a.cfg.Now()
	ip := a.sourceIP(req)
	resource, err := apiWildcard(req.MethodArn)
	if err != nil {
		// A malformed ARN is API Gateway's (or a test's) fault, not the caller's: 500.
		a.log.Error("authorizer request has an unusable methodArn", "method_arn", req.MethodArn, "err", err)
		return events.APIGatewayCustomAuthorizerResponse{}, errors.New("invalid methodArn")
	}

	p, err := a.verify(ctx, header(req, "Authorization"))
	if err != nil {
		e := apperr.As(err)
		if e.Code != apperr.InvalidToken {
			// The tokens table failed: a 500, not a 401, so the client does not
			// throw away a good token. Nothing was decided about the caller.
			a.log.Error("token verification failed", "request_id", req.RequestContext.RequestID, "err", err)
			return events.APIGatewayCustomAuthorizerResponse{}, errors.New("token verification unavailable")
		}
		var rej *auth.RejectError
		errors.As(err, &rej)
		a.reject(ctx, req, e, rej)
		a.countFailure(ctx, ip, now)
		reason := auth.RejectReason(err)
		a.log.Info("token rejected", "request_id", req.RequestContext.RequestID,
			"reason", string(reason), "source_ip", ip)
		if reason == auth.ReasonMissing {
			// No credential: RFC 6750 wants a challenge without an error code. API
			// Gateway does not invoke the authorizer without the header, so this is
			// a blank header or a direct invocation.
			return events.APIGatewayCustomAuthorizerResponse{}, ErrUnauthorized
		}
		return events.APIGatewayCustomAuthorizerResponse{
			PrincipalID:    DeniedPrincipal,
			PolicyDocument: policy("Deny", resource),
		}, nil
	}

	return events.APIGatewayCustomAuthorizerResponse{
		PrincipalID:    p.UserID,
		PolicyDocument: policy("Allow", resource),
		Context: map[string]any{
			authzctx.WorkspaceID: p.WorkspaceID,
			authzctx.UserID:      p.UserID,
			authzctx.TokenID:     p.TokenID,
			authzctx.Scopes:      p.ScopeString(),
			authzctx.ClientID:    p.ClientID,
			authzctx.ExpiresAt:   strconv.FormatInt(p.ExpiresAt.Unix(), 10),
		},
	}, nil
}

// msgOverFailureLimit is the warning that names an address crossing the
// failed-attempt limit: a log metric filter or Logs Insights finds probers by it.
const msgOverFailureLimit = "source over the failed-attempt limit"

// countFailure counts a refused credential for its address and reports the
// address once per window, when its count crosses the limit. The count decides
// nothing: the next credential from the address is verified like any other.
func (a *Authorizer) countFailure(ctx context.Context, ip string, now time.Time) {
	if a.cfg.Failures == nil || ip == "" {
		return
	}
	n, err := a.cfg.Failures.AddFailure(ctx, ip, now)
	if err != nil {
		a.log.Warn("failed attempt not counted", "err", err)
		return
	}
	if n == a.cfg.FailureLimit+1 {
		a.log.Warn(msgOverFailureLimit, "source_ip", ip, "failures", n, "limit", a.cfg.FailureLimit)
	}
}

// policy is the one-statement policy of effect for resource (the whole API: a Deny
// too is cached per header and must refuse the token on every route).
func policy(effect, resource string) events.APIGatewayCustomAuthorizerPolicy {
	return events.APIGatewayCustomAuthorizerPolicy{
		Version: "2012-10-17",
		Statement: []events.IAMPolicyStatement{{
			Action:   []string{"execute-api:Invoke"},
			Effect:   effect,
			Resource: []string{resource},
		}},
	}
}

// Denied reports whether resp is the authorizer's Deny of a refused token: the
// whole-API Deny under DeniedPrincipal with no context, nothing else. Tests and
// callers of Handle use it instead of taking the policy apart.
func Denied(resp events.APIGatewayCustomAuthorizerResponse) bool {
	st := resp.PolicyDocument.Statement
	return resp.PrincipalID == DeniedPrincipal && len(resp.Context) == 0 && resp.UsageIdentifierKey == "" &&
		resp.PolicyDocument.Version == "2012-10-17" && len(st) == 1 && st[0].Effect == "Deny" &&
		len(st[0].Action) == 1 && st[0].Action[0] == "execute-api:Invoke" &&
		len(st[0].Resource) == 1 && strings.HasSuffix(st[0].Resource[0], "/*/*")
}

func (a *Authorizer) verify(ctx context.Context, authorization string) (auth.Principal, error) {
	return auth.VerifyBearer(ctx, authorization, a.cfg.Verifier, a.cfg.JWT)
}

// sourceIP is the address the request is attributed to.
func (a *Authorizer) sourceIP(req events.APIGatewayCustomAuthorizerRequestTypeRequest) string {
	return apigw.SourceIP(req.Headers, req.MultiValueHeaders, req.RequestContext.Identity.SourceIP, a.cfg.TrustViewerAddress)
}

// reject writes the one audit record of a refused request.
func (a *Authorizer) reject(ctx context.Context, req events.APIGatewayCustomAuthorizerRequestTypeRequest, e *apperr.Error, rej *auth.RejectError) {
	tool, transport := record.Route(req.Resource, req.Path, req.PathParameters)
	gr := record.Request{
		Tool:      tool,
		Transport: transport,
		RequestID: req.RequestContext.RequestID,
		UserAgent: header(req, "User-Agent"),
		SourceIP:  a.sourceIP(req),
	}
	if rej != nil && rej.TokenID != "" {
		// An expired or revoked token is known: its public id, and its OAuth client,
		// help spot misuse.
		gr.Principal = &auth.Principal{TokenID: rej.TokenID, ClientID: rej.ClientID}
	}
	a.cfg.Audit.RecordRejected(ctx, gr, e)
}

// apiWildcard turns a method ARN (arn:aws:execute-api:region:account:api/stage/VERB/path)
// into the ARN of every method of every route of the stage. API Gateway caches the
// policy per token and reuses it for other routes: a policy naming only the first
// route would refuse the token's next call elsewhere.
func apiWildcard(methodArn string) (string, error) {
	if !strings.HasPrefix(methodArn, "arn:") {
		return "", fmt.Errorf("not an ARN")
	}
	parts := strings.SplitN(methodArn, "/", 3)
	if len(parts) < 2 || parts[0] == "" || parts[1] == "" {
		return "", fmt.Errorf("no API id and stage")
	}
	if strings.Count(parts[0], ":") != 5 {
		return "", fmt.Errorf("not an execute-api ARN")
	}
	return parts[0] + "/" + parts[1] + "/*/*", nil
}

// header reads a header case-insensitively (REST events keep the client's case).
func header(req events.APIGatewayCustomAuthorizerRequestTypeRequest, name string) string {
	for k, v := range req.Headers {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	for k, v := range req.MultiValueHeaders {
		if strings.EqualFold(k, name) && len(v) > 0 {
			return v[0]
		}
	}
	return ""
}
