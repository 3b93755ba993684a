package cli

import (
	"errors"
	"fmt"
	"net/mail"
	"strings"

	"github.com/spf13/cobra"

	"github.com/aacworkflow/aacmcp/shared/store"
)

func newWorkspaceCmd(g *globals) *cobra.Command {
	var id, key, name string
	create := newAdminCmd(g, &cobra.Command{
		Use:     "create --id ID --key PREFIX [--name NAME]",
		Short:   "Create a workspace (a tenant) with its issue key prefix",
		Example: `  aacmcp workspace create --id acme --key ACME --name "Acme Corp"`,
		Args:    wrapArgs(cobra.NoArgs),
	}, adminAction{
		jsonHelp: "print the workspace as JSON",
		check: func([]string) error {
			if err := checkID("--id", id); err != nil {
				return err
			}
			key = strings.ToUpper(key)
			if !store.ValidWorkspaceKey(key) {
				return usagef("--key %q: use 1-10 letters or digits, starting with a letter (issues become KEY-1, KEY-2, ...)", key)
			}
			if name == "" {
				name = id
			}
			return nil
		},
		run: func(c *cobra.Command, s adminStore, _ []string) (any, string, error) {
			w, err := s.CreateWorkspace(c.Context(), store.Workspace{ID: id, Key: key, Name: name, CreatedAt: g.env.now().UTC()})
			if err != nil {
				return nil, "", err
			}
			return w, fmt.Sprintf("created workspace %s (issue keys %s-1, %s-2, ...)\n", w.ID, w.Key, w.Key), nil
		},
	})
	create.Flags().StringVar(&id, "id", "", "workspace id (required)")
	create.Flags().StringVar(&key, "key", "", "issue key prefix such as AAC (required)")
	create.Flags().StringVar(&name, "name", "", "display name (default: the id)")
	requireFlags(create, "id", "key")
	return newGroup("workspace", "Manage workspaces", create, newWorkspaceListCmd(g), newWorkspaceSetCmd(g))
}

func newMemberCmd(g *globals) *cobra.Command {
	return newGroup("member", "Manage the members of a workspace and their roles",
		newMemberAddCmd(g), newMemberListCmd(g), newMemberRemoveCmd(g))
}

func newMemberAddCmd(g *globals) *cobra.Command {
	var ws, user, role, email string
	c := newAdminCmd(g, &cobra.Command{
		Use:   "add --workspace ID --user USER --role viewer|member|admin [--email E]",
		Short: "Add a user to a workspace, or change their role or e-mail",
		Long: `Add a user to a workspace, or change the role of one already there.
The role is read at every call, so a change takes effect at once for tokens already issued.
viewer: read tools only; member: read and write; admin: also deletes anyone's items.

--email links the member to a person who signs in through OAuth: the upstream identity
provider's verified e-mail must equal it (compared case-insensitively). Without --email
an existing member keeps theirs; --email "" removes it.`,
		Example: `  aacmcp member add --workspace demo --user alice --role member --email alice@example.com`,
		Args:    wrapArgs(cobra.NoArgs),
	}, adminAction{
		jsonHelp: "print the member record as JSON",
		check: func([]string) error {
			if !store.Role(role).Valid() {
				return usagef("--role %q: want viewer, member or admin", role)
			}
			if email != "" {
				e, err := checkEmail(email)
				if err != nil {
					return err
				}
				email = e
			}
			return checkID("--user", user)
		},
		run: func(c *cobra.Command, s adminStore, _ []string) (any, string, error) {
			if err := workspaceExists(c.Context(), s, ws); err != nil {
				return nil, "", err
			}
			if !c.Flags().Changed("email") {
				// A role change must not unlink the member from their sign-in.
				old, err := s.GetMember(c.Context(), ws, user)
				switch {
				case err == nil:
					email = old.Email
				case !errors.Is(err, store.ErrNotFound):
					return nil, "", err
				}
			}
			m, err := s.UpdateMember(c.Context(), store.Member{WorkspaceID: ws, UserID: user, Role: store.Role(role),
				Email: email, CreatedAt: g.env.now().UTC()})
			if err != nil {
				return nil, "", err
			}
			if m.Email != "" {
				return m, fmt.Sprintf("%s (%s) is %s in workspace %s\n", m.UserID, m.Email, m.Role, m.WorkspaceID), nil
			}
			return m, fmt.Sprintf("%s is %s in workspace %s\n", m.UserID, m.Role, m.WorkspaceID), nil
		},
	})
	c.Flags().StringVar(&ws, "workspace", "", "workspace id (required)")
	c.Flags().StringVar(&user, "user", "", "user id (required)")
	c.Flags().StringVar(&role, "role", "", "viewer, member or admin (required)")
	c.Flags().StringVar(&email, "email", "", `e-mail a person signing in through OAuth must have verified ("" removes it)`)
	requireFlags(c, "workspace", "user", "role")
	return c
}

