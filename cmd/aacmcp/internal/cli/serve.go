package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/aacworkflow/aacmcp/shared/approval"
	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/audit/file"
	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/autopilot"
	"github.com/aacworkflow/aacmcp/shared/catalog"
	"github.com/aacworkflow/aacmcp/shared/confirm"
	"github.com/aacworkflow/aacmcp/shared/guard"
	"github.com/aacworkflow/aacmcp/shared/lambdaenv"
	"github.com/aacworkflow/aacmcp/shared/mcpserver"
	"github.com/aacworkflow/aacmcp/shared/ratelimit"
	"github.com/aacworkflow/aacmcp/shared/store/sqlite"
	"github.com/aacworkflow/aacmcp/shared/usagereplay"
)

// shutdownGrace bounds how long in-flight calls may finish after SIGINT or SIGTERM.
const shutdownGrace = 10 * time.Second

// outboxFile is where trigger_autopilot's runs go when no webhook is configured.
const outboxFile = "autopilot-outbox.jsonl"

type serveFlags struct {
	addr              string
	dev               bool
	rateLimit         string
	webhook           string
	webhookSecretFile string
	publicURL         string
	allowedOrigins    []string
	allowedHosts      []string
	authServers       []string
	logLevel          string
	compactEvery      time.Duration
	cpuSlots          int
	oauth             oauthFlags
	jwt               jwtFlags
}

func newServeCmd(g *globals) *cobra.Command {
	var sf serveFlags
	c := &cobra.Command{
		Use:   "serve [--addr 127.0.0.1:8080] [--dev]",
		Short: "Run the MCP server on this machine (SQLite store, audit files under --data)",
		Long: `Run the MCP server: POST /mcp (MCP Streamable HTTP, stateless), GET /tools,
POST /tools/{name}, GET /healthz and GET /.well-known/oauth-protected-resource.

Data lives under --data: the SQLite database (aacmcp.db), the audit log
(audit/dt=YYYY-MM-DD/hour=HH/*.json, the layout of the production S3 bucket) and, when
no --autopilot-webhook is set, the autopilot outbox (autopilot-outbox.jsonl).
Verified tokens are cached for 60 seconds, so a revocation takes effect within a minute.

--dev seeds, on first start, workspace demo (issue keys AAC-n) with admin user dev, two
agents and a few issues; at every start it revokes the previous dev tokens, mints a
full-scope and a read-only token, and prints them with ready client command lines.`,
		Example: `  aacmcp serve --dev
  aacmcp serve --addr 127.0.0.1:9000 --rate-limit 120/m --data /var/lib/aacmcp`,
		Args: wrapArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error { return runServe(c.Context(), c, g, sf) },
	}
	f := c.Flags()
	f.StringVar(&sf.addr, "addr", g.env.envOr("AACMCP_ADDR", "127.0.0.1:8080"), "listen address; port 0 picks a free one (env AACMCP_ADDR)")
	f.BoolVar(&sf.dev, "dev", false, "seed a demo workspace and print fresh dev tokens")
	f.StringVar(&sf.rateLimit, "rate-limit", g.env.getenv("AACMCP_RATE_LIMIT"), `calls per token and tool, such as "120/m" (env AACMCP_RATE_LIMIT; default off)`)
	f.StringVar(&sf.webhook, "autopilot-webhook", g.env.getenv("AACMCP_AUTOPILOT_WEBHOOK"), "agent runner URL (https, or http on loopback); default: the outbox file (env AACMCP_AUTOPILOT_WEBHOOK)")
	f.StringVar(&sf.webhookSecretFile, "autopilot-secret-file", "", "file holding the webhook's HMAC-SHA256 signing secret (required with --autopilot-webhook)")
	f.StringVar(&sf.publicURL, "public-url", "", "externally visible base URL, such as https://mcp.example.com (default: from each request's Host)")
	f.StringSliceVar(&sf.allowedOrigins, "allowed-origins", lambdaenv.SplitList(g.env.getenv("AACMCP_ALLOWED_ORIGINS")), "browser origins accepted on /mcp, comma-separated (env AACMCP_ALLOWED_ORIGINS)")
	f.DurationVar(&sf.compactEvery, "compact-every", time.Hour, "compact closed audit hours into Parquet this often in the background (0: never)")
	f.StringSliceVar(&sf.allowedHosts, "allowed-hosts", nil, `Host header values accepted, comma-separated; "*" for any (default: loopback only)`)
	f.StringSliceVar(&sf.authServers, "authorization-servers", lambdaenv.SplitList(g.env.getenv("AACMCP_AUTHORIZATION_SERVERS")), "OAuth authorization servers advertised in the resource metadata (env AACMCP_AUTHORIZATION_SERVERS)")
	f.IntVar(&sf.cpuSlots, "cpu-slots", -1, "tool calls run at once, oldest first; a call waiting for the database or the audit log frees its slot (-1: one per core Go uses; 0: no bound)")
	f.StringVar(&sf.logLevel, "log-level", g.env.envOr("LOG_LEVEL", "info"), "debug, info, warn or error (env LOG_LEVEL)")
	addOAuthFlags(c, g, &sf.oauth)
	addJWTFlags(c, g, &sf.jwt)
	return c
}

