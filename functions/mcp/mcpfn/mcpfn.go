// Package mcpfn is the MCP Lambda: API Gateway REST (v1) proxy events in, the shared
// HTTP surface (mcpserver: /mcp, /tools, well-known, healthz) behind them, proxy
// responses out.
//
// The caller's principal is the context the REQUEST authorizer attached; the role is
// read from the member record at call time by the guard, as locally. Everything
// else (enforcement, audit, tool code) is the same code the local server runs.
package mcpfn

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"github.com/aacworkflow/aacmcp/shared/apigw"
	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/catalog"
	"github.com/aacworkflow/aacmcp/shared/guard"
	"github.com/aacworkflow/aacmcp/shared/lambdaenv"
	"github.com/aacworkflow/aacmcp/shared/mcpserver"
)

// FallbackTimeout bounds an invocation whose context has no deadline (in-process use
// by the local gateway): API Gateway's own integration timeout.
const FallbackTimeout = 29 * time.Second

// maxBasePaths bounds the handlers kept per base path. A deployment has one stage
// (and perhaps a custom domain), so a handful covers every real case.
const maxBasePaths = 8

// Config wires a Function.
type Config struct {
	Guard   *guard.Guard
	Catalog *catalog.Catalog
	// Server is the HTTP surface's configuration. BasePath is left empty: it is
	// derived per request from the stage. PublicURL, when set, names the links
	// (behind the CloudFront front door the event's Host and stage are the
	// origin's); empty derives them from the Host API Gateway saw.
	Server mcpserver.Config
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// TrustViewerAddress attributes each call to its CloudFront-Viewer-Address
	// (apigw.SourceIP): set only behind the stack's front door.
	TrustViewerAddress bool
}

// Function is the handler. Safe for concurrent use.
type Function struct {
	cfg Config
	log *slog.Logger
	src mcpserver.PrincipalSource

	mu       sync.Mutex
	adapters map[string]*httpadapter.HandlerAdapter // by base path

	// store is what Build wired (the DynamoDB store, whose housekeeping writes run
	// after an answer); Close waits for it. Nil for a Function made with New.
	store io.Closer
}

// Close waits for the writes the store still runs after its answers (see
// dynamo.Store.Close), for hosts that stop a Function in process (aacmcp gateway,
// tests). The Lambda never calls it: see main.go.
func (f *Function) Close() error {
	if f.store == nil {
		return nil
	}
	return f.store.Close()
}

// New returns the MCP function.
func New(cfg Config) *Function {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	cfg.Server.Logger = log
	return &Function{cfg: cfg, log: log, src: AuthorizerContext{Now: cfg.Now}, adapters: map[string]*httpadapter.HandlerAdapter{}}
}

// Handle is the Lambda handler.
func (f *Function) Handle(ctx context.Context, ev events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
	ctx, cancel := lambdaenv.WithDeadline(ctx, lambdaenv.DeadlineMargin, FallbackTimeout, f.cfg.Now())
	defer cancel()

	// API Gateway's extended request id is the one the access log carries: use it as
	// the request id of the whole call. Not $context.requestId: a client sets that
	// one with x-amzn-RequestId, and could give its records another call's id.
	if id := ev.RequestContext.ExtendedRequestID; id != "" {
		ev = withHeader(ev, "X-Request-Id", id)
	}
	// The adapter makes the identity's source IP the request's RemoteAddr, which the
	// audit records and rate limits take.
	ev = apigw.WithViewerSourceIP(ev, f.cfg.TrustViewerAddress)
	resp, err := f.adapter(apigw.BasePath(ev)).ProxyWithContext(ctx, ev)
	if err != nil {
		// The event could not become an HTTP request (a body that is not valid
		// base64). A Lambda error would be API Gateway's 502; answer like the server.
		f.log.Error("proxy event not converted", "request_id", ev.RequestContext.ExtendedRequestID, "err", err)
		return errorResponse(http.StatusBadRequest, apperr.New(apperr.InvalidArguments, "the request could not be read")), nil
	}
	return resp, nil
}

// adapter returns the adapter of the HTTP surface for one base path.
func (f *Function) adapter(base string) *httpadapter.HandlerAdapter {
	f.mu.Lock()
	defer f.mu.Unlock()
	if a, ok := f.adapters[base]; ok {
		return a
	}
	if len(f.adapters) >= maxBasePaths {
		base = ""
		if a, ok := f.adapters[base]; ok {
			return a
		}
	}
	sc := f.cfg.Server
	sc.BasePath = base
	a := httpadapter.New(mcpserver.New(sc, f.cfg.Guard, f.cfg.Catalog, f.src))
	f.adapters[base] = a
	return a
}

// withHeader sets a header in both header maps of a REST event (the adapter reads
// the multi-value map when there is one).
func withHeader(ev events.APIGatewayProxyRequest, name, value string) events.APIGatewayProxyRequest {
	h := make(map[string]string, len(ev.Headers)+1)
	for k, v := range ev.Headers {
		if !strings.EqualFold(k, name) {
			h[k] = v
		}
	}
	h[name] = value
	ev.Headers = h
	if ev.MultiValueHeaders != nil {
		mh := make(map[string][]string, len(ev.MultiValueHeaders)+1)
		for k, v := range ev.MultiValueHeaders {
			if !strings.EqualFold(k, name) {
				mh[k] = v
			}
		}
		mh[name] = []string{value}
		ev.MultiValueHeaders = mh
	}
	return ev
}

func errorResponse(status int, e *apperr.Error) events.APIGatewayProxyResponse {
	b, _ := json.Marshal(e.Body())
	return events.APIGatewayProxyResponse{
		StatusCode: status,
		MultiValueHeaders: map[string][]string{
			"Content-Type":  {"application/json"},
			"Cache-Control": {"no-store"},
		},
		Body: string(b) + "\n",
	}
}

// Drain waits until the store's writes after earlier answers have finished, or ctx
// is done; unlike Close it leaves them in the background for later calls. For
// measurements that attribute those writes to the call that caused them
// (bench/cmd/bench).
func (f *Function) Drain(ctx context.Context) error {
	if d, ok := f.store.(interface{ Drain(context.Context) error }); ok {
		return d.Drain(ctx)
	}
	return nil
}
