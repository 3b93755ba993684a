package query_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/events/queries"
	"github.com/aacworkflow/aacmcp/shared/audit"
	at "github.com/aacworkflow/aacmcp/shared/audit/audittest"
	"github.com/aacworkflow/aacmcp/shared/audit/query"
	"github.com/aacworkflow/aacmcp/shared/audit/report"
	"github.com/aacworkflow/aacmcp/shared/audit/report/reporttest"
)

// reportQueriesTested are the saved queries TestReportQueries covers (the report's,
// which take the period as parameters).
var reportQueriesTested = []string{
	"report_authorization_events", "report_calls_per_hour", "report_denials", "report_destructive",
	"report_slowest_calls", "report_top_tools",
}

// TestReportQueries runs each report query on the fixture workload, with every
// personal-token tool call as a 1.0 writer left it (NULL client_id, event_type and
// confirmation in the view, as in Athena), and checks the hand-counted rows.
func TestReportQueries(t *testing.T) {
	legacy, current := splitLegacy(t, reporttest.Records())
	dir := t.TempDir()
	writeLegacy(t, dir, legacy)
	writeRecords(t, dir, current)
	reporttest.WriteFuture(t, dir)
	e := openEngine(t, dir)
	p := report.Period{From: reporttest.From, To: reporttest.To}.Params()
	ids := map[string]string{}
	for _, s := range report.Sections {
		ids[s.Query] = s.ID
	}
	for _, name := range reportQueriesTested {
		t.Run(name, func(t *testing.T) {
			q, err := queries.Get(name)
			if err != nil {
				t.Fatal(err)
			}
			sql, err := query.Bind(q.SQL, p)
			if err != nil {
				t.Fatal(err)
			}
			res, err := e.Query(context.Background(), sql)
			if err != nil {
				t.Fatal(err)
			}
			want, ok := reporttest.Expected[ids[name]]
			if !ok {
				// The slowest calls: the first is the fixture's slowest, 20 in all.
				if len(res.Rows) != reporttest.SlowestRows || fmt.Sprintf("%v %v", res.Rows[0][1], res.Rows[0][4]) != reporttest.SlowestTool+" "+reporttest.SlowestMS {
					t.Errorf("rows %v", res.Rows)
				}
				return
			}
			var got []reporttest.Row
			for _, r := range res.Rows {
				row := reporttest.Row{}
				for _, v := range r {
					row = append(row, fmt.Sprint(v))
				}
				got = append(got, row)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("columns %v\n got %v\nwant %v", res.Columns, got, want)
			}
		})
	}
}

// TestReportP95 checks the nearest-rank percentile where it is not the maximum.
func TestReportP95(t *testing.T) {
	dir := t.TempDir()
	var recs []audit.Record
	for i := range 21 {
		tool := "get_issue"
		if i == 20 {
			tool = "list_issues"
		}
		recs = append(recs, at.Record(reporttest.From.Add(time.Duration(i)*time.Minute), at.Tool(tool), func(r *audit.Record) { r.DurationMS = int64(i + 1) }))
	}
	// get_issue: 1..20 ms, p95 at rank 19; list_issues: one call of 21 ms.
	writeRecords(t, dir, recs)
	q, err := queries.Get("report_top_tools")
	if err != nil {
		t.Fatal(err)
	}
	sql, err := query.Bind(q.SQL, report.Period{From: reporttest.From, To: reporttest.To}.Params())
	if err != nil {
		t.Fatal(err)
	}
	res, err := openEngine(t, dir).Query(context.Background(), sql)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(res.Rows); got != "[[get_issue 20 0 0 19 20] [list_issues 1 0 0 21 21]]" {
		t.Errorf("rows %s", got)
	}
}

// runnableSQL is a saved query ready to run: the report queries get the last 30
// days of every workspace as their parameters.
func runnableSQL(t *testing.T, q queries.Query) string {
	t.Helper()
	now := time.Now().UTC()
	sql, err := query.Bind(q.SQL, report.Period{From: now.AddDate(0, 0, -30), To: now}.Params())
	if err != nil && strings.Contains(q.SQL, "?") {
		t.Fatalf("%s: %v", q.Name, err)
	}
	if err != nil {
		return q.SQL
	}
	return sql
}

// splitLegacy picks every other personal-token tool call to be written as a 1.0
// writer left it (no client_id, event_type or action: NULL in the view, as in
// Athena). A record with a confirmation kind is 1.3 only: no 1.0 writer could have
// left it.
func splitLegacy(t *testing.T, recs []audit.Record) (legacy, current []audit.Record) {
	t.Helper()
	for i, r := range recs {
		if i%2 == 0 && r.EventType == audit.EventToolCall && r.ClientID == "" && r.Confirmation == "" {
			legacy = append(legacy, r)
		} else {
			current = append(current, r)
		}
	}
	if len(legacy) == 0 {
		t.Fatal("no 1.0 records in the fixture")
	}
	return legacy, current
}
