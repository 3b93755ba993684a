package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/aacworkflow/aacmcp/shared/confirm"
)

// newWorkspaceListCmd lists every workspace with its destructive-confirmation
// policy, so an administrator can see which workspaces ask a person.
func newWorkspaceListCmd(g *globals) *cobra.Command {
	return newAdminCmd(g, &cobra.Command{
		Use:   "list",
		Short: "List the workspaces with their issue key prefix and destructive-confirmation policy",
		Args:  wrapArgs(cobra.NoArgs),
	}, adminAction{
		jsonHelp: "print the workspaces as JSON (with destructive_confirmation)",
		run: func(c *cobra.Command, s adminStore, _ []string) (any, string, error) {
			all, err := s.ListWorkspaces(c.Context())
			if err != nil {
				return nil, "", err
			}
			var text strings.Builder
			t := newTable(&text, "ID", "KEY", "NAME", "DESTRUCTIVE CONFIRMATION", "CREATED")
			for _, w := range all {
				t.row(w.ID, w.Key, w.Name, w.DestructiveConfirmation, fmtTime(w.CreatedAt))
			}
			// Flushing into a strings.Builder cannot fail.
			_ = t.flush()
			return all, text.String(), nil
		},
	})
}

// newWorkspaceSetCmd changes a workspace's settings; today the one setting is
// destructive_confirmation.
func newWorkspaceSetCmd(g *globals) *cobra.Command {
	var ws, policy string
	c := newAdminCmd(g, &cobra.Command{
		Use:   "set --workspace ID --destructive-confirmation " + confirm.Names("|"),
		Short: "Change a workspace's settings: who confirms a destructive tool call",
		Long: `--destructive-confirmation decides who confirms a destructive tool call:
  flag     the client's confirm: true (the MCP spec's behaviour, the default)
  elicit   the person, through a form elicitation, when the client can show one
           (MCP 2026-07-28); confirm: true from other clients
  require  the person, always: a client that cannot ask one is refused
  approve  the person, on this server's own approval page where they sign in:
           every client gets the page's link (a URL elicitation, or a refusal
           whose text carries it), and the same call runs once approved`,
		Example: `  aacmcp workspace set --workspace acme --destructive-confirmation require`,
		Args:    wrapArgs(cobra.NoArgs),
	}, adminAction{
		jsonHelp: "print the workspace's settings as JSON",
		check: func([]string) error {
			if _, err := confirm.ParsePolicy(policy); err != nil || policy == "" {
				return usagef("--destructive-confirmation %q: want one of %s", policy, confirm.Names(", "))
			}
			return nil
		},
		run: func(c *cobra.Command, s adminStore, _ []string) (any, string, error) {
			if err := workspaceExists(c.Context(), s, ws); err != nil {
				return nil, "", err
			}
			if err := s.SetDestructiveConfirmation(c.Context(), ws, policy); err != nil {
				return nil, "", err
			}
			out := struct {
				Workspace               string `json:"workspace"`
				DestructiveConfirmation string `json:"destructive_confirmation"`
			}{ws, policy}
			return out, fmt.Sprintf("workspace %s: destructive confirmation %s\n", ws, policy), nil
		},
	})
	c.Flags().StringVar(&ws, "workspace", "", "workspace id (required)")
	c.Flags().StringVar(&policy, "destructive-confirmation", "", confirm.Names(", ")+" (required)")
	requireFlags(c, "workspace", "destructive-confirmation")
	return c
}
