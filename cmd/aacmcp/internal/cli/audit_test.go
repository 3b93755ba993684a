package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/events/queries"
	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/audit/audittest"
	"github.com/aacworkflow/aacmcp/shared/audit/file"
)

// writeRecords appends recs to the audit files of data, as the server would.
func writeRecords(t *testing.T, data string, recs ...audit.Record) {
	t.Helper()
	s, err := file.New(data)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, r := range recs {
		if err := s.Write(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
}

func TestAuditQuery(t *testing.T) {
	data := t.TempDir()
	now := time.Now().UTC().Add(-time.Minute)
	writeRecords(t, data,
		audittest.Record(now),
		audittest.Record(now, audittest.Tool("delete_issue"), audittest.Denied("destructive_flag_missing"), audittest.Confirmed(false)),
		audittest.Record(now, audittest.Tool("delete_issue"), audittest.Denied("destructive_flag_missing"), audittest.Confirmed(false)),
		audittest.Record(now, audittest.Denied("insufficient_scope")),
	)

	sql := "SELECT reason, count(*) AS n FROM audit_log WHERE outcome = 'denied' GROUP BY reason ORDER BY n DESC, reason"
	rows := decodeJSON[[]map[string]any](t, mustRun(t, "audit", "query", "--data", data, "--sql", sql, "--json"))
	if len(rows) != 2 || rows[0]["reason"] != "destructive_flag_missing" || rows[0]["n"] != float64(2) || rows[1]["n"] != float64(1) {
		t.Errorf("--json rows = %v", rows)
	}
	// The objects keep the columns' order.
	raw := mustRun(t, "audit", "query", "--data", data, "--sql", sql, "--json")
	if strings.Index(raw, `"reason"`) > strings.Index(raw, `"n"`) {
		t.Errorf("column order lost:\n%s", raw)
	}

	r := run(t, nil, "audit", "query", "--data", data, "--sql", sql)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != ExitOK || len(lines) != 3 || strings.Fields(lines[0])[0] != "reason" || !strings.HasPrefix(lines[1], "destructive_flag_missing") {
		t.Errorf("table: exit %d\n%s", r.code, r.stdout)
	}
	if !strings.Contains(r.stderr, "(2 rows)") {
		t.Errorf("stderr = %q", r.stderr)
	}

	// Every saved query runs on these records.
	for _, name := range queries.Names() {
		if r := run(t, nil, "audit", "query", "--data", data, "--saved", name, "--json"); r.code != ExitOK || !json.Valid([]byte(r.stdout)) {
			t.Errorf("--saved %s: exit %d\nstdout %s\nstderr %s", name, r.code, r.stdout, r.stderr)
		}
	}
	got := decodeJSON[[]map[string]any](t, mustRun(t, "audit", "query", "--data", data, "--saved", "destructive_without_confirm", "--json"))
	if len(got) == 0 {
		t.Error("destructive_without_confirm found nothing, though two such calls were recorded")
	}

	list := decodeJSON[[]struct{ Name, Description, SQL string }](t, mustRun(t, "audit", "query", "--list", "--json"))
	if len(list) != len(queries.Names()) || list[0].Description == "" || list[0].SQL == "" {
		t.Errorf("--list --json = %+v", list)
	}

	// An empty log is an empty table, not an error.
	if rows := decodeJSON[[]map[string]any](t, mustRun(t, "audit", "query", "--data", t.TempDir(), "--sql", "SELECT count(*) AS n FROM audit_log", "--json")); len(rows) != 1 || rows[0]["n"] != float64(0) {
		t.Errorf("empty log: %v", rows)
	}
}

func TestAuditQueryErrors(t *testing.T) {
	data := t.TempDir()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"nothing to run", []string{}, "exactly one of"},
		{"two things to run", []string{"--sql", "SELECT 1", "--saved", "x"}, "exactly one of"},
		{"unknown saved query", []string{"--saved", "nope"}, "denied_by_reason_24h"},
		{"path as saved query", []string{"--saved", "../queries/denied_by_reason_24h"}, "no saved query"},
		{"bad SQL", []string{"--sql", "SELEC 1"}, "syntax error"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, nil, append([]string{"audit", "query", "--data", data}, tc.args...)...)
			if r.code != ExitUsage || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want exit 2 mentioning %q", r.code, r.stderr, tc.want)
			}
		})
	}
}

