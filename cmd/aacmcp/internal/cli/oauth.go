package cli

import (
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/aacworkflow/aacmcp/shared/audit/file"
	"github.com/aacworkflow/aacmcp/shared/catalog"
	"github.com/aacworkflow/aacmcp/shared/oauth"
	"github.com/aacworkflow/aacmcp/shared/store"
)

func newOAuthCmd(g *globals) *cobra.Command {
	return newGroup("oauth", "Control which OAuth clients may connect, and the grants people gave them",
		newGroup("clients", "The client policy and the registered (DCR) clients",
			newOAuthClientsListCmd(g), newOAuthPolicyCmd(g), newOAuthAllowCmd(g, true), newOAuthAllowCmd(g, false), newOAuthClientRemoveCmd(g)),
		newGroup("grants", "The grants people gave OAuth clients",
			newOAuthGrantsListCmd(g), newOAuthGrantRevokeCmd(g)),
	)
}

// oauthStoreOf is the store's OAuth half. Both backends have one; the check keeps a
// backend added later without it from failing anywhere but here.
func oauthStoreOf(s adminStore) (oauthAdminStore, error) {
	o, ok := s.(oauthAdminStore)
	if !ok {
		return nil, fmt.Errorf("this backend keeps no OAuth clients or grants")
	}
	return o, nil
}

// oauthAdminStore is what the oauth commands need: the OAuth state, and the counter
// an authorization server is built with (RevokeGrant goes through one).
type oauthAdminStore interface {
	store.OAuthStore
	oauth.RateCounter
}

// clientsView is the --json output of oauth clients list.
type clientsView struct {
	Policy  store.OAuthPolicy   `json:"policy"`
	Clients []store.OAuthClient `json:"registered_clients"`
}

func newOAuthClientsListCmd(g *globals) *cobra.Command {
	return newAdminCmd(g, &cobra.Command{
		Use:   "list",
		Short: "Show the client policy and every client registered through DCR",
		Args:  wrapArgs(cobra.NoArgs),
	}, adminAction{
		jsonHelp: "print the policy and the registered clients as JSON",
		run: func(c *cobra.Command, s adminStore, _ []string) (any, string, error) {
			o, err := oauthStoreOf(s)
			if err != nil {
				return nil, "", err
			}
			pol, err := o.GetOAuthPolicy(c.Context())
			if err != nil {
				return nil, "", err
			}
			cl, err := o.ListOAuthClients(c.Context())
			if err != nil {
				return nil, "", err
			}
			if cl == nil {
				cl = []store.OAuthClient{}
			}
			if pol.Allowed == nil {
				pol.Allowed = []string{}
			}
			var text strings.Builder
			fmt.Fprintf(&text, "policy: %s\n", describePolicy(pol))
			for _, id := range pol.Allowed {
				fmt.Fprintf(&text, "  allowed: %s\n", id)
			}
			fmt.Fprintln(&text)
			now := g.env.now()
			t := newTable(&text, "CLIENT ID", "NAME", "TYPE", "AUTH", "REDIRECT HOSTS", "REGISTERED", "LAST USED", "STATE")
			for _, r := range cl {
				state := "active"
				if now.Sub(r.LastUsedAt) > store.OAuthClientLapse {
					state = "lapsed"
				}
				t.row(r.ClientID, orDash(r.Name), r.ApplicationType, r.TokenEndpointAuthMethod, strings.Join(redirectHosts(r.RedirectURIs), ","), fmtTime(r.CreatedAt), fmtTime(r.LastUsedAt), state)
			}
			_ = t.flush() // into a strings.Builder: cannot fail
			return clientsView{Policy: pol, Clients: cl}, text.String(), nil
		},
	})
}

func describePolicy(p store.OAuthPolicy) string {
	if p.Mode == store.OAuthPolicyAllowlist {
		return fmt.Sprintf("allowlist (only the %d client ids below may connect)", len(p.Allowed))
	}
	return "any (every client may connect; its name and host are shown on the consent page)"
}