// serveGCPercent is the collector's target of aacmcp serve when GOGC is not set:
// the heap may grow to five times what is live instead of twice. The server's live
// heap is small (its data is in SQLite and the audit files) and it allocates tens
// of kB a call, so under load GOGC=100 collected many times a second, each time
// slowing every goroutine, the one SQLite writer's included. Under make soak (200
// clients, 2 cores), in seven interleaved pairs of runs, 400 answered more calls a
// second in every pair (median 1.22x) with a lower p95 in six (median 0.84x), for a
// peak RSS of 163 MB against 114 MB (docs/security.md). The operator's GOGC wins.
const serveGCPercent = 400

// slots is --cpu-slots with -1 resolved: one slot per core. Under make soak's load
// (200 clients, 2 cores), one per core gave a lower p95 and p99 than two per core at
// the same throughput, and both far lower than no bound (docs/security.md, round 10).
func (sf *serveFlags) slots() int {
	if sf.cpuSlots < 0 {
		return runtime.GOMAXPROCS(0)
	}
	return sf.cpuSlots
}

// checkFlags validates everything that needs no I/O, so a typo fails before the
// database is opened.
func (sf *serveFlags) check() (limiterRate *ratelimit.Rate, err error) {
	if _, _, err := net.SplitHostPort(sf.addr); err != nil {
		return nil, usagef("--addr %q: want host:port, such as 127.0.0.1:8080", sf.addr)
	}
	if sf.cpuSlots < -1 {
		return nil, usagef("--cpu-slots %d: want -1 (one per core), 0 (no bound) or a positive count", sf.cpuSlots)
	}
	if sf.rateLimit != "" && sf.rateLimit != "off" {
		r, err := ratelimit.Parse(sf.rateLimit)
		if err != nil {
			return nil, usagef("--rate-limit: %v", err)
		}
		limiterRate = &r
	}
	if sf.webhook != "" {
		if err := autopilot.ValidateURL(sf.webhook); err != nil {
			return nil, usagef("--autopilot-webhook: %v", err)
		}
		if sf.webhookSecretFile == "" {
			return nil, usagef("--autopilot-webhook needs --autopilot-secret-file")
		}
	} else if sf.webhookSecretFile != "" {
		return nil, usagef("--autopilot-secret-file needs --autopilot-webhook")
	}
	if sf.publicURL != "" {
		u, err := url.Parse(sf.publicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, usagef("--public-url %q: want an absolute http(s) URL", sf.publicURL)
		}
	}
	for _, o := range sf.allowedOrigins {
		u, err := url.Parse(o)
		if err != nil || u.Scheme == "" || u.Host == "" || (u.Path != "" && u.Path != "/") {
			return nil, usagef("--allowed-origins %q: an origin is scheme://host[:port]", o)
		}
	}
	if err := sf.oauth.check(); err != nil {
		return nil, err
	}
	if err := sf.jwt.check(); err != nil {
		return nil, err
	}
	return limiterRate, nil
}

