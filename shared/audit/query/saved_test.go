package query_test

import (
	"context"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/events/queries"
	"github.com/aacworkflow/aacmcp/shared/audit"
	at "github.com/aacworkflow/aacmcp/shared/audit/audittest"
)

// dataset builds records relative to now. day(n) is noon (UTC) n days before today,
// so per-day queries see whole days with hours of margin on each side.
type dataset struct {
	now  time.Time
	recs []audit.Record
}

func newDataset() *dataset { return &dataset{now: time.Now().UTC()} }

func (d *dataset) day(n int) time.Time {
	return d.now.Truncate(24*time.Hour).AddDate(0, 0, -n).Add(12 * time.Hour)
}

// add appends count records at ts (one millisecond apart) and returns the first.
func (d *dataset) add(count int, ts time.Time, mods ...func(*audit.Record)) audit.Record {
	var first audit.Record
	for i := range count {
		r := at.Record(ts.Add(time.Duration(i)*time.Millisecond), mods...)
		if i == 0 {
			first = r
		}
		d.recs = append(d.recs, r)
	}
	return first
}

func date(t time.Time) string { return t.Format(time.DateOnly) }

func TestSavedQueries(t *testing.T) {
	type want struct {
		columns []string
		rows    [][]any
	}
	tests := []struct {
		name  string
		build func(d *dataset) want
	}{
		{"denied_by_reason_24h", func(d *dataset) want {
			w1 := at.Who("w1", "tA")
			d.add(2, d.now.Add(-30*time.Minute), at.Tool("delete_issue"), at.Denied("destructive_flag_missing"), w1)
			dup := d.add(1, d.now.Add(-23*time.Hour), at.Tool("delete_issue"), at.Denied("destructive_flag_missing"), at.Who("w1", "tB"))
			d.recs = append(d.recs, dup) // delivered twice: counted once
			d.add(2, d.now.Add(-2*time.Hour), at.Tool("list_issues"), at.Denied("insufficient_scope"), at.Who("w2", "tC"))
			d.add(1, d.now.Add(-time.Hour), at.Denied("invalid_token"), at.Who("", ""))
			d.add(1, d.now.Add(-3*time.Hour), at.Tool("update_issue"), at.Denied("permission_denied"), w1)
			// Outside the window, or not denied.
			d.add(3, d.now.Add(-25*time.Hour), at.Tool("delete_issue"), at.Denied("destructive_flag_missing"), w1)
			d.add(1, d.now.Add(-48*time.Hour), at.Denied("rate_limited"), w1)
			d.add(5, d.now.Add(-time.Hour), w1)
			d.add(2, d.now.Add(-time.Hour), at.Failed("not_found"), w1)
			return want{
				[]string{"reason", "denied_calls", "tokens", "workspaces"},
				[][]any{
					{"destructive_flag_missing", int64(3), int64(2), int64(1)},
					{"insufficient_scope", int64(2), int64(1), int64(1)},
					{"invalid_token", int64(1), int64(0), int64(0)},
					{"permission_denied", int64(1), int64(1), int64(1)},
				},
			}
		}},
		{"destructive_per_token_per_day", func(d *dataset) want {
			d.add(2, d.day(1), at.Tool("delete_issue"), at.Confirmed(true), at.Who("w1", "tA"))
			d.add(1, d.day(1).Add(time.Hour), at.Tool("delete_comment"), at.Denied("destructive_flag_missing"), at.Who("w1", "tA"))
			d.add(1, d.day(1).Add(2*time.Hour), at.Tool("delete_issue"), at.Confirmed(true), at.Failed("not_found"), at.Who("w1", "tB"))
			d.add(3, d.day(1), at.Tool("get_issue"), at.Who("w1", "tA"))
			dup := d.add(1, d.day(2), at.Tool("delete_issue"), at.Confirmed(true), at.Who("w1", "tA"))
			d.recs = append(d.recs, dup)
			d.add(1, d.day(2), at.Tool("delete_issue"), at.Denied("insufficient_scope"), at.Who("w2", "tC"))
			d.add(4, d.day(40), at.Tool("delete_issue"), at.Confirmed(true), at.Who("w1", "tA"))
			return want{
				[]string{"call_date", "workspace_id", "token_id", "destructive_calls", "succeeded", "denied", "failed"},
				[][]any{
					{date(d.day(1)), "w1", "tA", int64(3), int64(2), int64(1), int64(0)},
					{date(d.day(1)), "w1", "tB", int64(1), int64(0), int64(0), int64(1)},
					{date(d.day(2)), "w1", "tA", int64(1), int64(1), int64(0), int64(0)},
					{date(d.day(2)), "w2", "tC", int64(1), int64(0), int64(1), int64(0)},
				},
			}
		}},
		{"top_tools_per_workspace_per_day", func(d *dataset) want {
			w1, w2 := at.Who("w1", "tA"), at.Who("w2", "tB")
			day := d.day(1)
			d.add(4, day, at.Tool("get_issue"), w1)
			d.add(2, day, at.Tool("list_issues"), w1)
			d.add(1, day, at.Tool("list_issues"), at.Denied("insufficient_scope"), w1)
			d.add(1, day, at.Tool("create_issue"), w1)
			d.add(1, day, at.Tool("create_issue"), at.Failed("invalid_arguments"), w1)
			d.add(2, day, at.Tool("update_issue"), w1)
			d.add(1, day, at.Tool("comment_issue"), w1)
			d.add(1, day, at.Tool("delete_issue"), w1) // ties comment_issue at 1, loses on name
			d.add(1, day, at.Tool("list_comments"), w2)
			d.add(3, day, at.Tool("list_issues"), at.Denied("invalid_token"), at.Who("", ""))
			d.add(2, d.day(3), at.Tool("get_issue"), w2)
			d.add(9, d.day(10), at.Tool("get_issue"), w1)
			return want{
				[]string{"call_date", "workspace_id", "tool_rank", "tool", "calls", "denied", "failed"},
				[][]any{
					{date(day), "w1", int64(1), "get_issue", int64(4), int64(0), int64(0)},
					{date(day), "w1", int64(2), "list_issues", int64(3), int64(1), int64(0)},
					{date(day), "w1", int64(3), "create_issue", int64(2), int64(0), int64(1)},
					{date(day), "w1", int64(4), "update_issue", int64(2), int64(0), int64(0)},
					{date(day), "w1", int64(5), "comment_issue", int64(1), int64(0), int64(0)},
					{date(day), "w2", int64(1), "list_comments", int64(1), int64(0), int64(0)},
					{date(d.day(3)), "w2", int64(1), "get_issue", int64(2), int64(0), int64(0)},
				},
			}
		}},
		{"denial_spike_tokens", func(d *dataset) want {
			denied := at.Denied("insufficient_scope")
			recent := func(n int, who func(*audit.Record)) {
				for i := range n {
					d.add(1, d.now.Add(-time.Duration(1+4*i)*time.Minute), denied, who)
				}
			}
			earlier := func(n int, who func(*audit.Record)) {
				for i := range n {
					// Spread over [now-24h, now-2h].
					d.add(1, d.now.Add(-2*time.Hour-time.Duration(i)*(22*time.Hour)/time.Duration(n)), denied, who)
				}
			}
			spike := at.Who("w1", "tSpike")
			recent(12, spike)
			earlier(24, spike) // average 1/h: 12 > 3
			d.add(20, d.now.Add(-10*time.Minute), spike)
			noisy := at.Who("w1", "tNoisy")
			recent(12, noisy)
			earlier(120, noisy) // average 5/h: 12 <= 15
			recent(9, at.Who("w2", "tFew"))
			recent(10, at.Who("w2", "tNew"))
			d.add(30, d.now.Add(-30*time.Hour), denied, at.Who("w1", "tOld"))
			d.add(15, d.now.Add(-5*time.Minute), denied, at.Who("", "")) // no token: not a token spike
			return want{
				[]string{"token_id", "workspace_id", "denials_last_hour", "denials_previous_24h", "avg_hourly_previous_24h"},
				[][]any{
					{"tSpike", "w1", int64(12), int64(24), 1.0},
					{"tNew", "w2", int64(10), int64(0), 0.0},
				},
			}
		}},
		{"destructive_without_confirm", func(d *dataset) want {
			a := d.add(1, d.day(1), at.Tool("delete_issue"), at.Denied("destructive_flag_missing"), at.Who("w1", "tA"))
			b := d.add(1, d.day(1).Add(time.Hour), at.Tool("delete_comment"), at.Denied("insufficient_scope"), at.Who("w2", "tB"))
			c := d.add(1, d.day(2), at.Tool("delete_issue"), at.Who("w1", "tA")) // succeeded without confirm: a bug
			d.recs = append(d.recs, c)
			d.add(1, d.day(1), at.Tool("delete_issue"), at.Confirmed(true), at.Who("w1", "tA"))
			d.add(1, d.day(1), at.Tool("get_issue"), at.Who("w1", "tA"))
			d.add(1, d.day(10), at.Tool("delete_issue"), at.Denied("destructive_flag_missing"), at.Who("w1", "tA"))
			row := func(r audit.Record) []any {
				return []any{r.Timestamp, r.EventID, r.WorkspaceID, r.UserID, r.TokenID, r.Tool, r.ResourceID,
					r.Outcome, r.Reason, r.ClientName, r.SourceIP}
			}
			return want{
				[]string{"timestamp", "event_id", "workspace_id", "user_id", "token_id", "tool", "resource_id",
					"outcome", "reason", "client_name", "source_ip"},
				[][]any{row(b), row(a), row(c)},
			}
		}},
	}

	var covered []string
	for _, tt := range tests {
		covered = append(covered, tt.name)
		t.Run(tt.name, func(t *testing.T) {
			q, err := queries.Get(tt.name)
			if err != nil {
				t.Fatal(err)
			}
			d := newDataset()
			w := tt.build(d)
			dir := t.TempDir()
			// Two writers, as two server processes would be.
			half := len(d.recs) / 2
			writeRecords(t, dir, d.recs[:half])
			writeRecords(t, dir, d.recs[half:])
			e := openEngine(t, dir)
			res, err := e.Query(context.Background(), q.SQL)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(res.Columns, w.columns) {
				t.Errorf("columns %v\nwant    %v", res.Columns, w.columns)
			}
			if !reflect.DeepEqual(res.Rows, w.rows) {
				t.Errorf("rows:\n%s\nwant:\n%s", fmtRows(res.Rows), fmtRows(w.rows))
			}
		})
	}
	if !sameSet(covered, queries.Names()) {
		t.Errorf("saved queries %v, tested %v: every saved query needs a test", queries.Names(), covered)
	}
}

