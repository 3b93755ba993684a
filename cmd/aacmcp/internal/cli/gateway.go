package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/spf13/cobra"

	"github.com/aacworkflow/aacmcp/functions/authorizer/authorizerfn"
	"github.com/aacworkflow/aacmcp/functions/mcp/mcpfn"
	"github.com/aacworkflow/aacmcp/functions/oauth/oauthfn"
	"github.com/aacworkflow/aacmcp/shared/apigw"
	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/audit/file"
	auditkinesis "github.com/aacworkflow/aacmcp/shared/audit/kinesis"
	"github.com/aacworkflow/aacmcp/shared/catalog"
	"github.com/aacworkflow/aacmcp/shared/confirm"
	"github.com/aacworkflow/aacmcp/shared/gateway"
	"github.com/aacworkflow/aacmcp/shared/lambdaenv"
	"github.com/aacworkflow/aacmcp/shared/ratelimit"
)

type gatewayFlags struct {
	addr               string
	backend            backendFlags
	auditStream        string
	kinesisEndpointURL string
	authorizerURL      string
	functionURL        string
	rateLimit          string
	authFailLimit      string
	allowedOrigins     []string
	logLevel           string
	jwt                jwtFlags
	stage              string
	frontDoor          bool
	edgeRateLimits     bool
	apiAddr            string
	dev                bool
	oauth              oauthFlags
}

func newGatewayCmd(g *globals) *cobra.Command {
	var gf gatewayFlags
	c := &cobra.Command{
		Use:   "gateway [--addr 127.0.0.1:8081] --backend dynamodb --table T --tokens-table T2",
		Short: "Run a local API Gateway in front of the Lambda functions' code (like sam local start-api)",
		Long: `Listen on a loopback address and do what the deployed API Gateway REST API does:
a request without Authorization is 401 with the WWW-Authenticate challenge (the
authorizer is not called, and the refusal is audited as the access-log forwarder does
in AWS); otherwise the REQUEST authorizer runs, its result cached for 60 seconds per
header; then the MCP function gets a REST proxy event with the authorizer's context, and
its proxy response goes back as HTTP.

Both functions run in process with their production code, against the DynamoDB tables
(--endpoint-url for an emulator such as dynalite). --authorizer-url and --function-url
send the events to Lambda invoke URLs instead, such as the Runtime Interface Emulator's
http://127.0.0.1:PORT/2015-03-31/functions/function/invocations.

Audit records go to the Kinesis stream --audit-stream (--kinesis-endpoint-url for
kinesalite), or, without a stream, to the audit files under --data.

As API Gateway REST does, a WWW-Authenticate header in the function's answer
reaches the client renamed to X-Amzn-Remapped-WWW-Authenticate: the MCP function's
403 insufficient_scope challenge (and its 401 for a token that expired inside the
authorizer cache) is invisible to OAuth clients. --stage prod serves the API under
/prod, like the default execute-api URL, where paths outside the stage (the host
root, with its RFC 8414 and RFC 9728 well-known paths) answer 403; without --stage
it is served at the root, like a custom domain.

--front-door puts the stack's CloudFront distribution in front: it serves on --addr
at the root of its URL and forwards to the stage (origin path /STAGE), adds the
request headers CloudFront adds (X-Forwarded-For, Via, X-Amz-Cf-Id,
CloudFront-Viewer-Address), and gives the challenge back as its Lambda@Edge
origin-response function does. Its URL is the public URL, as in the stack: the
functions' AACMCP_PUBLIC_URL, the issuer, the challenges' resource_metadata and the
default --jwt-audience. The API itself stays reachable, as the execute-api host
does in AWS, on --api-addr.

With --dev or --oidc-issuer, the authorization server's function (functions/oauth)
serves /oauth/* and its metadata without the authorizer, as in the stack: --dev
offers the dev sign-in page (members of workspace demo) and accepts client metadata
documents on loopback, on a loopback --addr only; --oidc-issuer signs people in
upstream.`,
		Example: `  aacmcp gateway --backend dynamodb --table aacmcp-main --tokens-table aacmcp-tokens \
    --endpoint-url http://127.0.0.1:8000 --audit-stream aacmcp-audit --kinesis-endpoint-url http://127.0.0.1:4567`,
		Args: wrapArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error { return runGateway(c.Context(), c, g, gf) },
	}
	f := c.Flags()
	f.StringVar(&gf.addr, "addr", "127.0.0.1:8081", "listen address; port 0 picks a free one")
	addBackendFlags(c, g, &gf.backend)
	f.StringVar(&gf.auditStream, "audit-stream", g.env.getenv("AACMCP_AUDIT_STREAM"), "Kinesis stream for audit records (env AACMCP_AUDIT_STREAM; default: audit files under --data)")
	f.StringVar(&gf.kinesisEndpointURL, "kinesis-endpoint-url", "", "Kinesis endpoint, e.g. kinesalite (default: AWS_ENDPOINT_URL_KINESIS or AWS)")
	f.StringVar(&gf.authorizerURL, "authorizer-url", "", "invoke URL of the authorizer function (default: in process)")
	f.StringVar(&gf.functionURL, "function-url", "", "invoke URL of the MCP function (default: in process)")
	f.StringVar(&gf.rateLimit, "rate-limit", g.env.envOr("AACMCP_RATE_LIMIT", lambdaenv.DefaultRateLimit), "the MCP function's calls per token and tool (env AACMCP_RATE_LIMIT)")
	f.StringVar(&gf.authFailLimit, "auth-fail-limit", g.env.envOr("AACMCP_AUTH_FAIL_LIMIT", lambdaenv.DefaultAuthFailLimit), "the authorizer's failed attempts per source IP (env AACMCP_AUTH_FAIL_LIMIT)")
	f.StringSliceVar(&gf.allowedOrigins, "allowed-origins", lambdaenv.SplitList(g.env.getenv("AACMCP_ALLOWED_ORIGINS")), "browser origins accepted on /mcp (env AACMCP_ALLOWED_ORIGINS)")
	f.StringVar(&gf.logLevel, "log-level", g.env.envOr("LOG_LEVEL", "info"), "debug, info, warn or error (env LOG_LEVEL)")
	addJWTFlags(c, g, &gf.jwt)
	f.StringVar(&gf.stage, "stage", "", "serve under /STAGE like the default execute-api URL (default: at the root, like a custom domain)")
	f.BoolVar(&gf.frontDoor, "front-door", false, "serve through the stack's CloudFront distribution: stage at the root, WWW-Authenticate restored (default: the bare API, challenges remapped)")
	f.BoolVar(&gf.edgeRateLimits, "edge-rate-limits", true, "the stack's WAF rate rules at their default limits (docs/deploy.md): the distribution's with --front-door, else the API's; false turns them off")
	f.StringVar(&gf.apiAddr, "api-addr", "", "with --front-door: where the API itself (the execute-api host) listens (default 127.0.0.1:0, a free port)")
	f.BoolVar(&gf.dev, "dev", false, "the authorization server's dev sign-in page and loopback client metadata documents (loopback --addr only)")
	addOAuthFlags(c, g, &gf.oauth)
	return c
}

