package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// adminAction is the part of an admin command that is its own. The rest is the same
// for all of them and lives in newAdminCmd: check the command line, open the store,
// make the store calls, print the result as JSON (--json) or as text for people, and
// release the store.
type adminAction struct {
	// jsonHelp is the help of the --json flag; empty when the command has no JSON
	// form and so no --json flag.
	jsonHelp string
	// check validates (and normalises) flags and arguments before the store is
	// opened, so that a mistake on the command line costs no lock and no connection.
	// Optional.
	check func(args []string) error
	// run makes the store calls and returns what --json prints and the text printed
	// without it.
	run func(c *cobra.Command, s adminStore, args []string) (value any, text string, err error)
}

// newAdminCmd gives c (which has its help and Args) a RunE that performs a, and the
// --json and backend flags; the caller adds the command's own flags.
func newAdminCmd(g *globals, c *cobra.Command, a adminAction) *cobra.Command {
	var (
		b      backendFlags
		asJSON bool
	)
	c.RunE = func(c *cobra.Command, args []string) error {
		if a.check != nil {
			if err := a.check(args); err != nil {
				return err
			}
		}
		s, done, err := b.open(c.Context(), c, g)
		if err != nil {
			return err
		}
		defer done()
		v, text, err := a.run(c, s, args)
		if err != nil {
			return err
		}
		if asJSON {
			return writeJSON(c.OutOrStdout(), v)
		}
		_, err = io.WriteString(c.OutOrStdout(), text)
		return err
	}
	if a.jsonHelp != "" {
		c.Flags().BoolVar(&asJSON, "json", false, a.jsonHelp)
	}
	addBackendFlags(c, g, &b)
	return c
}

// requireFlags marks flags that every run needs, so that cobra names the missing ones
// before anything runs.
func requireFlags(c *cobra.Command, names ...string) {
	for _, n := range names {
		// It fails only for a flag c lacks, which no command line can cause.
		_ = c.MarkFlagRequired(n)
	}
}

// checkID is the usage error for a flag whose value is not a valid id (see validID).
func checkID(flag, v string) error {
	if !validID(v) {
		return usagef("%s %q: use 1-64 letters, digits, '-', '_' or '.'", flag, v)
	}
	return nil
}

// workspaceExists fails unless workspace ws exists: members, agents and tokens of a
// workspace nobody created would be unreachable.
func workspaceExists(ctx context.Context, s adminStore, ws string) error {
	if _, err := s.GetWorkspace(ctx, ws); err != nil {
		return fmt.Errorf("workspace %q: %s", ws, describe(err))
	}
	return nil
}