func redirectHosts(uris []string) []string {
	var hosts []string
	for _, u := range uris {
		if p, err := url.Parse(u); err == nil && p.Host != "" {
			hosts = append(hosts, p.Host)
		} else if err == nil {
			hosts = append(hosts, p.Scheme+":")
		}
	}
	return slices.Compact(slices.Sorted(slices.Values(hosts)))
}

func newOAuthPolicyCmd(g *globals) *cobra.Command {
	return newAdminCmd(g, &cobra.Command{
		Use:   "policy any|allowlist",
		Short: "Let every client connect (any, the default), or only the allowed client ids",
		Long: `Set which OAuth clients may start an authorization. With allowlist, only the client
ids added by 'aacmcp oauth clients allow' may: metadata-document URLs (such as
https://client.example/oauth/metadata.json) or ids of registered clients.
Grants given earlier keep working until revoked; use 'aacmcp oauth grants revoke'.`,
		Example: `  aacmcp oauth clients policy allowlist`,
		Args:    wrapArgs(cobra.ExactArgs(1)),
	}, adminAction{
		jsonHelp: "print the policy as JSON",
		check: func(args []string) error {
			if args[0] != store.OAuthPolicyAny && args[0] != store.OAuthPolicyAllowlist {
				return usagef("policy %q: want any or allowlist", args[0])
			}
			return nil
		},
		run: func(c *cobra.Command, s adminStore, args []string) (any, string, error) {
			pol, err := editPolicy(c, s, func(p *store.OAuthPolicy) error { p.Mode = args[0]; return nil })
			if err != nil {
				return nil, "", err
			}
			return pol, "policy: " + describePolicy(pol) + "\n", nil
		},
	})
}

func newOAuthAllowCmd(g *globals, allow bool) *cobra.Command {
	use, short := "allow CLIENT_ID", "Add a client id to the allow-list"
	if !allow {
		use, short = "disallow CLIENT_ID", "Remove a client id from the allow-list"
	}
	return newAdminCmd(g, &cobra.Command{
		Use:   use,
		Short: short,
		Args:  wrapArgs(cobra.ExactArgs(1)),
	}, adminAction{
		jsonHelp: "print the policy as JSON",
		check: func(args []string) error {
			if args[0] == "" || len(args[0]) > 2048 || strings.ContainsFunc(args[0], func(r rune) bool { return r <= ' ' || r == 0x7f }) {
				return usagef("client id %q: want a metadata-document URL or a registered client id, without spaces", args[0])
			}
			return nil
		},
		run: func(c *cobra.Command, s adminStore, args []string) (any, string, error) {
			id := args[0]
			pol, err := editPolicy(c, s, func(p *store.OAuthPolicy) error {
				has := slices.Contains(p.Allowed, id)
				switch {
				case allow && !has:
					p.Allowed = append(p.Allowed, id)
				case !allow && has:
					p.Allowed = slices.DeleteFunc(p.Allowed, func(v string) bool { return v == id })
				case !allow:
					return fmt.Errorf("client id %s is not on the allow-list", id)
				}
				return nil
			})
			if err != nil {
				return nil, "", err
			}
			text := fmt.Sprintf("allow-list: %d client id(s); policy %s\n", len(pol.Allowed), pol.Mode)
			if allow && pol.Mode != store.OAuthPolicyAllowlist {
				text += "note: the policy is 'any', so the list takes effect after 'aacmcp oauth clients policy allowlist'\n"
			}
			return pol, text, nil
		},
	})
}

// editPolicy reads the client policy, applies edit and writes it back.
func editPolicy(c *cobra.Command, s adminStore, edit func(*store.OAuthPolicy) error) (store.OAuthPolicy, error) {
	o, err := oauthStoreOf(s)
	if err != nil {
		return store.OAuthPolicy{}, err
	}
	pol, err := o.GetOAuthPolicy(c.Context())
	if err != nil {
		return store.OAuthPolicy{}, err
	}
	if err := edit(&pol); err != nil {
		return store.OAuthPolicy{}, err
	}
	if pol.Mode == "" {
		pol.Mode = store.OAuthPolicyAny
	}
	return pol, o.UpdateOAuthPolicy(c.Context(), pol)
}

