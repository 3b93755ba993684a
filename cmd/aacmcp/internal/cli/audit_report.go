package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/athena"
	"github.com/aws/aws-sdk-go-v2/service/athena/types"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/spf13/cobra"

	"github.com/aacworkflow/aacmcp/events/queries"
	"github.com/aacworkflow/aacmcp/shared/audit/athenalocal"
	"github.com/aacworkflow/aacmcp/shared/audit/query"
	"github.com/aacworkflow/aacmcp/shared/audit/report"
)

// The stack outputs that name the Athena workgroup and the Glue database
// (infra/outputs.go: outAthenaWorkGroup, outGlueDatabase; infra is a main package).
const (
	stackOutWorkGroup = "AthenaWorkGroup"
	stackOutDatabase  = "GlueDatabase"
)

// periodFlags choose the records a report or an export covers.
type periodFlags struct {
	since, from, to, workspace string
}

func (p *periodFlags) add(c *cobra.Command, defSince string) {
	f := c.Flags()
	f.StringVar(&p.since, "since", defSince, "cover the records of this long before now: 7d, 36h, 90m")
	f.StringVar(&p.from, "from", "", "cover the records from this instant on (RFC 3339, or a UTC date YYYY-MM-DD)")
	f.StringVar(&p.to, "to", "", "cover the records before this instant (RFC 3339 or YYYY-MM-DD; default: now)")
	f.StringVar(&p.workspace, "workspace", "", "only this workspace's records (default: every workspace)")
}

// period resolves the flags against now. --from replaces --since.
func (p *periodFlags) period(c *cobra.Command, now time.Time) (report.Period, error) {
	out := report.Period{To: now.UTC(), Workspace: p.workspace}
	if p.to != "" {
		t, err := parseInstant(p.to)
		if err != nil {
			return out, usagef("--to: %v", err)
		}
		out.To = t
	}
	switch {
	case p.from != "" && c.Flags().Changed("since"):
		return out, usagef("give --since or --from, not both")
	case p.from != "":
		t, err := parseInstant(p.from)
		if err != nil {
			return out, usagef("--from: %v", err)
		}
		out.From = t
	case p.since != "":
		d, err := parseSince(p.since)
		if err != nil {
			return out, usagef("--since: %v", err)
		}
		out.From = out.To.Add(-d)
	default:
		return out, usagef("give --since or --from")
	}
	if err := out.Validate(); err != nil {
		return out, &usageError{err: err}
	}
	return out, nil
}

func parseInstant(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC(), nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%q is neither RFC 3339 (2026-12-01T00:00:00Z) nor a date (2026-12-01)", s)
}

// parseSince reads a Go duration, or a whole number of days ("7d").
func parseSince(s string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		days, err := strconv.Atoi(n)
		if err != nil || days <= 0 || days > 3660 {
			return 0, fmt.Errorf("%q: want a number of days from 1 to 3660, such as 7d", s)
		}
		return time.Duration(days) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%q: want a positive duration such as 7d, 36h or 90m", s)
	}
	return d, nil
}

type athenaFlags struct {
	on                                 bool
	stack, workGroup, database, output string
	region, endpoint                   string
	pageSize                           int32
	poll                               time.Duration
}