// check validates the flags that need no I/O and returns the function configuration.
func (gf *gatewayFlags) check() (lambdaenv.Config, error) {
	host, _, err := net.SplitHostPort(gf.addr)
	if err != nil {
		return lambdaenv.Config{}, usagef("--addr %q: want host:port, such as 127.0.0.1:8081", gf.addr)
	}
	if ip := net.ParseIP(host); gf.dev && (ip == nil || !ip.IsLoopback()) && host != "localhost" {
		// Checked again on the listener: a name may resolve elsewhere.
		return lambdaenv.Config{}, usagef("--dev listens on loopback only (its sign-in page lets anyone act as any member): use --addr 127.0.0.1:PORT")
	}
	if gf.stage != "" && !stageName.MatchString(gf.stage) {
		return lambdaenv.Config{}, usagef("--stage %q: API Gateway stage names are letters, digits, '-' and '_', at most 128", gf.stage)
	}
	switch {
	case gf.apiAddr != "" && !gf.frontDoor:
		return lambdaenv.Config{}, usagef("--api-addr is the API's own address behind --front-door; without it the API listens on --addr")
	case gf.frontDoor && gf.apiAddr == "":
		gf.apiAddr = "127.0.0.1:0"
	}
	if gf.frontDoor {
		ahost, _, err := net.SplitHostPort(gf.apiAddr)
		if err != nil {
			return lambdaenv.Config{}, usagef("--api-addr %q: want host:port, such as 127.0.0.1:8082", gf.apiAddr)
		}
		if ip := net.ParseIP(ahost); gf.dev && (ip == nil || !ip.IsLoopback()) && ahost != "localhost" {
			return lambdaenv.Config{}, usagef("--dev listens on loopback only: use --api-addr 127.0.0.1:PORT")
		}
	}
	if err := gf.oauth.check(); err != nil {
		return lambdaenv.Config{}, err
	}
	if gf.backend.kind != backendDynamoDB {
		return lambdaenv.Config{}, usagef("gateway runs the Lambda functions, which use DynamoDB: pass --backend dynamodb --table T --tokens-table T2")
	}
	if err := gf.backend.validate(); err != nil {
		return lambdaenv.Config{}, err
	}
	for name, u := range map[string]string{"--kinesis-endpoint-url": gf.kinesisEndpointURL, "--authorizer-url": gf.authorizerURL, "--function-url": gf.functionURL} {
		if u == "" {
			continue
		}
		p, err := url.Parse(u)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return lambdaenv.Config{}, usagef("%s %q: want an absolute http(s) URL", name, u)
		}
	}
	rate, err := ratelimit.Parse(gf.rateLimit)
	if err != nil {
		return lambdaenv.Config{}, usagef("--rate-limit: %v", err)
	}
	failRate, err := ratelimit.Parse(gf.authFailLimit)
	if err != nil {
		return lambdaenv.Config{}, usagef("--auth-fail-limit: %v", err)
	}
	// Behind the front door the public URL is known, and the audience defaults to
	// its /mcp, as the stack's AACMCP_PUBLIC_URL makes it; the bare API's URL is
	// not the one tokens name in the stack, so there it must be given.
	jwtCheck := gf.jwt.checkForGateway
	if gf.frontDoor {
		jwtCheck = gf.jwt.check
	}
	if err := jwtCheck(); err != nil {
		return lambdaenv.Config{}, err
	}
	return lambdaenv.Config{
		Table:          gf.backend.table,
		TokensTable:    gf.backend.tokensTable,
		AuditStream:    gf.auditStream,
		RateLimit:      rate,
		AuthFailLimit:  failRate,
		AllowedOrigins: gf.allowedOrigins,
		// The MCP function advertises the external issuer, as lambdaenv.Load
		// makes it do from AACMCP_JWT_ISSUER on AWS.
		AuthorizationServers: withIssuer(nil, gf.jwt.Issuer),
	}, nil
}

