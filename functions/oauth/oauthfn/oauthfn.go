// Package oauthfn is the authorization server's Lambda: API Gateway REST (v1)
// proxy events for /oauth/{proxy+}, /.well-known/oauth-authorization-server and
// /.well-known/openid-configuration in, shared/oauth's ServeOAuth behind them,
// proxy responses out.
//
// It runs without the authorizer (a client has no token yet when it registers,
// authorizes or redeems a code), in its own function so that only its role may
// write OAuth items and access tokens: the MCP function's role stays read-only on
// tokens. The issuer is the public base URL: AACMCP_PUBLIC_URL when the stack sets
// it, else the Host and stage the request came in by, which is what the MCP
// function derives for its resource metadata, so both name the same issuer.
package oauthfn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"github.com/aacworkflow/aacmcp/shared/apigw"
	"github.com/aacworkflow/aacmcp/shared/approval"
	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/catalog"
	"github.com/aacworkflow/aacmcp/shared/confirm"
	"github.com/aacworkflow/aacmcp/shared/lambdaenv"
	"github.com/aacworkflow/aacmcp/shared/oauth"
	"github.com/aacworkflow/aacmcp/shared/oauth/clientmeta"
	"github.com/aacworkflow/aacmcp/shared/oauth/upstream"
	"github.com/aacworkflow/aacmcp/shared/store"
	"github.com/aacworkflow/aacmcp/shared/store/dynamo"
)

// FunctionName is the Function dimension of this function's logs.
const FunctionName = "oauth"

// FallbackTimeout bounds an invocation whose context has no deadline (in-process
// use by the local gateway): API Gateway's own integration timeout.
const FallbackTimeout = 29 * time.Second

// upstreamDiscoveryTimeout bounds the upstream provider's discovery at cold start.
const upstreamDiscoveryTimeout = 10 * time.Second

// Config is the function's validated configuration.
type Config struct {
	lambdaenv.Config
	// PublicURL is the issuer when set (scheme://host[/base], no trailing slash).
	PublicURL string
	// OIDCIssuer, OIDCClientID: the upstream provider people sign in with.
	OIDCIssuer, OIDCClientID string
	// OIDCClientSecretARN is where the Lambda reads the upstream client secret;
	// OIDCClientSecret is the secret itself, for hosts that read it elsewhere
	// (aacmcp gateway: a file). Exactly one is set when OIDCIssuer is.
	OIDCClientSecretARN, OIDCClientSecret string
	// AccessTokenTTL is the access tokens' lifetime (0: oauth's default, 1 h).
	AccessTokenTTL time.Duration
	// Dev turns on the dev sign-in page and loopback client metadata documents.
	// Only aacmcp gateway sets it, on a loopback listener; the Lambda never does.
	Dev bool
}

// Deps are the outside services, built once per cold start.
type Deps struct {
	// DB is the DynamoDB client (*dynamodb.Client).
	DB dynamo.API
	// Audit is where authorization events go (the Kinesis sink in Lambda).
	Audit audit.Sink
	// Secrets reads OIDCClientSecretARN.
	Secrets lambdaenv.SecretsAPI
	// HTTPClient reaches the upstream provider (nil: http.DefaultClient).
	HTTPClient *http.Client
	Logger     *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// ConfirmKeys open the approval links the MCP function seals (the same
	// secret); nil serves no approval page.
	ConfirmKeys *confirm.Keyring
}

// backend is what the authorization server needs of the store.
type backend interface {
	store.OAuthStore
	auth.TokenStore
}

var _ backend = (*dynamo.Store)(nil)

// Build wires the function from its configuration.
func Build(ctx context.Context, cfg Config, d Deps) (*Function, error) {
	switch {
	case d.DB == nil:
		return nil, errors.New("oauthfn: no DynamoDB client")
	case d.Audit == nil:
		return nil, errors.New("oauthfn: no audit sink")
	case cfg.Table == "" || cfg.TokensTable == "":
		return nil, fmt.Errorf("oauthfn: %s and %s are required", lambdaenv.EnvTable, lambdaenv.EnvTokensTable)
	case cfg.OIDCIssuer == "" && !cfg.Dev:
		return nil, fmt.Errorf("oauthfn: %s is required: without an upstream provider nobody can sign in", EnvOIDCIssuer)
	}
	log := d.Logger
	if log == nil {
		log = slog.Default()
	}
	opts := []dynamo.Option{dynamo.WithLogger(log)}
	if d.Now != nil {
		opts = append(opts, dynamo.WithClock(d.Now))
	}
	be := dynamo.New(d.DB, cfg.Table, cfg.TokensTable, opts...)
	cat := catalog.New(catalog.Deps{})
	ocfg := oauth.Config{
		Store: be, Tokens: be, Sink: d.Audit,
		Counter:        registrationCounter{db: d.DB, table: cfg.Table},
		Catalog:        cat,
		Clients:        clientmeta.NewFetcher(clientmeta.Options{AllowLoopback: cfg.Dev, Now: d.Now, Logger: log}),
		Dev:            cfg.Dev && cfg.OIDCIssuer == "",
		AccessTokenTTL: cfg.AccessTokenTTL,
		Logger:         log,
		Now:            d.Now,
	}
	if d.ConfirmKeys != nil {
		d.ConfirmKeys.SetLogger(log)
		ocfg.Approvals = &approval.Desk{Keys: d.ConfirmKeys, Store: be, Items: be, Catalog: cat}
	} else {
		log.Warn("no confirmation key (" + confirm.EnvKeyARN + "); the approval page is off, and a workspace on approve cannot approve deletes")
	}
	if cfg.OIDCIssuer != "" {
		up, err := newUpstream(ctx, cfg, d)
		if err != nil {
			return nil, err
		}
		ocfg.Upstream = up
	}
	srv, err := oauth.New(ocfg)
	if err != nil {
		return nil, err
	}
	fn := New(srv, cfg.PublicURL, log, d.Now)
	fn.trustViewer = cfg.TrustViewerAddress
	return fn, nil
}

