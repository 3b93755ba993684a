// Package cli is the aacmcp command line: the local server (serve), the local API
// Gateway (gateway), table setup (init) and the admin commands for workspaces, members,
// agents, tokens, the tool catalog and the audit log.
//
// Run is the whole program minus process concerns, so tests execute every command in
// process with their own arguments, environment and output buffers.
package cli

import (
	"context"
	"errors"
	"fmt"
	"github.com/aacworkflow/aacmcp/shared/store"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/aacworkflow/aacmcp/shared/apperr"
)

// Exit codes.
const (
	ExitOK      = 0
	ExitFailure = 1 // the command ran and failed
	ExitUsage   = 2 // bad command line: unknown command or flag, bad flag value
)

// Env is what a command may take from the process: output streams, environment and
// clock. Tests fill it with buffers and a map.
type Env struct {
	Stdout io.Writer
	Stderr io.Writer
	// Getenv reads the environment; nil means os.Getenv.
	Getenv func(string) string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Ready, when set, is called by serve and gateway once they listen, with the base
	// URL. Tests use it instead of parsing the banner.
	Ready func(baseURL string)
}

func (e Env) getenv(k string) string {
	if e.Getenv == nil {
		return os.Getenv(k)
	}
	return e.Getenv(k)
}

func (e Env) now() time.Time {
	if e.Now == nil {
		return time.Now()
	}
	return e.Now()
}

// envOr returns the environment value of key, or def when it is unset or empty.
func (e Env) envOr(key, def string) string {
	if v := e.getenv(key); v != "" {
		return v
	}
	return def
}

// usageError is a mistake on the command line: exit code 2 and a hint to --help.
type usageError struct{ err error }

func (u *usageError) Error() string { return u.err.Error() }
func (u *usageError) Unwrap() error { return u.err }

func usagef(format string, args ...any) error {
	return &usageError{err: fmt.Errorf(format, args...)}
}

// runError marks an error returned by a command's own code, as opposed to one cobra
// produced while parsing the command line (which is always a usage error).
type runError struct{ err error }

func (r *runError) Error() string { return r.err.Error() }
func (r *runError) Unwrap() error { return r.err }

// Run executes the aacmcp command line args (without the program name) and returns
// the process exit code. It never panics on bad input: every failure is a message on
// env.Stderr.
func Run(ctx context.Context, args []string, env Env) int {
	if env.Stdout == nil {
		env.Stdout = io.Discard
	}
	if env.Stderr == nil {
		env.Stderr = io.Discard
	}
	root := newRoot(env)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	if cmd == nil {
		cmd = root
	}
	var re *runError
	var ue *usageError
	switch {
	case errors.As(err, &ue):
		fmt.Fprintf(env.Stderr, "error: %s\nRun '%s --help' for usage.\n", ue.err, cmd.CommandPath())
		return ExitUsage
	case errors.As(err, &re):
		fmt.Fprintf(env.Stderr, "error: %s\n", describe(re.err))
		if apperr.Is(re.err, apperr.InvalidArguments) || errors.Is(re.err, store.ErrInvalid) {
			return ExitUsage
		}
		return ExitFailure
	default:
		// Anything cobra itself returned: unknown command, unknown flag, bad flag value,
		// missing required flag, wrong number of arguments.
		fmt.Fprintf(env.Stderr, "error: %s\nRun '%s --help' for usage.\n", err, cmd.CommandPath())
		return ExitUsage
	}
}

// describe renders an error for the operator. The CLI runs with the operator's own
// rights, so unlike a client response it may show an internal cause.
func describe(err error) string {
	var ae *apperr.Error
	if errors.As(err, &ae) {
		if ae.Code == apperr.InternalError && ae.Unwrap() != nil {
			return ae.Unwrap().Error()
		}
		return ae.Message
	}
	return err.Error()
}

// globals holds the flags every command has.
type globals struct {
	env     Env
	dataDir string
}

func newRoot(env Env) *cobra.Command {
	g := &globals{env: env}
	root := &cobra.Command{
		Use:   "aacmcp",
		Short: "The AACWorkflow MCP server: local server, local API Gateway and admin commands",
		Long: `aacmcp runs the AACWorkflow MCP server on this machine (serve), fronts the Lambda
functions like API Gateway does (gateway), creates tables (init), and administers
workspaces, members, agents, tokens and the audit log, locally (SQLite under --data)
or against DynamoDB (--backend dynamodb).`,
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          wrapArgs(cobra.NoArgs),
		RunE:          func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	root.CompletionOptions.DisableDefaultCmd = true
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err: err} })
	root.PersistentFlags().StringVar(&g.dataDir, "data", env.envOr("AACMCP_DATA", "./.aacmcp"),
		"data folder: SQLite database, audit files, autopilot outbox (env AACMCP_DATA)")

	root.AddCommand(
		newServeCmd(g),
		newGatewayCmd(g),
		newInitCmd(g),
		newWorkspaceCmd(g),
		newMemberCmd(g),
		newAgentCmd(g),
		newTokenCmd(g),
		newOAuthCmd(g),
		newToolsCmd(g),
		newAuditCmd(g),
	)
	markRun(root)
	return root
}

// markRun wraps every RunE below c so that the errors a command returns itself are
// told apart from cobra's parse errors (see Run).
func markRun(c *cobra.Command) {
	if c.RunE != nil {
		inner := c.RunE
		c.RunE = func(cmd *cobra.Command, args []string) error {
			err := inner(cmd, args)
			if err == nil {
				return nil
			}
			var ue *usageError
			if errors.As(err, &ue) {
				return err
			}
			return &runError{err: err}
		}
	}
	for _, sub := range c.Commands() {
		markRun(sub)
	}
}

// wrapArgs turns a positional-argument validator's error into a usage error.
func wrapArgs(v cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := v(cmd, args); err != nil {
			return &usageError{err: err}
		}
		return nil
	}
}

// newGroup is a command that only holds subcommands: without one it is a usage error.
func newGroup(use, short string, subs ...*cobra.Command) *cobra.Command {
	c := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  wrapArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			names := make([]string, 0, len(cmd.Commands()))
			for _, s := range cmd.Commands() {
				names = append(names, s.Name())
			}
			return usagef("%s needs a subcommand: %s", cmd.CommandPath(), strings.Join(names, ", "))
		},
	}
	c.AddCommand(subs...)
	return c
}

// newLogger is the text logger of the local commands, at the level of LOG_LEVEL or
// --log-level.
func newLogger(w io.Writer, level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, usagef("--log-level %q: want debug, info, warn or error", level)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l})), nil
}