func runServe(ctx context.Context, c *cobra.Command, g *globals, sf serveFlags) error {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(serveGCPercent)
	}
	rate, err := sf.check()
	if err != nil {
		return err
	}
	log, err := newLogger(c.ErrOrStderr(), sf.logLevel)
	if err != nil {
		return err
	}

	unlock, err := lockDataDir(ctx, g.dataDir)
	if err != nil {
		return err
	}
	defer unlock()

	// The server is the one writer of its database apart from admin commands, which
	// announce themselves on the writers socket (lock.go): members and issues can be
	// served from an exact copy in memory.
	st, err := openSQLite(ctx, g.dataDir, sqlite.WithLogger(log), sqlite.WithReadCache())
	if err != nil {
		return err
	}
	defer st.Close()
	writers, err := listenWriters(g.dataDir, st, log)
	if err != nil {
		return err
	}
	defer writers.Close()
	// We hold the folder alone: a claim still pending is a dead process's (kill -9
	// between claiming an idempotency key and settling it). Release it so the client's
	// retry runs now instead of being refused as in progress until the lease ends.
	if n, err := st.DeletePendingIdempotency(ctx); err != nil {
		return err
	} else if n > 0 {
		log.Warn("released idempotency claims left pending by a previous server that died", "claims", n)
	}
	// Usage increments are committed in the background: a server that died may
	// have answered calls whose increments it had not committed. Rebuild them from
	// those calls' audit records (exact: an event counted already is dropped).
	known := catalog.New(catalog.Deps{})
	rs, err := usagereplay.Replay(ctx, g.dataDir, st, func(tool string) bool { _, ok := known.Lookup(tool); return ok })
	if err != nil {
		return err
	}
	if rs.Recovered > 0 || rs.Damaged > 0 {
		log.Warn("recovered usage increments from the audit log that a previous server had not committed",
			"increments", rs.Recovered, "records_replayed", rs.Counted, "damaged_lines", rs.Damaged, "from", rs.From)
	} else {
		log.Info("usage counters match the audit log", "records_replayed", rs.Counted, "from", rs.From)
	}

	sink, err := file.New(g.dataDir, file.WithLogger(log))
	if err != nil {
		return err
	}
	defer sink.Close()

	var dispatcher autopilot.Dispatcher
	var dispatchDesc string
	if sf.webhook != "" {
		secret, err := readSecretFile(sf.webhookSecretFile)
		if err != nil {
			return err
		}
		wh := autopilot.NewWebhook(sf.webhook, secret, nil, autopilot.WithLogger(log))
		if err := wh.Validate(); err != nil {
			return usagef("--autopilot-webhook: %v", err)
		}
		dispatcher, dispatchDesc = wh, "webhook "+sf.webhook
	} else {
		ob, err := autopilot.NewOutbox(filepath.Join(g.dataDir, outboxFile))
		if err != nil {
			return err
		}
		defer ob.Close()
		dispatcher, dispatchDesc = ob, "outbox "+ob.Path()
	}

	// The key of args_hmac and idempotency_key_hmac: made once per data folder
	// (0600), so digests stay comparable across restarts and mean nothing elsewhere.
	hmacKey, err := dataDirHMACKey(g.dataDir)
	if err != nil {
		return err
	}
	digester, err := audit.NewHMAC(hmacKey)
	if err != nil {
		return err
	}

	// The key sealing confirmation requestState: made once per data folder (0600),
	// so a person's answer still opens after a restart within its lifetime.
	confirmKeys, err := confirm.LocalKeyring(g.dataDir)
	if err != nil {
		return err
	}
	if v := g.env.getenv(confirm.EnvTestClockOffset); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("%s: %w", confirm.EnvTestClockOffset, err)
		}
		log.Warn("test setting: confirmations are sealed and opened with the clock moved", "offset", d.String())
		confirmKeys = confirmKeys.WithClockOffset(d)
	}

	cat := catalog.New(catalog.Deps{Dispatcher: dispatcher})
	gcfg := guard.Config{Catalog: cat, Store: st, Audit: sink, Now: g.env.Now, Logger: log, HMAC: digester,
		Confirmations: st, Keyring: confirmKeys, Approvals: st}
	if rate != nil {
		gcfg.Limiter = ratelimit.New(st, *rate)
	}
	gd := guard.New(gcfg)
	if errs := gd.SchemaErrors(); len(errs) > 0 {
		return fmt.Errorf("the tool catalog is broken: %d input schema(s) do not compile: %v", len(errs), errs)
	}
	ln, err := net.Listen("tcp", sf.addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", sf.addr, err)
	}
	verifier := auth.NewCachedVerifier(&auth.Verifier{Store: st, Now: g.env.Now}, auth.MaxCacheTTL, 0)
	// A grant revoked here (the grants page, RFC 7009, a replayed code) ends its access
	// tokens at once in this process, not within the cache's 60 s.
	desk := &approval.Desk{Keys: confirmKeys, Store: st, Items: st, Catalog: cat}
	as, err := newAuthorizationServer(ctx, sf.oauth, sf.dev, ln, st, sink, cat, desk, g.env.now, log, func(ids []string) { verifier.Forget(ids...) })
	if err != nil {
		ln.Close()
		return err
	}
	base := sf.publicURL
	if base == "" {
		base = "http://" + displayAddr(ln.Addr())
	}
	base = strings.TrimRight(base, "/")
	jv, err := newJWTVerifier(ctx, sf.jwt, base+"/mcp", st, g.env.now, log)
	if err != nil {
		ln.Close()
		return err
	}
	mcfg := mcpserver.Config{
		PublicURL:            sf.publicURL,
		AuthorizationServers: withIssuer(sf.authServers, sf.jwt.Issuer),
		AllowedOrigins:       sf.allowedOrigins,
		AllowedHosts:         sf.allowedHosts,
		Logger:               log,
		CPUSlots:             sf.slots(),
	}
	if as != nil {
		mcfg.OAuth = as
	}
	src := mcpserver.BearerSource{Verifier: verifier}
	if jv != nil {
		src.JWT = jv
	}
	handler := mcpserver.New(mcfg, gd, cat, src)

	var tokens *devTokens
	if sf.dev {
		tokens, err = setupDev(ctx, st, g.env.now(), log)
		if err != nil {
			ln.Close()
			return err
		}
	}
	printBanner(c.OutOrStdout(), base, g.dataDir, dispatchDesc, rate, tokens, oauthMode(sf.oauth, as != nil, base))

	if sf.compactEvery > 0 {
		stop := startCompactor(ctx, g.dataDir, sf.compactEvery, g.env.now, log)
		defer stop()
	}
	dg, err := startDigester(ctx, g.dataDir, sink, g.env.now, log)
	if err != nil {
		ln.Close()
		return err
	}
	defer dg.cancel() // an error return: the stop below did not run

	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		// A trigger_autopilot call may spend its webhook's retries; leave it room.
		WriteTimeout: 90 * time.Second,
		IdleTimeout:  2 * time.Minute,
		ErrorLog:     slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		BaseContext:  func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	if err := serveUntilDone(ctx, srv, ln, log, g.env.Ready, base); err != nil {
		return err
	}
	// Every request has finished, so no call can count usage any more: commit the
	// counters and tell the next start it has nothing of this run to replay.
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := st.SealUsage(sctx); err != nil {
		log.Warn("usage counters not sealed; the next start replays the last minutes of the audit log", "err", err)
	}
	dg.stop(sctx)
	return nil
}

