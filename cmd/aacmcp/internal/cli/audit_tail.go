package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/audit/file"
)

func newAuditTailCmd(g *globals) *cobra.Command {
	var (
		fromStart bool
		asJSON    bool
		interval  time.Duration
	)
	c := &cobra.Command{
		Use:   "tail [--from-start] [--json]",
		Short: "Follow the audit log: one line per tool call as it is recorded",
		Long: `Follow the audit files under --data and print each new record as one line:
time, outcome, tool, reason, workspace/user, token, transport, duration. --json prints the
records themselves, one JSON object per line. Stop with Ctrl-C.`,
		Args: wrapArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			if interval <= 0 {
				return usagef("--poll-interval must be positive")
			}
			w := c.OutOrStdout()
			opts := []file.FollowOption{file.WithPollInterval(interval)}
			if fromStart {
				opts = append(opts, file.FromStart())
			}
			return file.Follow(c.Context(), g.dataDir, func(e file.Entry) error {
				if e.Err != nil {
					fmt.Fprintf(c.ErrOrStderr(), "warning: skipped a damaged audit line: %v\n", e.Err)
					return nil
				}
				if asJSON {
					line, err := audit.MarshalLine(e.Record)
					if err != nil {
						return err
					}
					_, err = w.Write(line)
					return err
				}
				return printRecord(w, e.Record)
			}, opts...)
		},
	}
	c.Flags().BoolVar(&fromStart, "from-start", false, "print the records already recorded first")
	c.Flags().BoolVar(&asJSON, "json", false, "print each record as one JSON line")
	c.Flags().DurationVar(&interval, "poll-interval", 500*time.Millisecond, "how often to look for new records")
	return c
}

// printRecord is the human form of one record: fixed-width columns that stay aligned
// in a scrolling terminal without buffering lines.
func printRecord(w io.Writer, r audit.Record) error {
	ts := r.Timestamp
	if t, err := audit.ParseTime(r.Timestamp); err == nil {
		ts = t.Format("2006-01-02 15:04:05.000")
	}
	who := orDash(r.WorkspaceID) + "/" + orDash(r.UserID)
	// An authorization event names no tool: its action takes the tool's column.
	what := r.Tool
	if r.EventType == audit.EventAuthorization {
		what = r.Action
	}
	extra := ""
	if r.ClientID != "" {
		extra += " client=" + r.ClientID
	}
	if r.ResourceID != "" {
		extra += " resource=" + r.ResourceID
	}
	if r.IdempotentReplay {
		extra += " replay"
	}
	if r.Destructive && !r.ConfirmPresent {
		extra += " no-confirm"
	}
	_, err := fmt.Fprintf(w, "%s  %-7s  %-22s  %-24s  %-20s  %-30s  %-4s %5dms%s\n",
		ts, r.Outcome, orDash(what), orDash(r.Reason), who, orDash(r.TokenID), r.Transport, r.DurationMS, extra)
	return err
}
