package cli

import (
	"errors"
	"fmt"
	"github.com/aacworkflow/aacmcp/shared/store"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/aacworkflow/aacmcp/shared/auth"
)

func newTokenCmd(g *globals) *cobra.Command {
	return newGroup("token", "Issue, list and revoke bearer tokens",
		newTokenCreateCmd(g), newTokenListCmd(g), newTokenRevokeCmd(g))
}

// createdToken is the --json output of token create: the only time the secret is shown.
type createdToken struct {
	Token       string    `json:"token"`
	TokenID     string    `json:"token_id"`
	Name        string    `json:"name"`
	WorkspaceID string    `json:"workspace_id"`
	UserID      string    `json:"user_id"`
	Scopes      []string  `json:"scopes"`
	CreatedAt   time.Time `json:"created_at"`
	ExpiresAt   time.Time `json:"expires_at"`
}

func newTokenCreateCmd(g *globals) *cobra.Command {
	var (
		ws, user, name string
		scopes         string
		list           []string
		ttl            time.Duration
	)
	c := newAdminCmd(g, &cobra.Command{
		Use:   "create --workspace ID --user USER --scopes S1,S2 [--ttl 720h] [--name NAME]",
		Short: "Issue a bearer token (the secret is shown once)",
		Long: `Issue a bearer token for a user of a workspace. Only its SHA-256 is stored: the
secret is printed once and cannot be shown again. Scopes imply nothing (issues:write
does not grant issues:read). Known scopes: ` + strings.Join(auth.AllScopes, ", ") + `.`,
		Example: `  aacmcp token create --workspace demo --user dev --scopes issues:read,issues:write --ttl 24h --json`,
		Args:    wrapArgs(cobra.NoArgs),
	}, adminAction{
		jsonHelp: `print {"token": ..., "token_id": ..., ...} as JSON`,
		check: func([]string) error {
			list = auth.ParseScopes(scopes)
			if len(list) == 0 {
				return usagef("--scopes: name at least one of %s", strings.Join(auth.AllScopes, ", "))
			}
			for _, s := range list {
				if !isScope(s) {
					return usagef("--scopes: unknown scope %q (known: %s)", s, strings.Join(auth.AllScopes, ", "))
				}
			}
			if ttl <= 0 || ttl > auth.MaxTokenTTL {
				return usagef("--ttl %s: must be positive and at most %s", ttl, auth.MaxTokenTTL)
			}
			return nil
		},
		run: func(c *cobra.Command, s adminStore, _ []string) (any, string, error) {
			if err := workspaceExists(c.Context(), s, ws); err != nil {
				return nil, "", err
			}
			if _, err := s.GetMember(c.Context(), ws, user); errors.Is(err, store.ErrNotFound) {
				fmt.Fprintf(c.ErrOrStderr(), "warning: %s is not a member of %s: every call with this token will be permission_denied until `aacmcp member add`\n", user, ws)
			} else if err != nil {
				return nil, "", err
			}
			secret, rec, err := auth.IssueToken(c.Context(), s, auth.TokenRequest{
				WorkspaceID: ws, UserID: user, Name: name, Scopes: list, TTL: ttl,
			}, g.env.now())
			if err != nil {
				return nil, "", err
			}
			out := createdToken{
				Token: secret, TokenID: rec.TokenID, Name: rec.Name, WorkspaceID: rec.WorkspaceID,
				UserID: rec.UserID, Scopes: rec.Scopes, CreatedAt: rec.CreatedAt, ExpiresAt: rec.ExpiresAt,
			}
			text := fmt.Sprintf("token %s for %s in %s, scopes %s, expires %s\n",
				rec.TokenID, rec.UserID, rec.WorkspaceID, strings.Join(rec.Scopes, " "), fmtTime(rec.ExpiresAt)) +
				fmt.Sprintf("\n  %s\n\nThis secret is shown once; only its hash is stored.\n", secret)
			return out, text, nil
		},
	})
	f := c.Flags()
	f.StringVar(&ws, "workspace", "", "workspace id (required)")
	f.StringVar(&user, "user", "", "user id (required)")
	f.StringVar(&scopes, "scopes", "", "comma- or space-separated scopes (required)")
	f.DurationVar(&ttl, "ttl", 720*time.Hour, "lifetime")
	f.StringVar(&name, "name", "", "label shown by token list")
	requireFlags(c, "workspace", "user", "scopes")
	return c
}

func isScope(s string) bool {
	for _, k := range auth.AllScopes {
		if s == k {
			return true
		}
	}
	return false
}

func newTokenListCmd(g *globals) *cobra.Command {
	var ws string
	c := newAdminCmd(g, &cobra.Command{
		Use:   "list [--workspace ID]",
		Short: "List tokens (never their secrets), newest first",
		Args:  wrapArgs(cobra.NoArgs),
	}, adminAction{
		jsonHelp: "print the token records as JSON",
		run: func(c *cobra.Command, s adminStore, _ []string) (any, string, error) {
			toks, err := s.ListTokens(c.Context(), ws)
			if err != nil {
				return nil, "", err
			}
			if toks == nil {
				toks = []auth.TokenRecord{} // [] rather than null for --json
			}
			var text strings.Builder
			now := g.env.now()
			t := newTable(&text, "TOKEN ID", "NAME", "WORKSPACE", "USER", "SCOPES", "EXPIRES", "STATE")
			for _, r := range toks {
				t.row(r.TokenID, orDash(r.Name), r.WorkspaceID, r.UserID, strings.Join(r.Scopes, ","), fmtTime(r.ExpiresAt), tokenState(r, now))
			}
			// Flushing into a strings.Builder cannot fail.
			_ = t.flush()
			return toks, text.String(), nil
		},
	})
	c.Flags().StringVar(&ws, "workspace", "", "only this workspace's tokens (default: all)")
	return c
}

func tokenState(r auth.TokenRecord, now time.Time) string {
	return lifeState(r.RevokedAt, r.ExpiresAt, now)
}

// lifeState is the STATE column of anything that is revoked or expires: tokens and
// OAuth grants.
func lifeState(revokedAt *time.Time, expiresAt, now time.Time) string {
	switch {
	case revokedAt != nil:
		return "revoked " + fmtTime(*revokedAt)
	case !now.Before(expiresAt):
		return "expired"
	default:
		return "active"
	}
}

func newTokenRevokeCmd(g *globals) *cobra.Command {
	return newAdminCmd(g, &cobra.Command{
		Use:   "revoke TOKEN_ID",
		Short: "Revoke a token by its public id (tok_...)",
		Long: `Revoke a token. The local server and the Lambda authorizer cache a verified token
for at most 60 seconds, so a revocation takes full effect within a minute.`,
		Args: wrapArgs(cobra.ExactArgs(1)),
	}, adminAction{
		jsonHelp: "print the revoked record as JSON",
		check: func(args []string) error {
			if !strings.HasPrefix(args[0], "tok_") {
				return usagef("%q is not a token id: pass the public id (tok_...) that token list shows, never the secret", args[0])
			}
			return nil
		},
		run: func(c *cobra.Command, s adminStore, args []string) (any, string, error) {
			id := args[0]
			rec, err := s.UpdateTokenRevoked(c.Context(), id, g.env.now().UTC())
			if err != nil {
				return nil, "", fmt.Errorf("token %s: %s", id, describe(err))
			}
			return rec, fmt.Sprintf("revoked %s at %s\n", rec.TokenID, fmtTime(*rec.RevokedAt)), nil
		},
	})
}
