package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/aacworkflow/aacmcp/shared/store"
)

func newWorkspaceCmd(g *globals) *cobra.Command {
	var (
		b             backendFlags
		id, key, name string
		asJSON        bool
	)
	create := &cobra.Command{
		Use:     "create --id ID --key PREFIX [--name NAME]",
		Short:   "Create a workspace (a tenant) with its issue key prefix",
		Example: `  aacmcp workspace create --id acme --key ACME --name "Acme Corp"`,
		Args:    wrapArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			if !validID(id) {
				return usagef("--id %q: use 1-64 letters, digits, '-', '_' or '.'", id)
			}
			key = strings.ToUpper(key)
			if !store.ValidWorkspaceKey(key) {
				return usagef("--key %q: use 1-10 letters or digits, starting with a letter (issues become KEY-1, KEY-2, ...)", key)
			}
			if name == "" {
				name = id
			}
			s, done, err := b.open(c.Context(), c, g)
			if err != nil {
				return err
			}
			defer done()
			w, err := s.CreateWorkspace(c.Context(), store.Workspace{ID: id, Key: key, Name: name, CreatedAt: g.env.now().UTC()})
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(c.OutOrStdout(), w)
			}
			fmt.Fprintf(c.OutOrStdout(), "created workspace %s (issue keys %s-1, %s-2, ...)\n", w.ID, w.Key, w.Key)
			return nil
		},
	}
	create.Flags().StringVar(&id, "id", "", "workspace id (required)")
	create.Flags().StringVar(&key, "key", "", "issue key prefix such as AAC (required)")
	create.Flags().StringVar(&name, "name", "", "display name (default: the id)")
	create.Flags().BoolVar(&asJSON, "json", false, "print the workspace as JSON")
	_ = create.MarkFlagRequired("id")
	_ = create.MarkFlagRequired("key")
	addBackendFlags(create, g, &b)
	return newGroup("workspace", "Manage workspaces", create)
}

func newMemberCmd(g *globals) *cobra.Command {
	return newGroup("member", "Manage the members of a workspace and their roles",
		newMemberAddCmd(g), newMemberRemoveCmd(g))
}

func newMemberAddCmd(g *globals) *cobra.Command {
	var (
		b              backendFlags
		ws, user, role string
		asJSON         bool
	)
	c := &cobra.Command{
		Use:   "add --workspace ID --user USER --role viewer|member|admin",
		Short: "Add a user to a workspace, or change their role",
		Long: `Add a user to a workspace, or change the role of one already there.
The role is read at every call, so a change takes effect at once for tokens already issued.
viewer: read tools only; member: read and write; admin: also deletes anyone's items.`,
		Example: `  aacmcp member add --workspace demo --user alice --role member`,
		Args:    wrapArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			r := store.Role(role)
			if !r.Valid() {
				return usagef("--role %q: want viewer, member or admin", role)
			}
			if !validID(user) {
				return usagef("--user %q: use 1-64 letters, digits, '-', '_' or '.'", user)
			}
			s, done, err := b.open(c.Context(), c, g)
			if err != nil {
				return err
			}
			defer done()
			if _, err := s.GetWorkspace(c.Context(), ws); err != nil {
				return fmt.Errorf("workspace %q: %s", ws, describe(err))
			}
			m, err := s.UpdateMember(c.Context(), store.Member{WorkspaceID: ws, UserID: user, Role: r, CreatedAt: g.env.now().UTC()})
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(c.OutOrStdout(), m)
			}
			fmt.Fprintf(c.OutOrStdout(), "%s is %s in workspace %s\n", m.UserID, m.Role, m.WorkspaceID)
			return nil
		},
	}
	c.Flags().StringVar(&ws, "workspace", "", "workspace id (required)")
	c.Flags().StringVar(&user, "user", "", "user id (required)")
	c.Flags().StringVar(&role, "role", "", "viewer, member or admin (required)")
	c.Flags().BoolVar(&asJSON, "json", false, "print the member record as JSON")
	for _, f := range []string{"workspace", "user", "role"} {
		_ = c.MarkFlagRequired(f)
	}
	addBackendFlags(c, g, &b)
	return c
}

func newMemberRemoveCmd(g *globals) *cobra.Command {
	var (
		b        backendFlags
		ws, user string
	)
	c := &cobra.Command{
		Use:   "remove --workspace ID --user USER",
		Short: "Remove a user from a workspace",
		Long: `Remove a user's member record. Their tokens stay valid but every tool answers
permission_denied from the next call on; revoke the tokens too to stop them at the door.`,
		Args: wrapArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			s, done, err := b.open(c.Context(), c, g)
			if err != nil {
				return err
			}
			defer done()
			if err := s.DeleteMember(c.Context(), ws, user); err != nil {
				return fmt.Errorf("member %q of workspace %q: %s", user, ws, describe(err))
			}
			fmt.Fprintf(c.OutOrStdout(), "removed %s from workspace %s\n", user, ws)
			return nil
		},
	}
	c.Flags().StringVar(&ws, "workspace", "", "workspace id (required)")
	c.Flags().StringVar(&user, "user", "", "user id (required)")
	_ = c.MarkFlagRequired("workspace")
	_ = c.MarkFlagRequired("user")
	addBackendFlags(c, g, &b)
	return c
}

func newAgentCmd(g *globals) *cobra.Command {
	var (
		b            backendFlags
		ws, id, name string
		asJSON       bool
	)
	add := &cobra.Command{
		Use:     "add --workspace ID --id AGENT [--name NAME]",
		Short:   "Add an AI agent that issues can be assigned to",
		Example: `  aacmcp agent add --workspace demo --id triage-bot --name "Triage bot"`,
		Args:    wrapArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			if !validID(id) {
				return usagef("--id %q: use 1-64 letters, digits, '-', '_' or '.'", id)
			}
			if name == "" {
				name = id
			}
			s, done, err := b.open(c.Context(), c, g)
			if err != nil {
				return err
			}
			defer done()
			if _, err := s.GetWorkspace(c.Context(), ws); err != nil {
				return fmt.Errorf("workspace %q: %s", ws, describe(err))
			}
			a, err := s.CreateAgent(c.Context(), store.Agent{WorkspaceID: ws, ID: id, Name: name, CreatedAt: g.env.now().UTC()})
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(c.OutOrStdout(), a)
			}
			fmt.Fprintf(c.OutOrStdout(), "added agent %s to workspace %s\n", a.ID, a.WorkspaceID)
			return nil
		},
	}
	add.Flags().StringVar(&ws, "workspace", "", "workspace id (required)")
	add.Flags().StringVar(&id, "id", "", "agent id (required)")
	add.Flags().StringVar(&name, "name", "", "display name (default: the id)")
	add.Flags().BoolVar(&asJSON, "json", false, "print the agent as JSON")
	_ = add.MarkFlagRequired("workspace")
	_ = add.MarkFlagRequired("id")
	addBackendFlags(add, g, &b)
	return newGroup("agent", "Manage the AI agents of a workspace", add)
}

// validID reports whether s is a usable workspace, user or agent id: short, and made of
// characters that survive DynamoDB keys ("#" separates key parts), URLs and logs.
func validID(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for _, r := range s {
		ok := r == '-' || r == '_' || r == '.' ||
			(r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')
		if !ok {
			return false
		}
	}
	return true
}