func newAuditReportCmd(g *globals) *cobra.Command {
	var (
		pf     periodFlags
		af     athenaFlags
		out    string
		asJSON bool
	)
	c := &cobra.Command{
		Use:   "report [--since 7d | --from T [--to T]] [--workspace W] [--out FILE] [--athena ...]",
		Short: "Write the audit report: one self-contained HTML page of charts and tables",
		Long: `Write the audit report of a period: tool calls per hour by outcome, denials by reason
and by token and client, destructive calls by user, client and confirmation, authorization
events by action, the top tools by calls and by p95 duration, and the slowest calls. Each
section is a chart and the table of the saved query it comes from (events/queries/report_*.sql,
also Athena named queries in the stack), so this report, ` + "`audit query --saved`" + ` and Athena
give the same numbers.

The page is one file: no script, and a Content-Security-Policy that lets it load nothing
(its one font is inside it). Without --athena the queries run on DuckDB over <data>/audit;
with --athena they run in the stack's Athena workgroup: --stack NAME reads the workgroup and
database from the stack's outputs, or give --workgroup and --database. Progress goes to
stderr; stdout gets a table of the sections (--json: every section's rows).`,
		Example: `  aacmcp audit report --since 7d --out report.html
  aacmcp audit report --from 2026-12-01 --to 2026-12-08 --workspace acme
  aacmcp audit report --athena --stack aacmcp --region eu-west-1 --since 30d`,
		Args: wrapArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			ctx := c.Context()
			p, err := pf.period(c, time.Now())
			if err != nil {
				return err
			}
			var runner report.Runner
			source := "local audit files under " + g.dataDir
			if af.on {
				a, err := af.runner(ctx, c.ErrOrStderr())
				if err != nil {
					return err
				}
				runner, source = a, fmt.Sprintf("Athena workgroup %s, database %s", a.WorkGroup, a.Database)
			} else {
				if af.set(c) {
					return usagef("--stack, --workgroup, --database, --output-location, --region and --endpoint-url go with --athena")
				}
				eng, err := query.Open(g.dataDir)
				if err != nil {
					return err
				}
				defer eng.Close()
				runner = report.Local{Engine: eng}
			}
			d, err := report.Collect(ctx, runner, p, source, time.Now(), progressLine(c.ErrOrStderr()))
			if err != nil {
				return err
			}
			var page bytes.Buffer
			if err := report.Render(&page, d); err != nil {
				return err
			}
			if err := writeFileAtomic(out, page.Bytes()); err != nil {
				return err
			}
			fmt.Fprintf(c.ErrOrStderr(), "wrote %s (%d KB)\n", out, page.Len()/1024)
			w := c.OutOrStdout()
			if asJSON {
				return writeJSON(w, d)
			}
			t := newTable(w, "SECTION", "SAVED QUERY", "ROWS")
			for _, s := range report.Sections {
				t.row(s.Title, s.Query, strconv.Itoa(len(d.Results[s.ID].Rows)))
			}
			return t.flush()
		},
	}
	pf.add(c, "7d")
	f := c.Flags()
	f.StringVar(&out, "out", "audit-report.html", "the HTML file to write")
	f.BoolVar(&asJSON, "json", false, "print every section's rows as JSON")
	f.BoolVar(&af.on, "athena", false, "run the queries in Athena instead of on the local audit files")
	f.StringVar(&af.stack, "stack", "", "read the workgroup and database from this CloudFormation stack's outputs (--athena)")
	f.StringVar(&af.workGroup, "workgroup", "", "Athena workgroup (--athena; the stack's AthenaWorkGroup output)")
	f.StringVar(&af.database, "database", "", "Glue database of the audit_log table (--athena; the stack's GlueDatabase output)")
	f.StringVar(&af.output, "output-location", "", "s3:// location for the results (--athena; default: the workgroup's, which the stack enforces)")
	f.StringVar(&af.region, "region", "", "AWS region (--athena; default: AWS_REGION)")
	f.StringVar(&af.endpoint, "endpoint-url", "", "Athena endpoint, e.g. the local stand-in `aacmcp audit athena-local` (--athena; CloudFormation: AWS_ENDPOINT_URL_CLOUDFORMATION)")
	f.Int32Var(&af.pageSize, "page-size", 1000, "rows per GetQueryResults call (--athena; 1-1000)")
	f.DurationVar(&af.poll, "poll-interval", 500*time.Millisecond, "wait between GetQueryExecution calls (--athena)")
	return c
}

// set reports whether any Athena-only flag was given.
func (af *athenaFlags) set(c *cobra.Command) bool {
	for _, n := range []string{"stack", "workgroup", "database", "output-location", "region", "endpoint-url", "page-size", "poll-interval"} {
		if c.Flags().Changed(n) {
			return true
		}
	}
	return false
}