func newOAuthClientRemoveCmd(g *globals) *cobra.Command {
	return newAdminCmd(g, &cobra.Command{
		Use:   "remove CLIENT_ID",
		Short: "Delete a registered (DCR) client; it can no longer authorize or refresh",
		Args:  wrapArgs(cobra.ExactArgs(1)),
	}, adminAction{
		jsonHelp: `print {"removed": CLIENT_ID} as JSON`,
		run: func(c *cobra.Command, s adminStore, args []string) (any, string, error) {
			o, err := oauthStoreOf(s)
			if err != nil {
				return nil, "", err
			}
			if err := o.DeleteOAuthClient(c.Context(), args[0]); err != nil {
				return nil, "", fmt.Errorf("client %s: %s", args[0], describe(err))
			}
			return map[string]string{"removed": args[0]}, "removed client " + args[0] + "\n", nil
		},
	})
}

func newOAuthGrantsListCmd(g *globals) *cobra.Command {
	var ws, user string
	c := newAdminCmd(g, &cobra.Command{
		Use:   "list [--workspace ID] [--user USER]",
		Short: "List the grants people gave OAuth clients, newest first",
		Args:  wrapArgs(cobra.NoArgs),
	}, adminAction{
		jsonHelp: "print the grants as JSON",
		run: func(c *cobra.Command, s adminStore, _ []string) (any, string, error) {
			o, err := oauthStoreOf(s)
			if err != nil {
				return nil, "", err
			}
			gs, err := o.ListOAuthGrants(c.Context(), ws, user)
			if err != nil {
				return nil, "", err
			}
			if gs == nil {
				gs = []store.OAuthGrant{}
			}
			var text strings.Builder
			now := g.env.now()
			t := newTable(&text, "GRANT ID", "CLIENT", "WORKSPACE", "USER", "SCOPES", "LAST USED", "STATE")
			for _, r := range gs {
				t.row(r.ID, orDash(r.ClientName)+" ("+r.ClientID+")", r.WorkspaceID, r.UserID, strings.Join(r.Scopes, ","), fmtTime(r.LastUsedAt), grantState(r, now))
			}
			_ = t.flush() // into a strings.Builder: cannot fail
			return gs, text.String(), nil
		},
	})
	c.Flags().StringVar(&ws, "workspace", "", "only this workspace's grants (default: all)")
	c.Flags().StringVar(&user, "user", "", "only this user's grants (default: all)")
	return c
}

func newOAuthGrantRevokeCmd(g *globals) *cobra.Command {
	return newAdminCmd(g, &cobra.Command{
		Use:   "revoke GRANT_ID",
		Short: "Revoke a grant: its refresh token fails at once, its access tokens within 60 s",
		Args:  wrapArgs(cobra.ExactArgs(1)),
	}, adminAction{
		jsonHelp: "print the revoked grant as JSON",
		run: func(c *cobra.Command, s adminStore, args []string) (any, string, error) {
			o, err := oauthStoreOf(s)
			if err != nil {
				return nil, "", err
			}
			// The revocation is audited like one made on the grants page; this
			// process writes its own audit files beside a running server's.
			sink, err := file.New(g.dataDir)
			if err != nil {
				return nil, "", err
			}
			defer sink.Close()
			// The grants page and this command revoke through the same code: the
			// grant, its access tokens, and the audit record.
			as, err := oauth.New(oauth.Config{Store: o, Tokens: s, Sink: sink, Catalog: catalog.New(catalog.Deps{}), Counter: o, Now: g.env.now, AdminOnly: true,
				Logger: slog.New(slog.NewTextHandler(c.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))})
			if err != nil {
				return nil, "", err
			}
			gr, err := as.RevokeGrant(c.Context(), args[0], "admin")
			if err != nil {
				return nil, "", fmt.Errorf("grant %s: %s", args[0], describe(err))
			}
			return gr, fmt.Sprintf("revoked grant %s (%s, %s in %s) at %s\n", gr.ID, orDash(gr.ClientName), gr.UserID, gr.WorkspaceID, fmtTime(*gr.RevokedAt)), nil
		},
	})
}

func grantState(r store.OAuthGrant, now time.Time) string {
	return lifeState(r.RevokedAt, r.ExpiresAt, now)
}