func newUpstream(ctx context.Context, cfg Config, d Deps) (*upstream.Provider, error) {
	secret := cfg.OIDCClientSecret
	if secret == "" {
		b, err := lambdaenv.ReadSecret(ctx, d.Secrets, cfg.OIDCClientSecretARN, "upstream OIDC client secret")
		if err != nil {
			return nil, err
		}
		secret = string(b)
	}
	dctx, cancel := context.WithTimeout(ctx, upstreamDiscoveryTimeout)
	defer cancel()
	up, err := upstream.New(dctx, upstream.Config{
		Issuer: cfg.OIDCIssuer, ClientID: cfg.OIDCClientID,
		ClientSecret: strings.TrimSpace(secret), HTTPClient: d.HTTPClient,
	})
	if err != nil {
		return nil, fmt.Errorf("upstream OIDC issuer %s: %w", cfg.OIDCIssuer, err)
	}
	return up, nil
}

// AuthorizationServer answers the OAuth routes for an issuer (*oauth.Server).
type AuthorizationServer interface {
	ServeOAuth(w http.ResponseWriter, r *http.Request, issuer string)
}

// Function is the handler. Safe for concurrent use.
type Function struct {
	publicURL string
	log       *slog.Logger
	now       func() time.Time
	adapter   *httpadapter.HandlerAdapter

	// trustViewer attributes requests (the registration limit, audit records) to
	// their CloudFront-Viewer-Address: set only behind the stack's front door.
	trustViewer bool
}

// New returns the function serving srv; publicURL "" derives the issuer per
// request.
func New(srv AuthorizationServer, publicURL string, log *slog.Logger, now func() time.Time) *Function {
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.Default()
	}
	f := &Function{publicURL: strings.TrimRight(publicURL, "/"), log: log, now: now}
	f.adapter = httpadapter.New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		issuer, _ := r.Context().Value(issuerKey{}).(string)
		if id, _ := r.Context().Value(requestIDKey{}).(string); id != "" {
			// The authorization server's audit records take their request id from
			// here: API Gateway's, which its access log carries too.
			w.Header().Set("X-Request-Id", id)
		}
		srv.ServeOAuth(w, r, issuer)
	}))
	return f
}

type issuerKey struct{}
type requestIDKey struct{}

// Handle is the Lambda handler.
func (f *Function) Handle(ctx context.Context, ev events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
	ctx, cancel := lambdaenv.WithDeadline(ctx, lambdaenv.DeadlineMargin, FallbackTimeout, f.now())
	defer cancel()
	ctx = context.WithValue(ctx, issuerKey{}, f.Issuer(ev))
	ctx = context.WithValue(ctx, requestIDKey{}, ev.RequestContext.RequestID)
	ev = apigw.WithViewerSourceIP(ev, f.trustViewer)
	resp, err := f.adapter.ProxyWithContext(ctx, ev)
	if err != nil {
		// The event could not become an HTTP request (a body that is not valid
		// base64): a Lambda error would be API Gateway's 502.
		f.log.Error("proxy event not converted", "request_id", ev.RequestContext.RequestID, "err", err)
		return events.APIGatewayProxyResponse{
			StatusCode:        http.StatusBadRequest,
			MultiValueHeaders: map[string][]string{"Content-Type": {"application/json"}, "Cache-Control": {"no-store"}},
			Body:              `{"error":"invalid_request","error_description":"the request could not be read"}`,
		}, nil
	}
	return resp, nil
}

// Issuer is the public base URL of a request: PublicURL, or the scheme, Host and
// base path (the stage on the execute-api host) the client used.
func (f *Function) Issuer(ev events.APIGatewayProxyRequest) string {
	if f.publicURL != "" {
		return f.publicURL
	}
	host := header(ev, "Host")
	if host == "" {
		host = ev.RequestContext.DomainName
	}
	// API Gateway always says https; the local gateway says what it serves.
	scheme := "https"
	if p, _, _ := strings.Cut(header(ev, "X-Forwarded-Proto"), ","); strings.EqualFold(strings.TrimSpace(p), "http") {
		scheme = "http"
	}
	return scheme + "://" + host + apigw.BasePath(ev)
}

// header is a header of the event, by name in any case, last value first.
func header(ev events.APIGatewayProxyRequest, name string) string {
	for k, vs := range ev.MultiValueHeaders {
		if strings.EqualFold(k, name) && len(vs) > 0 {
			return vs[len(vs)-1]
		}
	}
	for k, v := range ev.Headers {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}
