package cli

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/aacworkflow/aacmcp/shared/approval"
	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/catalog"
	"github.com/aacworkflow/aacmcp/shared/oauth"
	"github.com/aacworkflow/aacmcp/shared/oauth/clientmeta"
	"github.com/aacworkflow/aacmcp/shared/oauth/upstream"
	"github.com/aacworkflow/aacmcp/shared/store/sqlite"
)

// oauthFlags configure the built-in authorization server of `serve` (and of the
// Lambda code behind `gateway`): who signs people in, and how long tokens live.
type oauthFlags struct {
	issuer, clientID, secretFile string
	accessTTL                    time.Duration
}

func addOAuthFlags(c *cobra.Command, g *globals, of *oauthFlags) {
	f := c.Flags()
	f.StringVar(&of.issuer, "oidc-issuer", g.env.getenv("AACMCP_OIDC_ISSUER"), "upstream OpenID Connect issuer people sign in with (env AACMCP_OIDC_ISSUER); without it, --dev offers a dev sign-in page")
	f.StringVar(&of.clientID, "oidc-client-id", g.env.getenv("AACMCP_OIDC_CLIENT_ID"), "this server's client id at the upstream issuer (env AACMCP_OIDC_CLIENT_ID)")
	f.StringVar(&of.secretFile, "oidc-client-secret-file", "", "file holding the client secret at the upstream issuer")
	f.DurationVar(&of.accessTTL, "oauth-access-ttl", time.Hour, "lifetime of OAuth access tokens (at most 24h)")
}

// check validates the flags that need no I/O.
func (of *oauthFlags) check() error {
	if of.issuer == "" {
		if of.clientID != "" || of.secretFile != "" {
			return usagef("--oidc-client-id and --oidc-client-secret-file need --oidc-issuer")
		}
	} else {
		u, err := url.Parse(of.issuer)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return usagef("--oidc-issuer %q: want an absolute https URL", of.issuer)
		}
		if of.clientID == "" || of.secretFile == "" {
			return usagef("--oidc-issuer needs --oidc-client-id and --oidc-client-secret-file")
		}
	}
	if of.accessTTL <= 0 || of.accessTTL > 24*time.Hour {
		return usagef("--oauth-access-ttl %s: must be positive and at most 24h", of.accessTTL)
	}
	return nil
}

// enabled: the authorization server runs when someone can sign in through it.
func (of *oauthFlags) enabled(dev bool) bool { return dev || of.issuer != "" }

// newAuthorizationServer builds the server for serve. The dev sign-in page, and
// client metadata documents on loopback, are only for a dev server that listens on
// loopback: either would let anyone who reaches the port act as any member.
func newAuthorizationServer(ctx context.Context, of oauthFlags, dev bool, ln net.Listener, st *sqlite.Store, sink audit.Sink, cat *catalog.Catalog, desk *approval.Desk, now func() time.Time, log *slog.Logger, onRevoke func([]string)) (*oauth.Server, error) {
	if !of.enabled(dev) {
		return nil, nil
	}
	if err := devOnLoopback(dev, ln); err != nil {
		return nil, err
	}
	loopback := isLoopbackListener(ln)
	cfg := oauth.Config{
		Store: st, Tokens: st, Sink: sink, Catalog: cat, Counter: st,
		Clients:        clientmeta.NewFetcher(clientmeta.Options{AllowLoopback: dev && loopback, Now: now, Logger: log}),
		Dev:            dev && of.issuer == "",
		AccessTokenTTL: of.accessTTL,
		OnRevoke:       onRevoke,
		Approvals:      desk,
		Logger:         log,
		Now:            now,
	}
	if of.issuer != "" {
		secret, err := of.clientSecret()
		if err != nil {
			return nil, err
		}
		dctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		up, err := upstream.New(dctx, upstream.Config{Issuer: of.issuer, ClientID: of.clientID, ClientSecret: secret})
		if err != nil {
			return nil, fmt.Errorf("--oidc-issuer %s: %w", of.issuer, err)
		}
		cfg.Upstream = up
	}
	return oauth.New(cfg)
}

// clientSecret reads --oidc-client-secret-file.
func (of *oauthFlags) clientSecret() (string, error) {
	b, err := os.ReadFile(of.secretFile)
	if err != nil {
		return "", fmt.Errorf("--oidc-client-secret-file: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// devOnLoopback refuses --dev on a listener other people can reach.
func devOnLoopback(dev bool, ln net.Listener) error {
	if dev && !isLoopbackListener(ln) {
		return usagef("--dev listens on loopback only (its sign-in page lets anyone act as any member): use --addr 127.0.0.1:PORT")
	}
	return nil
}

func isLoopbackListener(ln net.Listener) bool {
	a, ok := ln.Addr().(*net.TCPAddr)
	return ok && a.IP.IsLoopback()
}

// oauthMode is the banner's one line on how people sign in at base (the server's
// public base URL); "" when there is no authorization server.
func oauthMode(of oauthFlags, on bool, base string) string {
	switch {
	case !on:
		return ""
	case of.issuer != "":
		return "people sign in at " + of.issuer + " (a member's verified e-mail), then approve scopes on the consent page"
	case !oauth.DevSignInAnswers(base):
		return "no one can sign in: the dev sign-in page answers only at a loopback URL, not at " + base + "; give --oidc-issuer to sign people in there"
	default:
		return "clients sign in through the dev sign-in page (pick a member of the dev workspace), then approve scopes on the consent page"
	}
}