func sortedCopy(s []string) []string { c := slices.Clone(s); slices.Sort(c); return c }
func sameSet(a, b []string) bool     { return slices.Equal(sortedCopy(a), sortedCopy(b)) }

func fmtRows(rows [][]any) string {
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "  %#v\n", r)
	}
	return b.String()
}

// TestSavedQueriesArePortable checks the files for the conventions Athena needs and
// for DuckDB-only syntax that would break there.
func TestSavedQueriesArePortable(t *testing.T) {
	duckOnly := []*regexp.Regexp{
		regexp.MustCompile(`::`),                  // cast shorthand
		regexp.MustCompile(`(?i)\bqualify\b`),     // Trino has no QUALIFY
		regexp.MustCompile(`(?i)\bstrftime\b`),    // Trino: date_format
		regexp.MustCompile(`(?i)\bepoch\s*\(`),    // Trino: to_unixtime
		regexp.MustCompile(`(?i)\bilike\b`),       // Trino has no ILIKE
		regexp.MustCompile(`(?i)\bread_\w+\s*\(`), // table functions
		regexp.MustCompile(`(?i)\blist_\w+\s*\(`), // DuckDB list functions
		regexp.MustCompile(`(?i)\bexclude\s*\(`),  // SELECT * EXCLUDE
		regexp.MustCompile(`(?i)\bgroup by all\b`),
		regexp.MustCompile(`;\s*\S`), // one statement per file
	}
	names := queries.Names()
	if len(names) < 5 {
		t.Fatalf("only %d saved queries: %v", len(names), names)
	}
	for _, q := range queries.All() {
		t.Run(q.Name, func(t *testing.T) {
			if !strings.HasPrefix(q.SQL, "-- ") || q.Description == "" {
				t.Error("the file must start with a '-- <description>' line")
			}
			if len(q.Description) > 1024 {
				t.Error("description longer than Athena's 1024 characters")
			}
			if !regexp.MustCompile(`(?i)\bFROM\s+audit_log\b`).MatchString(q.SQL) {
				t.Error("does not read audit_log")
			}
			if !strings.Contains(q.SQL, "Glue database") {
				t.Error("the header comment must say where audit_log lives in Athena")
			}
			body := stripComments(q.SQL)
			for _, re := range duckOnly {
				if re.MatchString(body) {
					t.Errorf("DuckDB-only syntax %q", re)
				}
			}
			// timestamp is a reserved word in Trino: the column must be quoted.
			if regexp.MustCompile(`(?i)[^"']\btimestamp\b[^"']`).MatchString(strings.ReplaceAll(body, `"timestamp"`, "")) {
				t.Error(`unquoted timestamp: write "timestamp"`)
			}
		})
	}
	if _, err := queries.Get("../engine"); err == nil {
		t.Error("Get accepted a path")
	}
	if _, err := queries.Get("no_such_query"); err == nil || !strings.Contains(err.Error(), "denied_by_reason_24h") {
		t.Errorf("Get of an unknown name: %v", err)
	}
}

func stripComments(sql string) string {
	var b strings.Builder
	for _, line := range strings.Split(sql, "\n") {
		code, _, _ := strings.Cut(line, "--")
		b.WriteString(code)
		b.WriteByte('\n')
	}
	return b.String()
}