func runGateway(ctx context.Context, c *cobra.Command, g *globals, gf gatewayFlags) error {
	lcfg, err := gf.check()
	if err != nil {
		return err
	}
	log, err := newLogger(c.ErrOrStderr(), gf.logLevel)
	if err != nil {
		return err
	}
	awsCfg, err := gf.backend.awsConfig(ctx)
	if err != nil {
		return err
	}
	ddb := dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) {
		if gf.backend.endpointURL != "" {
			o.BaseEndpoint = aws.String(gf.backend.endpointURL)
		}
	})

	var sink audit.Sink
	auditDesc := ""
	if gf.auditStream != "" {
		kc := kinesis.NewFromConfig(awsCfg, func(o *kinesis.Options) {
			if gf.kinesisEndpointURL != "" {
				o.BaseEndpoint = aws.String(gf.kinesisEndpointURL)
			}
		})
		// Fallback lines go to stdout, as a function's do to CloudWatch Logs.
		sink = auditkinesis.New(kc, gf.auditStream, auditkinesis.WithFallback(c.OutOrStdout()), auditkinesis.WithLogger(log))
		auditDesc = "Kinesis stream " + gf.auditStream
	} else {
		fs, err := file.New(g.dataDir, file.WithLogger(log))
		if err != nil {
			return err
		}
		defer fs.Close()
		sink = fs
		auditDesc = "files under " + g.dataDir
	}

	ln, err := net.Listen("tcp", gf.addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", gf.addr, err)
	}
	serving := false
	defer func() {
		if !serving {
			_ = ln.Close()
		}
	}()
	if err := devOnLoopback(gf.dev, ln); err != nil {
		return err
	}
	stage, stagePath := gateway.DefaultStage, ""
	if gf.stage != "" {
		stage, stagePath = gf.stage, "/"+gf.stage
	}
	// apiBase is the API's own URL (the execute-api stage URL); base is what
	// clients use: the distribution's root behind the front door.
	apiLn, apiBase, base := ln, "http://"+displayAddr(ln.Addr())+stagePath, ""
	originVerify := "" // the distribution's origin secret, behind the front door
	if gf.frontDoor {
		if apiLn, err = net.Listen("tcp", gf.apiAddr); err != nil {
			return fmt.Errorf("listen on %s: %w", gf.apiAddr, err)
		}
		defer func() {
			if !serving {
				_ = apiLn.Close()
			}
		}()
		if err := devOnLoopback(gf.dev, apiLn); err != nil {
			return err
		}
		apiBase = "http://" + displayAddr(apiLn.Addr()) + stagePath
		base = "http://" + displayAddr(ln.Addr())
		// The stack gives both functions the distribution's URL as AACMCP_PUBLIC_URL,
		// and AACMCP_TRUST_VIEWER_ADDRESS: its regional web ACL lets only the
		// distribution's requests through (originVerify below), so the
		// CloudFront-Viewer-Address they carry is the distribution's word.
		lcfg.PublicURL = base
		lcfg.TrustViewerAddress = true
		if originVerify, err = newOriginSecret(); err != nil {
			return err
		}
		if gf.jwt.Issuer != "" && len(gf.jwt.Audiences) == 0 && len(gf.jwt.Clients) == 0 {
			gf.jwt.Audiences = []string{base + "/mcp"}
		}
	} else {
		base = apiBase
	}
	withOAuth := gf.oauth.enabled(gf.dev)
	if withOAuth {
		// The MCP function's resource metadata names the authorization server, as
		// the stack's AACMCP_AUTHORIZATION_SERVERS does: the same public base URL.
		lcfg.AuthorizationServers = append([]string{base}, lcfg.AuthorizationServers...)
	}

	// The functions' CloudWatch embedded-metric lines have no reader locally.
	metricsOut := io.Discard
	var authorizer, function gateway.Invoker
	authDesc, fnDesc := "in process", "in process"
	if gf.authorizerURL != "" {
		authorizer, authDesc = gateway.InvokeURL(gf.authorizerURL, &http.Client{Timeout: 30 * time.Second}), gf.authorizerURL
	} else {
		a, err := authorizerfn.Build(lcfg, authorizerfn.Deps{DB: ddb, Audit: sink, Stdout: metricsOut, Logger: log.With("function", authorizerfn.FunctionName), JWT: gf.jwt.Settings})
		if err != nil {
			return err
		}
		authorizer = lambda.NewHandler(a.Handle)
	}
	// The data folder's confirmation key, as serve's: the MCP function seals
	// approval links with it and the OAuth function's approval page opens them
	// (the stack gives both the same secret). A function behind --function-url
	// has a key of its own.
	confirmKeys, err := confirm.LocalKeyring(g.dataDir)
	if err != nil {
		return err
	}
	if gf.functionURL != "" {
		function, fnDesc = gateway.InvokeURL(gf.functionURL, &http.Client{Timeout: gateway.IntegrationTimeout + time.Second}), gf.functionURL
	} else {
		// The data folder's key, as serve's: digests stay comparable and cursors
		// verify across restarts (the stack reads it from Secrets Manager instead).
		hmacKey, err := dataDirHMACKey(g.dataDir)
		if err != nil {
			return err
		}
		f, err := mcpfn.Build(ctx, lcfg, mcpfn.Deps{DB: ddb, Audit: sink, Stdout: metricsOut, Logger: log.With("function", mcpfn.FunctionName), HMACKey: hmacKey, ConfirmKeys: confirmKeys})
		if err != nil {
			return err
		}
		// After the server has stopped: the store's last housekeeping writes finish.
		defer f.Close()
		function = lambda.NewHandler(f.Handle)
	}
	var oauthFn gateway.Invoker
	if withOAuth {
		ocfg := oauthfn.Config{
			Config: lcfg, PublicURL: lcfg.PublicURL, OIDCIssuer: gf.oauth.issuer, OIDCClientID: gf.oauth.clientID,
			AccessTokenTTL: gf.oauth.accessTTL, Dev: gf.dev,
		}
		if gf.oauth.issuer != "" {
			if ocfg.OIDCClientSecret, err = gf.oauth.clientSecret(); err != nil {
				return err
			}
		}
		of, err := oauthfn.Build(ctx, ocfg, oauthfn.Deps{DB: ddb, Audit: sink, Logger: log.With("function", oauthfn.FunctionName), ConfirmKeys: confirmKeys})
		if err != nil {
			return err
		}
		oauthFn = lambda.NewHandler(of.Handle)
	}
	gcfg := gateway.Config{
		Authorizer:  authorizer,
		Function:    function,
		OAuth:       oauthFn,
		Audit:       sink,
		Tools:       catalog.New(catalog.Deps{}),
		Stage:       stage,
		StageInPath: gf.stage != "",
		PublicURL:   lcfg.PublicURL,
		// Behind the front door the API's own URL refuses what did not come
		// through it, as the stack's OnlyThroughCloudFront rule does.
		OriginVerify: originVerify,
		Logger:       log,
	}
	if gf.edgeRateLimits && !gf.frontDoor {
		// Without the front door the stack's regional web ACL holds the rate rules.
		gcfg.RateRules = ratelimit.DefaultEdgeLimits().Rules()
	}
	api := gateway.New(gcfg)
	newServer := func(h http.Handler) *http.Server {
		return &http.Server{
			Handler:           h,
			ReadHeaderTimeout: 10 * time.Second,
			ReadTimeout:       30 * time.Second,
			WriteTimeout:      gateway.IntegrationTimeout + 5*time.Second,
			IdleTimeout:       2 * time.Minute,
			BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
		}
	}
	srv := newServer(api)
	if gf.frontDoor {
		transport := http.DefaultTransport.(*http.Transport).Clone()
		transport.Proxy = nil // the origin is this process's own listener
		dist := gateway.Distribution{
			Origin:        &url.URL{Scheme: "http", Host: displayAddr(apiLn.Addr())},
			OriginPath:    stagePath,
			OriginHeaders: http.Header{apigw.OriginVerifyHeader: {originVerify}},
			Transport:     transport,
			Logger:        log,
		}
		if gf.edgeRateLimits {
			// The stack's edge web ACL at the stack's default limits.
			dist.RateRules = ratelimit.DefaultEdgeLimits().Rules()
		}
		srv = newServer(gateway.FrontDoor(dist))
		apiSrv := newServer(api)
		go func() {
			if err := apiSrv.Serve(apiLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("the API's listener failed", "err", err)
			}
		}()
		// After the front door has stopped: its last requests reach the API.
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
			defer cancel()
			_ = apiSrv.Shutdown(sctx)
		}()
	}

	w := c.OutOrStdout()
	fmt.Fprintf(w, "aacmcp gateway serving %s/mcp (stage %s)\n", base, stage)
	fmt.Fprintf(w, "  authorizer: %s (results cached %.0fs)\n", authDesc, gateway.DefaultCacheTTL.Seconds())
	fmt.Fprintf(w, "  function:   %s\n", fnDesc)
	fmt.Fprintf(w, "  tables:     %s, %s\n", lcfg.Table, lcfg.TokensTable)
	fmt.Fprintf(w, "  audit:      %s\n", auditDesc)
	if gf.frontDoor {
		fmt.Fprintf(w, "  front door: the CloudFront distribution: origin %s, WWW-Authenticate restored by its origin-response function\n", apiBase)
		fmt.Fprintf(w, "  api:        %s/mcp (the execute-api URL behind it: challenges remapped, discovery outside the stage 403)\n", apiBase)
	} else {
		fmt.Fprintf(w, "  challenges: the functions' WWW-Authenticate arrives as X-Amzn-Remapped-WWW-Authenticate (bare API Gateway; --front-door restores it)\n")
	}
	if gf.edgeRateLimits {
		l := ratelimit.DefaultEdgeLimits()
		fmt.Fprintf(w, "  waf:        per %s: %d requests per address without a token, %d per token, %d per address with tokens\n",
			ratelimit.EdgeWindow, l.Unauthenticated, l.PerToken, l.BearerPerAddress)
	}
	if m := oauthMode(gf.oauth, withOAuth, base); m != "" {
		fmt.Fprintf(w, "  oauth:      %s\n", m)
	}
	fmt.Fprintf(w, "Tokens: aacmcp token create --backend dynamodb --table %s --tokens-table %s%s --workspace ID --user USER --scopes issues:read\n",
		lcfg.Table, lcfg.TokensTable, endpointFlag(gf.backend.endpointURL))

	serving = true
	return serveUntilDone(ctx, srv, ln, log, g.env.Ready, base)
}

// stageName is what API Gateway accepts as a stage name.
var stageName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

func endpointFlag(u string) string {
	if u == "" {
		return ""
	}
	return " --endpoint-url " + strings.TrimSpace(u)
}

// newOriginSecret is a fresh origin secret per run, as the stack's is generated at
// deploy: nothing outside this process can know it.
func newOriginSecret() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("origin secret: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}
