package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/audit/file"
	"github.com/aacworkflow/aacmcp/shared/audit/ocsf"
)

func newAuditExportCmd(g *globals) *cobra.Command {
	var (
		pf                    periodFlags
		format, out           string
		cloudProvider, region string
	)
	c := &cobra.Command{
		Use:   "export --format ocsf [--since 7d | --from T [--to T]] [--workspace W] [--out FILE]",
		Short: "Export the audit log as OCSF JSON lines, for Security Lake and SIEMs",
		Long: `Write every audit record of the period under <data>/audit as one OCSF ` + ocsf.Version + ` event a
line: tool calls as API Activity (6003), the authorization server's events as
Authentication (3002) or Authorize Session (3003). A record delivered twice is written
once. Damaged lines, and records this version cannot read, are skipped and counted on
stderr. The mapping is docs/audit-ocsf.md; docs/deploy.md sends the lines to Amazon
Security Lake as a custom source.`,
		Example: `  aacmcp audit export --format ocsf --since 1d --out audit.ocsf.jsonl
  aacmcp audit export --format ocsf --from 2026-12-01 --to 2026-12-02 --workspace acme`,
		Args: wrapArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			if format != "ocsf" {
				return usagef("--format %q: the one format is ocsf", format)
			}
			p, err := pf.period(c, time.Now())
			if err != nil {
				return err
			}
			var w io.Writer = c.OutOrStdout()
			var f *os.File
			if out != "" && out != "-" {
				if f, err = os.Create(out); err != nil {
					return err
				}
				defer f.Close()
				w = f
			}
			bw := bufio.NewWriter(w)
			opts := ocsf.Options{CloudProvider: cloudProvider, Region: region}
			seen := map[string]bool{}
			var written, skipped int
			err = file.Scan(g.dataDir, func(e file.Entry) error {
				if e.Err != nil {
					skipped++
					return nil
				}
				r := e.Record
				ts, err := audit.ParseTime(r.Timestamp)
				if err != nil || ts.Before(p.From) || !ts.Before(p.To) || seen[r.EventID] ||
					(p.Workspace != "" && r.WorkspaceID != p.Workspace) {
					return nil
				}
				seen[r.EventID] = true
				ev, err := ocsf.Map(r, opts)
				if err != nil {
					return err
				}
				line, err := json.Marshal(ev)
				if err != nil {
					return err
				}
				written++
				if _, err := bw.Write(line); err != nil {
					return err
				}
				return bw.WriteByte('\n')
			})
			if err != nil {
				return err
			}
			if err := bw.Flush(); err != nil {
				return err
			}
			if f != nil {
				if err := f.Close(); err != nil {
					return err
				}
			}
			fmt.Fprintf(c.ErrOrStderr(), "%d OCSF event%s written", written, plural(written))
			if skipped > 0 {
				fmt.Fprintf(c.ErrOrStderr(), "; %d line%s skipped (damaged, or of a record version this aacmcp cannot read)", skipped, plural(skipped))
			}
			fmt.Fprintln(c.ErrOrStderr())
			return nil
		},
	}
	pf.add(c, "7d")
	c.Flags().StringVar(&format, "format", "", "the output format: ocsf")
	c.Flags().StringVar(&out, "out", "", "the file to write (default: stdout)")
	c.Flags().StringVar(&cloudProvider, "cloud-provider", "AWS", "cloud.provider of the API Activity events")
	c.Flags().StringVar(&region, "region", "", "cloud.region of the API Activity events (the stack's region)")
	return c
}