func (af *athenaFlags) runner(ctx context.Context, progress io.Writer) (report.Athena, error) {
	switch {
	case af.stack != "" && (af.workGroup != "" || af.database != ""):
		return report.Athena{}, usagef("give --stack, or --workgroup and --database, not both")
	case af.stack == "" && (af.workGroup == "" || af.database == ""):
		return report.Athena{}, usagef("--athena needs --stack NAME, or --workgroup and --database")
	case af.pageSize < 1 || af.pageSize > 1000:
		return report.Athena{}, usagef("--page-size %d: Athena returns 1 to 1000 rows a call", af.pageSize)
	case af.output != "" && !strings.HasPrefix(af.output, "s3://"):
		return report.Athena{}, usagef("--output-location %q: want s3://bucket/prefix/", af.output)
	}
	if af.endpoint != "" {
		if e, err := url.Parse(af.endpoint); err != nil || (e.Scheme != "http" && e.Scheme != "https") || e.Host == "" {
			return report.Athena{}, usagef("--endpoint-url %q: want an absolute http(s) URL", af.endpoint)
		}
	}
	var opts []func(*config.LoadOptions) error
	if af.region != "" {
		opts = append(opts, config.WithRegion(af.region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return report.Athena{}, fmt.Errorf("load the AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return report.Athena{}, usagef("no AWS region: pass --region or set AWS_REGION")
	}
	a := report.Athena{
		Client: athena.NewFromConfig(cfg, func(o *athena.Options) {
			if af.endpoint != "" {
				o.BaseEndpoint = aws.String(af.endpoint)
			}
		}),
		WorkGroup: af.workGroup, Database: af.database, OutputLocation: af.output,
		PageSize: af.pageSize, Poll: af.poll, State: stateLine(progress),
	}
	if af.stack != "" {
		outs, err := stackOutputs(ctx, cloudformation.NewFromConfig(cfg), af.stack)
		if err != nil {
			return report.Athena{}, err
		}
		a.WorkGroup, a.Database = outs[stackOutWorkGroup], outs[stackOutDatabase]
		if a.WorkGroup == "" || a.Database == "" {
			return report.Athena{}, fmt.Errorf("stack %s has no %s and %s outputs: is it an aacmcp stack?", af.stack, stackOutWorkGroup, stackOutDatabase)
		}
		fmt.Fprintf(progress, "stack %s: workgroup %s, database %s\n", af.stack, a.WorkGroup, a.Database)
	}
	return a, nil
}

// stackOutputs reads a stack's outputs by key.
func stackOutputs(ctx context.Context, cf *cloudformation.Client, name string) (map[string]string, error) {
	out, err := cf.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(name)})
	if err != nil {
		return nil, fmt.Errorf("read the outputs of stack %s: %w", name, err)
	}
	if len(out.Stacks) != 1 {
		return nil, fmt.Errorf("stack %s: DescribeStacks returned %d stacks", name, len(out.Stacks))
	}
	m := map[string]string{}
	for _, o := range out.Stacks[0].Outputs {
		m[aws.ToString(o.OutputKey)] = aws.ToString(o.OutputValue)
	}
	return m, nil
}

// progressLine prints a line per query as it starts and as it ends.
func progressLine(w io.Writer) report.Progress {
	return func(i, n int, q queries.Query, done bool, rows int, took time.Duration, err error) {
		switch {
		case !done:
			fmt.Fprintf(w, "[%d/%d] %s ...\n", i, n, q.Name)
		case err != nil:
			fmt.Fprintf(w, "[%d/%d] %s failed after %s\n", i, n, q.Name, took.Round(time.Millisecond))
		default:
			fmt.Fprintf(w, "[%d/%d] %s: %d row%s in %s\n", i, n, q.Name, rows, plural(rows), took.Round(time.Millisecond))
		}
	}
}

// stateLine prints an Athena query's state each time it changes.
func stateLine(w io.Writer) func(string, string, types.QueryExecutionState, int64) {
	last := map[string]types.QueryExecutionState{}
	return func(name, id string, st types.QueryExecutionState, scanned int64) {
		if last[id] == st {
			return
		}
		last[id] = st
		fmt.Fprintf(w, "      %s %s: %s, %d bytes scanned\n", name, id, st, scanned)
	}
}

// writeFileAtomic writes path through a temporary file in its folder, so that a
// failed run leaves no half page behind.
func writeFileAtomic(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// bindSaved makes a saved query runnable by `audit query --saved`: a report query
// takes the period as parameters, the --param values as given (Athena's
// ExecutionParameters: SQL literals, in order) or else the last 7 days of every
// workspace, the report's default.
func bindSaved(q queries.Query, params []string, now time.Time) (string, error) {
	if len(params) == 0 {
		return report.Period{From: now.Add(-7 * 24 * time.Hour), To: now}.Bind(q.SQL)
	}
	sql, err := query.Bind(q.SQL, params)
	if err != nil {
		return "", &usageError{err: fmt.Errorf("--param: %w", err)}
	}
	return sql, nil
}

func newAuditAthenaLocalCmd(g *globals) *cobra.Command {
	var addr, workGroup, database string
	c := &cobra.Command{
		Use:   "athena-local [--addr 127.0.0.1:PORT] [--workgroup W] [--database D]",
		Short: "Serve the Athena API over the local audit files (a stand-in for trying --athena)",
		Long: `Serve the Athena API (StartQueryExecution, GetQueryExecution, GetQueryResults,
StopQueryExecution; JSON 1.1 over HTTP) on --addr, running the SQL on DuckDB over
<data>/audit as the table audit_log of --database in the workgroup --workgroup. Point
` + "`audit report --athena --endpoint-url`" + ` (or any AWS SDK) at it. It does not model scanned
bytes or their cost, workgroup limits, queueing, result reuse or the results' CSV
in S3 (docs/cli.md).`,
		Example: `  aacmcp audit athena-local --addr 127.0.0.1:4599 &
  AWS_ACCESS_KEY_ID=x AWS_SECRET_ACCESS_KEY=x aacmcp audit report --athena --region eu-west-1 \
    --endpoint-url http://127.0.0.1:4599 --workgroup aacmcp-audit --database aacmcp_audit --since 7d`,
		Args: wrapArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			eng, err := query.Open(g.dataDir)
			if err != nil {
				return err
			}
			defer eng.Close()
			s := athenalocal.New(eng, athenalocal.Config{WorkGroup: workGroup, Database: database})
			defer s.Close()
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return err
			}
			srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
			fmt.Fprintf(c.ErrOrStderr(), "Athena stand-in on http://%s (workgroup %s, database %s, data %s)\n", ln.Addr(), workGroup, database, g.dataDir)
			go func() {
				<-c.Context().Done()
				shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_ = srv.Shutdown(shut)
			}()
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		},
	}
	c.Flags().StringVar(&addr, "addr", "127.0.0.1:4599", "address to listen on")
	c.Flags().StringVar(&workGroup, "workgroup", "aacmcp-audit", "the workgroup it serves")
	c.Flags().StringVar(&database, "database", "aacmcp_audit", "the database whose audit_log table is <data>/audit")
	return c
}
