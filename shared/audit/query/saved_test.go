package query_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/events/queries"
	"github.com/aacworkflow/aacmcp/shared/audit"
	at "github.com/aacworkflow/aacmcp/shared/audit/audittest"
	"github.com/aacworkflow/aacmcp/shared/audit/file"
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
		{"destructive_calls_by_client", func(d *dataset) want {
			claude := at.Client("https://claude.ai/oauth/mcp-oauth-client-metadata")
			chatgpt := at.Client("c_01JYC3ZQ2M8V6XN4T5R7W9K0BD")
			del, delc := at.Tool("delete_issue"), at.Tool("delete_comment")
			// Day 1: claude deletes issues (one denied) and a comment; a personal
			// token deletes issues; chatgpt is refused the flag.
			d.add(3, d.day(1), del, at.Confirmed(true), claude, at.Who("w1", "tA"))
			d.add(1, d.day(1).Add(time.Hour), del, at.Denied("destructive_flag_missing"), claude, at.Who("w2", "tB"))
			d.add(1, d.day(1).Add(2*time.Hour), delc, at.Confirmed(true), claude, at.Who("w1", "tA"))
			d.add(2, d.day(1), del, at.Confirmed(true), at.Who("w1", "tP"))
			d.add(1, d.day(1).Add(3*time.Hour), del, at.Confirmed(true), at.Failed("not_found"), at.Who("w1", "tP"))
			d.add(2, d.day(1), del, at.Denied("insufficient_scope"), chatgpt, at.Who("w1", "tC"))
			dup := d.add(1, d.day(2), delc, at.Confirmed(true), chatgpt, at.Who("w1", "tC"))
			d.recs = append(d.recs, dup) // delivered twice: counted once
			// Not counted: not destructive, no known client (invalid token), not a
			// tool call, outside the 30 days.
			d.add(4, d.day(1), at.Tool("get_issue"), claude)
			d.add(3, d.day(1), del, at.Denied("invalid_token"), at.Who("", ""))
			d.add(1, d.day(1), at.Authorization(audit.ActionGrantRevoked), claude, func(r *audit.Record) { r.Destructive = true })
			d.add(5, d.day(31), del, at.Confirmed(true), claude)
			// Day 1, w3: claude's deletes asked of a person (a question each), and a
			// client that cannot ask refused under require (a denial).
			d.add(2, d.day(1).Add(4*time.Hour), delc, at.Confirmed(true), at.Denied("human_confirmation_required"), at.Confirmation(audit.ConfirmationElicited), claude, at.Who("w3", "tA"))
			d.add(1, d.day(1).Add(4*time.Hour), delc, at.Confirmed(true), at.Denied("human_confirmation_required"), at.Confirmation(audit.ConfirmationFlag), claude, at.Who("w3", "tA"))
			return want{
				[]string{"day", "client_id", "tool", "calls", "denied", "asked"},
				[][]any{
					{date(d.day(1)), "https://claude.ai/oauth/mcp-oauth-client-metadata", "delete_comment", int64(4), int64(1), int64(2)},
					{date(d.day(1)), "https://claude.ai/oauth/mcp-oauth-client-metadata", "delete_issue", int64(4), int64(1), int64(0)},
					{date(d.day(1)), "", "delete_issue", int64(3), int64(0), int64(0)},
					{date(d.day(1)), "c_01JYC3ZQ2M8V6XN4T5R7W9K0BD", "delete_issue", int64(2), int64(2), int64(0)},
					{date(d.day(2)), "c_01JYC3ZQ2M8V6XN4T5R7W9K0BD", "delete_comment", int64(1), int64(0), int64(0)},
				},
			}
		}},
		{"destructive_by_confirmation", func(d *dataset) want {
			const claudeID, chatgptID = "https://claude.ai/oauth/mcp-oauth-client-metadata", "c_01JYC3ZQ2M8V6XN4T5R7W9K0BD"
			named := func(n string) func(*audit.Record) { return func(r *audit.Record) { r.ClientName = n } }
			claude := func(r *audit.Record) { at.Client(claudeID)(r); named("claude-ai")(r) }
			chatgpt := func(r *audit.Record) { at.Client(chatgptID)(r); named("openai-mcp")(r) }
			del, delc := at.Tool("delete_issue"), at.Tool("delete_comment")
			flag, asked := at.Confirmation(audit.ConfirmationFlag), at.Confirmation(audit.ConfirmationElicited)
			yes := at.Confirmed(true)
			day := d.day(1)
			// claude, on confirm: true alone: two deletes, one of a comment that
			// was not found; and one refused for its missing confirm.
			dup := d.add(2, day, del, yes, flag, claude, at.Who("w1", "tA"))
			d.recs = append(d.recs, dup) // delivered twice: counted once
			d.add(1, day.Add(time.Hour), delc, yes, flag, at.Failed("not_found"), claude, at.Who("w1", "tA"))
			d.add(1, day.Add(time.Hour), del, at.Denied("destructive_flag_missing"), claude, at.Who("w1", "tA"))
			// claude, in an elicit workspace: three questions; two accepted, one
			// declined; one retry with a state of another call.
			d.add(3, day.Add(2*time.Hour), del, yes, asked, at.Denied("human_confirmation_required"), claude, at.Who("w2", "tB"))
			d.add(2, day.Add(2*time.Hour+time.Minute), del, yes, asked, claude, at.Who("w2", "tB"))
			d.add(1, day.Add(2*time.Hour+2*time.Minute), del, yes, asked, at.Denied("confirmation_declined"), claude, at.Who("w2", "tB"))
			d.add(1, day.Add(2*time.Hour+3*time.Minute), del, yes, asked, at.Denied("confirmation_invalid"), claude, at.Who("w2", "tB"))
			// claude, in an approve workspace: three links; one approved and run,
			// one denied on the page, and a replay of the approved one.
			approved := at.Confirmation(audit.ConfirmationApproved)
			d.add(3, day.Add(3*time.Hour), del, yes, approved, at.Denied("human_approval_required"), claude, at.Who("w3", "tE"))
			d.add(1, day.Add(3*time.Hour+time.Minute), del, yes, approved, claude, at.Who("w3", "tE"))
			d.add(1, day.Add(3*time.Hour+2*time.Minute), del, yes, approved, at.Denied("confirmation_declined"), claude, at.Who("w3", "tE"))
			d.add(1, day.Add(3*time.Hour+3*time.Minute), del, yes, approved, at.Denied("confirmation_invalid"), claude, at.Who("w3", "tE"))
			// The same connector, other software.
			d.add(1, d.day(2), del, yes, flag, at.Client(claudeID), named("claude-code"), at.Who("w1", "tC"))
			// chatgpt in a require workspace cannot ask: refused on the flag; and
			// refused its scope before the confirm check.
			d.add(1, day, del, yes, flag, at.Denied("human_confirmation_required"), chatgpt, at.Who("w2", "tD"))
			d.add(1, day, delc, yes, at.Denied("insufficient_scope"), chatgpt, at.Who("w2", "tD"))
			// A personal token without confirm; the harness writes some of these
			// as 1.0 lines (no confirmation at all), which count as '' too.
			d.add(2, day, del, at.Denied("destructive_flag_missing"), named("aacmcp-cli"), at.Who("w1", "tP"))
			// Not counted: not destructive, no known client (invalid token), not a
			// tool call, outside the 30 days.
			d.add(4, day, at.Tool("get_issue"), claude)
			d.add(3, day, del, at.Denied("invalid_token"), at.Who("", ""))
			d.add(1, day, at.Authorization(audit.ActionGrantRevoked), claude, func(r *audit.Record) { r.Destructive = true })
			d.add(5, d.day(31), del, yes, flag, claude)
			return want{
				[]string{"client_id", "client_name", "confirmation", "calls", "succeeded", "asked", "declined", "refused", "failed"},
				[][]any{
					{"", "aacmcp-cli", "", int64(2), int64(0), int64(0), int64(0), int64(2), int64(0)},
					{chatgptID, "openai-mcp", "", int64(1), int64(0), int64(0), int64(0), int64(1), int64(0)},
					{chatgptID, "openai-mcp", "flag", int64(1), int64(0), int64(0), int64(0), int64(1), int64(0)},
					{claudeID, "claude-ai", "", int64(1), int64(0), int64(0), int64(0), int64(1), int64(0)},
					{claudeID, "claude-ai", "approved", int64(6), int64(1), int64(3), int64(1), int64(1), int64(0)},
					{claudeID, "claude-ai", "elicited", int64(7), int64(2), int64(3), int64(1), int64(1), int64(0)},
					{claudeID, "claude-ai", "flag", int64(3), int64(2), int64(0), int64(0), int64(0), int64(1)},
					{claudeID, "claude-code", "flag", int64(1), int64(1), int64(0), int64(0), int64(0), int64(0)},
				},
			}
		}},
		{"denied_by_reason_24h", func(d *dataset) want {
			w1 := at.Who("w1", "tA")
			// The authorization server's denials are not tool calls.
			d.add(2, d.now.Add(-time.Hour), at.Authorization(audit.ActionConsentDenied), at.Denied("permission_denied"), w1)
			d.add(1, d.now.Add(-time.Hour), at.Authorization(audit.ActionRefreshReuseDetected), at.Denied("invalid_token"), w1)
			d.add(2, d.now.Add(-30*time.Minute), at.Tool("delete_issue"), at.Denied("destructive_flag_missing"), w1)
			dup := d.add(1, d.now.Add(-23*time.Hour), at.Tool("delete_issue"), at.Denied("destructive_flag_missing"), at.Who("w1", "tB"))
			d.recs = append(d.recs, dup) // delivered twice: counted once
			d.add(2, d.now.Add(-2*time.Hour), at.Tool("list_issues"), at.Denied("insufficient_scope"), at.Who("w2", "tC"))
			d.add(1, d.now.Add(-time.Hour), at.Denied("invalid_token"), at.Who("", ""))
			d.add(1, d.now.Add(-3*time.Hour), at.Tool("update_issue"), at.Denied("permission_denied"), w1)
			// A client that cannot ask is refused; questions put to a person are not.
			// (Through a connector: the harness writes personal-token records as
			// 1.0 lines, and no 1.0 writer asked anyone.)
			conn := at.Client("c_1")
			d.add(1, d.now.Add(-4*time.Hour), at.Tool("delete_issue"), at.Confirmed(true), at.Confirmation(audit.ConfirmationFlag),
				at.Denied("human_confirmation_required"), conn, w1)
			d.add(4, d.now.Add(-4*time.Hour), at.Tool("delete_issue"), at.Confirmed(true), at.Confirmation(audit.ConfirmationElicited),
				at.Denied("human_confirmation_required"), conn, w1)
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
					{"human_confirmation_required", int64(1), int64(1), int64(1)},
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
			d.add(2, d.day(1), at.Authorization(audit.ActionGrantRevoked), at.Who("w1", "tA"), func(r *audit.Record) { r.Destructive = true })
			// A delete a person confirmed: the question, then the retry.
			d.add(1, d.day(2).Add(time.Hour), at.Tool("delete_issue"), at.Confirmed(true), at.Denied("human_confirmation_required"), at.Confirmation(audit.ConfirmationElicited), at.Who("w2", "tC"))
			d.add(1, d.day(2).Add(2*time.Hour), at.Tool("delete_issue"), at.Confirmed(true), at.Confirmation(audit.ConfirmationElicited), at.Who("w2", "tC"))
			return want{
				[]string{"call_date", "workspace_id", "token_id", "destructive_calls", "succeeded", "denied", "asked", "failed"},
				[][]any{
					{date(d.day(1)), "w1", "tA", int64(3), int64(2), int64(1), int64(0), int64(0)},
					{date(d.day(1)), "w1", "tB", int64(1), int64(0), int64(0), int64(0), int64(1)},
					{date(d.day(2)), "w2", "tC", int64(3), int64(1), int64(1), int64(1), int64(0)},
					{date(d.day(2)), "w1", "tA", int64(1), int64(1), int64(0), int64(0), int64(0)},
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
			d.add(9, day, at.Authorization(audit.ActionTokenRefreshed), w1, func(r *audit.Record) { r.Tool = "token" })
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
			// The last hour is the hour that ended queries.DeliveryLag ago: Athena
			// has not received the last minutes yet, so neither engine counts them.
			end := d.now.Add(-queries.DeliveryLag)
			recent := func(n int, who func(*audit.Record)) {
				for i := range n {
					d.add(1, end.Add(-time.Duration(1+4*i)*time.Minute), denied, who)
				}
			}
			inFlight := func(n int, who func(*audit.Record)) {
				for i := range n {
					d.add(1, d.now.Add(-queries.DeliveryLag).Add(time.Duration(1+i%8)*time.Minute), denied, who)
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
			inFlight(6, spike) // not yet in Athena: not counted
			earlier(24, spike) // average 1/h: 12 > 3
			d.add(20, d.now.Add(-10*time.Minute), spike)
			noisy := at.Who("w1", "tNoisy")
			recent(12, noisy)
			earlier(120, noisy) // average 5/h: 12 <= 15
			recent(9, at.Who("w2", "tFew"))
			recent(10, at.Who("w2", "tNew"))
			inFlight(15, at.Who("w2", "tLate")) // a spike only in the minutes Athena lacks
			recent(9, at.Who("w2", "tEdge"))
			inFlight(3, at.Who("w2", "tEdge")) // 9 + 3 would alert; the 3 are not in Athena yet
			// Twelve deletes in an elicit workspace: twelve questions, not denials.
			for i := range 12 {
				d.add(1, end.Add(-time.Duration(1+4*i)*time.Minute), at.Tool("delete_issue"), at.Confirmed(true),
					at.Confirmation(audit.ConfirmationElicited), at.Denied("human_confirmation_required"), at.Client("c_1"), at.Who("w2", "tAsked"))
			}
			d.add(30, d.now.Add(-30*time.Hour), denied, at.Who("w1", "tOld"))
			d.add(15, d.now.Add(-5*time.Minute), denied, at.Who("", "")) // no token: not a token spike
			for i := range 12 {                                          // the authorization server's, not tool calls
				d.add(1, d.now.Add(-time.Duration(1+4*i)*time.Minute), at.Authorization(audit.ActionConsentDenied),
					at.Denied("permission_denied"), at.Who("w2", "tAuthz"))
			}
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
			d.add(1, d.day(1), at.Authorization(audit.ActionGrantRevoked), at.Who("w1", "tA"), func(r *audit.Record) { r.Destructive = true })
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
			// Two writers, as two server processes would be, and 1.0 records
			// (splitLegacy).
			legacy, current := splitLegacy(t, d.recs)
			writeLegacy(t, dir, legacy)
			half := len(current) / 2
			writeRecords(t, dir, current[:half])
			writeRecords(t, dir, current[half:])
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
	if !sameSet(append(covered, reportQueriesTested...), queries.Names()) {
		t.Errorf("saved queries %v, tested %v: every saved query needs a test", queries.Names(), covered)
	}
}

// writeLegacy files recs as 1.0 JSON lines, one file per hour, as the 1.0 sink did.
func writeLegacy(t *testing.T, dir string, recs []audit.Record) {
	t.Helper()
	byHour := map[string][]byte{}
	for _, r := range recs {
		h, err := r.Hour()
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, file.Subdir, "dt="+h.Format(time.DateOnly), h.Format("hour=15"))
		byHour[p] = append(byHour[p], at.LegacyLine(r)...)
	}
	for p, b := range byHour {
		if err := os.MkdirAll(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "legacy-1.0.json"), b, 0o600); err != nil {
			t.Fatal(err)
		}
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
			// Columns 1.1 added are NULL in 1.0 files (Athena and DuckDB alike): a
			// query reads them through the coalesce that gives them their 1.0
			// meaning. (client_id may be used again under its alias; the
			// fixtures' 1.0 records check the rest.)
			const eventType = "coalesce(event_type, 'tool_call')"
			if n := strings.Count(body, "event_type"); n != strings.Count(body, eventType) {
				t.Errorf("event_type used %d times, %d of them as %s", n, strings.Count(body, eventType), eventType)
			}
			if strings.Contains(body, "client_id") && !strings.Contains(body, "coalesce(client_id, '')") {
				t.Error("client_id read without coalesce(client_id, '')")
			}
			// confirmation came with 1.3: NULL in older records, read as ''.
			if strings.Contains(body, "confirmation") && !strings.Contains(body, "coalesce(confirmation, '')") {
				t.Error("confirmation read without coalesce(confirmation, '')")
			}
			if !strings.Contains(body, eventType+" = 'tool_call'") && !strings.Contains(body, eventType+" = 'authorization'") {
				t.Error("every saved query is about tool calls or about authorization events: it must filter coalesce(event_type, 'tool_call') = 'tool_call' (or 'authorization')")
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