func TestAuditTail(t *testing.T) {
	data := t.TempDir()
	old := audittest.Record(time.Now().UTC(), audittest.Tool("list_issues"))
	writeRecords(t, data, old)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, []string{"audit", "tail", "--data", data, "--poll-interval", "10ms"},
			Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }})
	}()
	// Records appended after the start are printed; the one before is not.
	fresh := audittest.Record(time.Now().UTC(), audittest.Tool("delete_issue"), audittest.Denied("destructive_flag_missing"), audittest.Confirmed(false))
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(out.String(), "delete_issue") {
		if time.Now().After(deadline) {
			t.Fatalf("tail printed nothing within 20s: %q %q", out.String(), errb.String())
		}
		writeRecords(t, data, fresh)
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	if code := <-done; code != ExitOK {
		t.Fatalf("tail exited %d: %s", code, errb.String())
	}
	line := strings.Split(out.String(), "\n")[0]
	for _, want := range []string{"denied", "delete_issue", "destructive_flag_missing", "demo/dev", "no-confirm"} {
		if !strings.Contains(line, want) {
			t.Errorf("line %q lacks %q", line, want)
		}
	}
	if strings.Contains(out.String(), "list_issues") {
		t.Errorf("tail printed a record from before it started:\n%s", out.String())
	}

	// --from-start --json prints every record as a JSON line.
	ctx2, cancel2 := context.WithCancel(context.Background())
	var out2 syncBuffer
	done2 := make(chan int, 1)
	go func() {
		done2 <- Run(ctx2, []string{"audit", "tail", "--data", data, "--from-start", "--json", "--poll-interval", "10ms"},
			Env{Stdout: &out2, Stderr: &errb, Getenv: func(string) string { return "" }})
	}()
	for !strings.Contains(out2.String(), old.EventID) {
		if time.Now().After(deadline) {
			t.Fatalf("--from-start did not print the old record: %q", out2.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel2()
	if code := <-done2; code != ExitOK {
		t.Fatalf("tail --json exited %d", code)
	}
	for _, l := range strings.Split(strings.TrimSpace(out2.String()), "\n") {
		if _, err := audit.UnmarshalLine([]byte(l)); err != nil {
			t.Errorf("--json line is not a record: %v: %s", err, l)
		}
	}
}

// TestPrintRecordEventFields: the human line names an OAuth client when there is one
// and shows an authorization event's action where a tool call shows its tool.
func TestPrintRecordEventFields(t *testing.T) {
	ts := time.Date(2025, 6, 22, 15, 30, 0, 0, time.UTC)
	const client = "https://claude.ai/oauth/mcp-oauth-client-metadata"
	tests := []struct {
		name    string
		rec     audit.Record
		want    []string
		notWant []string
	}{
		{"personal token", audittest.Record(ts, audittest.Tool("list_issues")), []string{"list_issues", "mcp"}, []string{"client="}},
		{"oauth tool call", audittest.Record(ts, audittest.Tool("delete_issue"), audittest.Client(client)),
			[]string{"delete_issue", " client=" + client}, nil},
		{"authorization event", audittest.Record(ts, audittest.Authorization(audit.ActionConsentGranted), audittest.Client(client)),
			[]string{"consent_granted", "oauth", " client=" + client}, []string{"get_issue"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			if err := printRecord(&b, tt.rec); err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("line %q lacks %q", b.String(), w)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(b.String(), w) {
					t.Errorf("line %q has %q", b.String(), w)
				}
			}
		})
	}
}
