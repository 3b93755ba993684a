package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/aacworkflow/aacmcp/events/queries"
	"github.com/aacworkflow/aacmcp/shared/audit/query"
)

func newAuditCmd(g *globals) *cobra.Command {
	return newGroup("audit", "Query and follow the audit log under --data",
		newAuditQueryCmd(g), newAuditTailCmd(g), newAuditCompactCmd(g), newAuditVerifyCmd(g),
		newAuditReportCmd(g), newAuditExportCmd(g), newAuditAthenaLocalCmd(g))
}

func newAuditQueryCmd(g *globals) *cobra.Command {
	var (
		sqlText, saved string
		list, asJSON   bool
		params         []string
		verified       bool
	)
	c := &cobra.Command{
		Use:   `query (--sql "SELECT ..." | --saved NAME | --list)`,
		Short: "Run SQL over the audit log with embedded DuckDB",
		Long: `Run one SQL statement over the view audit_log: every record under <data>/audit,
with the record's columns plus the partition columns dt and hour. The saved queries
(--saved, --list) are events/queries/*.sql, the same files that become Athena named
queries in production; Trino functions they use (from_iso8601_timestamp, date_format,
cardinality, ...) are provided as DuckDB macros. Extensions are never downloaded.`,
		Example: `  aacmcp audit query --saved denied_by_reason_24h
  aacmcp audit query --sql "SELECT tool, outcome, count(*) AS n FROM audit_log GROUP BY ALL ORDER BY n DESC" --json`,
		Args: wrapArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			set := 0
			for _, b := range []bool{sqlText != "", saved != "", list} {
				if b {
					set++
				}
			}
			if set != 1 {
				return usagef("give exactly one of --sql, --saved or --list")
			}
			w := c.OutOrStdout()
			if list {
				return printSavedQueries(w, asJSON)
			}
			if saved != "" {
				q, err := queries.Get(saved)
				if err != nil {
					return &usageError{err: fmt.Errorf("--saved: %w", err)}
				}
				if sqlText, err = bindSaved(q, params, time.Now()); err != nil {
					return err
				}
			}
			eng, err := query.Open(g.dataDir)
			if err != nil {
				return err
			}
			defer eng.Close()
			if verified {
				if err := restrictToVerified(c, g, eng); err != nil {
					return err
				}
			}
			res, err := eng.Query(c.Context(), sqlText)
			if err != nil {
				return err
			}
			if asJSON {
				return writeRowsJSON(w, res)
			}
			t := newTable(w, res.Columns...)
			for _, row := range res.Rows {
				cells := make([]string, len(row))
				for i, v := range row {
					cells[i] = cellText(v)
				}
				t.row(cells...)
			}
			if err := t.flush(); err != nil {
				return err
			}
			fmt.Fprintf(c.ErrOrStderr(), "(%d row%s)\n", len(res.Rows), plural(len(res.Rows)))
			return nil
		},
	}
	c.Flags().StringVar(&sqlText, "sql", "", "the SQL statement to run")
	c.Flags().StringVar(&saved, "saved", "", "run a saved query by name (see --list)")
	c.Flags().BoolVar(&list, "list", false, "list the saved queries")
	c.Flags().StringArrayVar(&params, "param", nil, "a parameter of a saved report query, as a SQL literal, in order (default: the last 7 days, every workspace)")
	c.Flags().BoolVar(&verified, "verified", false, "read only the records of objects a digest lists and that verify (see audit verify)")
	c.Flags().BoolVar(&asJSON, "json", false, "print the rows as a JSON array of objects keyed by column")
	return c
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func printSavedQueries(w io.Writer, asJSON bool) error {
	all := queries.All()
	if asJSON {
		type saved struct {
			Name        string `json:"name"`
			Description string `json:"description"`
			SQL         string `json:"sql"`
		}
		out := make([]saved, 0, len(all))
		for _, q := range all {
			out = append(out, saved{q.Name, q.Description, q.SQL})
		}
		return writeJSON(w, out)
	}
	t := newTable(w, "NAME", "DESCRIPTION")
	for _, q := range all {
		t.row(q.Name, q.Description)
	}
	return t.flush()
}

// writeRowsJSON prints the rows as objects whose keys keep the columns' order (a Go
// map would sort them).
func writeRowsJSON(w io.Writer, res *query.Result) error {
	var buf bytes.Buffer
	buf.WriteString("[")
	for i, row := range res.Rows {
		if i > 0 {
			buf.WriteString(",")
		}
		buf.WriteString("\n  {")
		for j, col := range res.Columns {
			if j > 0 {
				buf.WriteString(", ")
			}
			k, err := json.Marshal(col)
			if err != nil {
				return err
			}
			v, err := json.Marshal(row[j])
			if err != nil {
				return fmt.Errorf("column %s: %w", col, err)
			}
			buf.Write(k)
			buf.WriteString(": ")
			buf.Write(v)
		}
		buf.WriteString("}")
	}
	if len(res.Rows) > 0 {
		buf.WriteString("\n")
	}
	buf.WriteString("]\n")
	_, err := w.Write(buf.Bytes())
	return err
}

// cellText renders a value for the table: scalars plainly, lists and maps as JSON.
func cellText(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case string:
		return x
	case []any, map[string]any:
		b, err := json.Marshal(x)
		if err != nil {
			return fmt.Sprint(x)
		}
		return string(b)
	default:
		return strings.TrimSpace(fmt.Sprint(x))
	}
}