// serveUntilDone serves on ln until ctx is cancelled (SIGINT, SIGTERM), then lets
// in-flight requests finish for up to shutdownGrace.
func serveUntilDone(ctx context.Context, srv *http.Server, ln net.Listener, log *slog.Logger, ready func(string), base string) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Info("listening", "url", base)
	if ready != nil {
		ready(base)
	}
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down", "grace", shutdownGrace)
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	log.Info("stopped")
	return nil
}

// displayAddr is the address clients should use: an unspecified listen address
// (0.0.0.0, [::]) is reachable on loopback.
func displayAddr(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok {
		return a.String()
	}
	host := tcp.IP.String()
	if tcp.IP == nil || tcp.IP.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, fmt.Sprint(tcp.Port))
}

// readSecretFile reads a signing secret, ignoring surrounding whitespace (files
// written by `echo` end in a newline that is not part of the secret).
func readSecretFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--autopilot-secret-file: %w", err)
	}
	b = bytes.TrimSpace(b)
	if len(b) < 16 {
		return nil, usagef("--autopilot-secret-file: the secret must be at least 16 bytes")
	}
	return b, nil
}

func printBanner(w io.Writer, base, dataDir, dispatch string, rate *ratelimit.Rate, t *devTokens, signIn string) {
	mcpURL := base + "/mcp"
	fmt.Fprintf(w, "aacmcp serving %s\n", mcpURL)
	fmt.Fprintf(w, "  data:      %s (audit log in %s)\n", dataDir, filepath.Join(dataDir, file.Subdir))
	fmt.Fprintf(w, "  autopilot: %s\n", dispatch)
	if rate != nil {
		fmt.Fprintf(w, "  rate limit: %s per token and tool\n", rate)
	}
	fmt.Fprintf(w, "  tokens are verified in process and cached for %.0fs (a revocation takes effect within that)\n", auth.MaxCacheTTL.Seconds())
	if signIn != "" {
		fmt.Fprintf(w, "\nConnector URL for OAuth clients (claude.ai, Claude Desktop, ChatGPT): %s\n", mcpURL)
		fmt.Fprintf(w, "  OAuth: %s; grants at %s/oauth/grants. Hosted clients need a public https URL: docs/clients.md\n", signIn, base)
	}
	if t == nil {
		fmt.Fprintf(w, "\nCreate a token with: aacmcp token create --data %s --workspace ID --user USER --scopes issues:read\n", dataDir)
		return
	}
	fmt.Fprintf(w, "\nDev workspace %q, user %q (admin). Fresh tokens (the previous dev tokens are revoked):\n", devWorkspace, devUser)
	fmt.Fprintf(w, "  full-scope token: %s\n", t.full)
	fmt.Fprintf(w, "  read-only token:  %s\n", t.readOnly)
	fmt.Fprintf(w, "\nAdd it to Claude Code:\n  claude mcp add --transport http aacmcp %s --header \"Authorization: Bearer %s\"\n", mcpURL, t.full)
	fmt.Fprintf(w, "List the tools with the MCP Inspector:\n  npx @modelcontextprotocol/inspector --cli %s --transport http --header \"Authorization: Bearer %s\" --method tools/list\n", mcpURL, t.full)
	fmt.Fprintf(w, "Or with curl (read-only token):\n  curl -s -H \"Authorization: Bearer %s\" %s/tools\n", t.readOnly, base)
	fmt.Fprintf(w, "  curl -s -X POST -H \"Authorization: Bearer %s\" -d '{\"status\":\"open\"}' %s/tools/list_issues\n\n", t.readOnly, base)
}
