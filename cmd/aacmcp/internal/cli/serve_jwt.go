package cli

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/aacworkflow/aacmcp/shared/auth/jwtaccess"
	"github.com/aacworkflow/aacmcp/shared/auth/jwtaccess/jwtconf"
	"github.com/aacworkflow/aacmcp/shared/lambdaenv"
)

// jwtFlags configure an external authorization server whose JWT access tokens
// serve accepts, beside (or instead of) the built-in one.
type jwtFlags struct {
	jwtconf.Settings
}

func addJWTFlags(c *cobra.Command, g *globals, jf *jwtFlags) {
	f := c.Flags()
	f.StringVar(&jf.Issuer, "jwt-issuer", g.env.getenv("AACMCP_JWT_ISSUER"), "accept JWT access tokens of this external authorization server (its exact iss; env AACMCP_JWT_ISSUER)")
	f.StringSliceVar(&jf.Audiences, "jwt-audience", lambdaenv.SplitList(g.env.getenv("AACMCP_JWT_AUDIENCE")), "aud values accepted, comma-separated (env AACMCP_JWT_AUDIENCE; default: this server's /mcp URL)")
	f.StringSliceVar(&jf.Clients, "jwt-clients", lambdaenv.SplitList(g.env.getenv("AACMCP_JWT_CLIENTS")), "client_id values accepted, comma-separated (env AACMCP_JWT_CLIENTS); alone, without --jwt-audience, aud is not checked (Amazon Cognito)")
	f.StringVar(&jf.JWKSURL, "jwt-jwks-url", g.env.getenv("AACMCP_JWT_JWKS_URL"), "the issuer's JWKS (env AACMCP_JWT_JWKS_URL; default: jwks_uri of its RFC 8414 or OpenID Connect metadata)")
	f.StringSliceVar(&jf.Algorithms, "jwt-algorithms", lambdaenv.SplitList(g.env.getenv("AACMCP_JWT_ALGORITHMS")), "signature algorithms accepted (env AACMCP_JWT_ALGORITHMS; default RS256,ES256; asymmetric only)")
	f.StringVar(&jf.UserClaim, "jwt-user-claim", g.env.envOr("AACMCP_JWT_USER_CLAIM", jwtaccess.DefaultUserClaim), "claim holding the member's e-mail (env AACMCP_JWT_USER_CLAIM)")
	f.StringVar(&jf.Workspace, "jwt-workspace", g.env.getenv("AACMCP_JWT_WORKSPACE"), "workspace the tokens act in, for people who are members of several (env AACMCP_JWT_WORKSPACE)")
	f.StringVar(&jf.WorkspaceClaim, "jwt-workspace-claim", g.env.getenv("AACMCP_JWT_WORKSPACE_CLAIM"), "claim naming the workspace, instead of --jwt-workspace (env AACMCP_JWT_WORKSPACE_CLAIM)")
	f.BoolVar(&jf.RequireATJWT, "jwt-require-at-jwt", false, "refuse tokens whose typ header is not at+jwt (RFC 9068)")
}

// check validates what needs no I/O.
func (jf *jwtFlags) check() error {
	if jf.Issuer == "" {
		if len(jf.Audiences) > 0 || len(jf.Clients) > 0 || jf.JWKSURL != "" || len(jf.Algorithms) > 0 || jf.Workspace != "" || jf.WorkspaceClaim != "" || jf.RequireATJWT {
			return usagef("the --jwt-* flags need --jwt-issuer")
		}
		return nil
	}
	if jf.Workspace != "" && jf.WorkspaceClaim != "" {
		return usagef("--jwt-workspace and --jwt-workspace-claim: set one")
	}
	if _, err := jwtaccess.ParseAlgorithms(jf.Algorithms); err != nil {
		return usagef("--jwt-algorithms: %v", err)
	}
	return nil
}

// newJWTVerifier builds the verifier for serve; mcpURL is the default audience.
// It fetches the issuer's keys once, so a wrong issuer fails at start.
func newJWTVerifier(ctx context.Context, jf jwtFlags, mcpURL string, members jwtaccess.Members, now func() time.Time, log *slog.Logger) (*jwtaccess.Verifier, error) {
	if jf.Issuer == "" {
		return nil, nil
	}
	set := jf.Settings
	if len(set.Audiences) == 0 && len(set.Clients) == 0 {
		set.Audiences = []string{mcpURL}
	}
	v, err := jwtaccess.New(jwtaccess.Config{Settings: set, Members: members, Now: now, Logger: log})
	if err != nil {
		return nil, usagef("--jwt-issuer: %v", err)
	}
	pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := v.Prime(pctx); err != nil {
		return nil, fmt.Errorf("--jwt-issuer %s: %w", jf.Issuer, err)
	}
	log.Info("accepting JWT access tokens", "issuer", jf.Issuer, "audience", strings.Join(set.Audiences, " "))
	return v, nil
}

// withIssuer adds the external issuer to the advertised authorization servers.
func withIssuer(servers []string, issuer string) []string {
	if issuer == "" || slices.Contains(servers, issuer) {
		return servers
	}
	return append(slices.Clone(servers), issuer)
}

// checkForGateway is check for `gateway`, whose authorizer, like the deployed one,
// does not know the public URL: the audience (or the allowed clients) must be given.
func (jf *jwtFlags) checkForGateway() error {
	if err := jf.check(); err != nil {
		return err
	}
	if jf.Issuer != "" && len(jf.Audiences) == 0 && len(jf.Clients) == 0 {
		return usagef("--jwt-issuer on gateway needs --jwt-audience (the deployed /mcp URL the tokens name) or --jwt-clients")
	}
	return nil
}