// maxEmail is the longest address SMTP can carry (RFC 5321: a 254-octet path).
const maxEmail = 254

// checkEmail accepts a bare address (no display name, no angle brackets) and returns
// it lower-cased, as the store keeps it.
func checkEmail(e string) (string, error) {
	a, err := mail.ParseAddress(e)
	if err != nil || a.Name != "" || a.Address != e || len(e) > maxEmail {
		return "", usagef("--email %q: want a plain address such as alice@example.com", e)
	}
	return strings.ToLower(e), nil
}

func newMemberListCmd(g *globals) *cobra.Command {
	var ws string
	c := newAdminCmd(g, &cobra.Command{
		Use:   "list --workspace ID",
		Short: "List the members of a workspace, with their roles and e-mails",
		Args:  wrapArgs(cobra.NoArgs),
	}, adminAction{
		jsonHelp: "print the member records as JSON",
		run: func(c *cobra.Command, s adminStore, _ []string) (any, string, error) {
			if err := workspaceExists(c.Context(), s, ws); err != nil {
				return nil, "", err
			}
			members, err := s.ListMembers(c.Context(), ws)
			if err != nil {
				return nil, "", err
			}
			if members == nil {
				members = []store.Member{} // [] rather than null for --json
			}
			var text strings.Builder
			t := newTable(&text, "USER", "ROLE", "EMAIL", "ADDED")
			for _, m := range members {
				t.row(m.UserID, string(m.Role), orDash(m.Email), fmtTime(m.CreatedAt))
			}
			// Flushing into a strings.Builder cannot fail.
			_ = t.flush()
			return members, text.String(), nil
		},
	})
	c.Flags().StringVar(&ws, "workspace", "", "workspace id (required)")
	requireFlags(c, "workspace")
	return c
}

func newMemberRemoveCmd(g *globals) *cobra.Command {
	var ws, user string
	c := newAdminCmd(g, &cobra.Command{
		Use:   "remove --workspace ID --user USER",
		Short: "Remove a user from a workspace",
		Long: `Remove a user's member record. Their tokens stay valid but every tool answers
permission_denied from the next call on; revoke the tokens too to stop them at the door.`,
		Args: wrapArgs(cobra.NoArgs),
	}, adminAction{
		run: func(c *cobra.Command, s adminStore, _ []string) (any, string, error) {
			if err := s.DeleteMember(c.Context(), ws, user); err != nil {
				return nil, "", fmt.Errorf("member %q of workspace %q: %s", user, ws, describe(err))
			}
			return nil, fmt.Sprintf("removed %s from workspace %s\n", user, ws), nil
		},
	})
	c.Flags().StringVar(&ws, "workspace", "", "workspace id (required)")
	c.Flags().StringVar(&user, "user", "", "user id (required)")
	requireFlags(c, "workspace", "user")
	return c
}

func newAgentCmd(g *globals) *cobra.Command {
	var ws, id, name string
	add := newAdminCmd(g, &cobra.Command{
		Use:     "add --workspace ID --id AGENT [--name NAME]",
		Short:   "Add an AI agent that issues can be assigned to",
		Example: `  aacmcp agent add --workspace demo --id triage-bot --name "Triage bot"`,
		Args:    wrapArgs(cobra.NoArgs),
	}, adminAction{
		jsonHelp: "print the agent as JSON",
		check: func([]string) error {
			if name == "" {
				name = id
			}
			return checkID("--id", id)
		},
		run: func(c *cobra.Command, s adminStore, _ []string) (any, string, error) {
			if err := workspaceExists(c.Context(), s, ws); err != nil {
				return nil, "", err
			}
			a, err := s.CreateAgent(c.Context(), store.Agent{WorkspaceID: ws, ID: id, Name: name, CreatedAt: g.env.now().UTC()})
			if err != nil {
				return nil, "", err
			}
			return a, fmt.Sprintf("added agent %s to workspace %s\n", a.ID, a.WorkspaceID), nil
		},
	})
	add.Flags().StringVar(&ws, "workspace", "", "workspace id (required)")
	add.Flags().StringVar(&id, "id", "", "agent id (required)")
	add.Flags().StringVar(&name, "name", "", "display name (default: the id)")
	requireFlags(add, "workspace", "id")
	return newGroup("agent", "Manage the AI agents of a workspace", add)
}

// validID reports whether s is a usable workspace, user or agent id: short, and made of
// characters that survive DynamoDB keys ("#" separates key parts), URLs and logs.
func validID(s string) bool { return nameOf(s, 1, 64) }
