package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/audit/athenalocal"
	"github.com/aacworkflow/aacmcp/shared/audit/ocsf"
	"github.com/aacworkflow/aacmcp/shared/audit/ocsf/ocsftest"
	"github.com/aacworkflow/aacmcp/shared/audit/query"
	"github.com/aacworkflow/aacmcp/shared/audit/report"
	"github.com/aacworkflow/aacmcp/shared/audit/report/reporttest"
	"github.com/aacworkflow/aacmcp/test/emulator"
)

// fixturePeriod are the flags of the fixture's day.
var fixturePeriod = []string{"--from", "2025-06-22", "--to", "2025-06-23T00:00:00Z"}

type reportJSON struct {
	From, To, Workspace, Source, Generated string
	Results                                map[string]*query.Result
}

// rowsText renders result rows as the page shows them.
func rowsText(res *query.Result) []reporttest.Row {
	var out []reporttest.Row
	for _, r := range res.Rows {
		row := reporttest.Row{}
		for _, v := range r {
			row = append(row, cellText(v))
		}
		out = append(out, row)
	}
	return out
}

func checkFixtureResults(t *testing.T, where string, res map[string]*query.Result) {
	t.Helper()
	for id, want := range reporttest.Expected {
		if got := rowsText(res[id]); !reflect.DeepEqual(got, want) {
			t.Errorf("%s %s:\n got %v\nwant %v", where, id, got, want)
		}
	}
	slow := res["slowest"]
	if len(slow.Rows) != reporttest.SlowestRows || cellText(slow.Rows[0][1]) != reporttest.SlowestTool || cellText(slow.Rows[0][4]) != reporttest.SlowestMS {
		t.Errorf("%s slowest: %d rows, first %v", where, len(slow.Rows), slow.Rows[0])
	}
}

// TestAuditReport: the report of the fixture has its hand-counted numbers, which are
// also what `audit query --saved` answers for the same period.
func TestAuditReport(t *testing.T) {
	data := t.TempDir()
	reporttest.Write(t, data)
	out := filepath.Join(t.TempDir(), "report.html")
	r := run(t, nil, append([]string{"audit", "report", "--data", data, "--out", out, "--json"}, fixturePeriod...)...)
	if r.code != ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	got := decodeJSON[reportJSON](t, r.stdout)
	checkFixtureResults(t, "report", got.Results)
	for _, s := range report.Sections {
		if !strings.Contains(r.stderr, s.Query+": ") {
			t.Errorf("no progress line for %s in\n%s", s.Query, r.stderr)
		}
	}
	if fi, err := os.Stat(out); err != nil || fi.Size() < 10_000 {
		t.Fatalf("the page: %v", err)
	}

	// The same saved query through `audit query`, with the same parameters.
	p := report.Period{From: reporttest.From, To: reporttest.To}.Params()
	args := []string{"audit", "query", "--data", data, "--saved", "report_denials", "--json"}
	for _, v := range p {
		args = append(args, "--param", v)
	}
	rows := decodeJSON[[]map[string]any](t, mustRun(t, args...))
	if len(rows) != len(reporttest.Expected["denials"]) || fmt.Sprint(rows[0]["denied_calls"]) != reporttest.Expected["denials"][0][3] {
		t.Errorf("audit query --saved report_denials: %v", rows)
	}

	// The table for people names every section's query.
	r = run(t, nil, append([]string{"audit", "report", "--data", data, "--out", out, "--workspace", "acme"}, fixturePeriod...)...)
	for _, s := range report.Sections {
		if !strings.Contains(r.stdout, s.Query) {
			t.Errorf("table lacks %s:\n%s", s.Query, r.stdout)
		}
	}
}

func TestAuditReportErrors(t *testing.T) {
	data := t.TempDir()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"since and from", []string{"--since", "1d", "--from", "2025-06-22"}, "not both"},
		{"bad since", []string{"--since", "7x"}, "--since"},
		{"bad from", []string{"--from", "yesterday"}, "RFC 3339"},
		{"empty period", []string{"--from", "2025-06-23", "--to", "2025-06-22"}, "empty"},
		{"athena flag without athena", []string{"--workgroup", "w"}, "go with --athena"},
		{"athena without target", []string{"--athena"}, "--stack NAME, or --workgroup and --database"},
		{"stack and workgroup", []string{"--athena", "--stack", "s", "--workgroup", "w"}, "not both"},
		{"page size", []string{"--athena", "--workgroup", "w", "--database", "d", "--page-size", "1001"}, "1 to 1000"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, nil, append([]string{"audit", "report", "--data", data, "--out", filepath.Join(t.TempDir(), "r.html")}, tc.args...)...)
			if r.code != ExitUsage || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want exit 2 mentioning %q", r.code, r.stderr, tc.want)
			}
		})
	}
}

// TestAuditReportAthena: --athena against the stand-in gives the local numbers, with
// the results read in pages of three rows.
func TestAuditReportAthena(t *testing.T) {
	data := t.TempDir()
	reporttest.Write(t, data)
	var mu sync.Mutex
	pages := 0
	srv := athenaStandIn(t, data, "aacmcp-audit", "aacmcp_audit", func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("X-Amz-Target") == "AmazonAthena.GetQueryResults" {
				mu.Lock()
				pages++
				mu.Unlock()
			}
			h.ServeHTTP(w, r)
		})
	})
	out := filepath.Join(t.TempDir(), "athena.html")
	r := run(t, nil, append([]string{"audit", "report", "--athena", "--region", "eu-west-1", "--endpoint-url", srv.URL,
		"--workgroup", "aacmcp-audit", "--database", "aacmcp_audit", "--page-size", "3", "--poll-interval", "10ms",
		"--out", out, "--json"}, fixturePeriod...)...)
	if r.code != ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	got := decodeJSON[reportJSON](t, r.stdout)
	checkFixtureResults(t, "athena", got.Results)
	local := decodeJSON[reportJSON](t, mustRun(t, append([]string{"audit", "report", "--data", data, "--out", out + ".local", "--json"}, fixturePeriod...)...))
	if !reflect.DeepEqual(got.Results, local.Results) {
		t.Error("the report through Athena differs from the local one")
	}
	if !strings.Contains(r.stderr, "SUCCEEDED") || !strings.Contains(got.Source, "Athena workgroup aacmcp-audit") {
		t.Errorf("progress:\n%s\nsource %q", r.stderr, got.Source)
	}
	mu.Lock()
	defer mu.Unlock()
	if pages < 20 {
		t.Errorf("%d GetQueryResults calls for 55 rows in pages of 3", pages)
	}
}

// TestAuditReportInBrowser opens the report in Chromium: the counts each section
// shows are the fixture's, every section names its saved query, and the page loads
// nothing (its CSP blocks what is added to it, the browser's request log has the
// file alone). The screenshot goes to docs/audit-report.png with
// AACMCP_UPDATE_SCREENSHOT=1.
func TestAuditReportInBrowser(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not on PATH: the report's browser test needs Node.js and test/node_modules (make deps)")
	}
	root, err := emulator.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	reporttest.Write(t, data)
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	mustRun(t, append([]string{"audit", "report", "--data", data, "--out", page}, fixturePeriod...)...)

	var mu sync.Mutex
	var probed []string
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	probe := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		probed = append(probed, r.URL.Path)
		mu.Unlock()
		w.Header().Set("Access-Control-Allow-Origin", "*")
		w.WriteHeader(http.StatusNoContent)
	})}
	go probe.Serve(ln)
	defer probe.Close()

	shot := filepath.Join(dir, "report.png")
	cmd := exec.Command(node, filepath.Join(root, "test", "report", "check.mjs"))
	cmd.Env = append(os.Environ(), "AACMCP_REPORT="+page, "AACMCP_PROBE_URL=http://"+ln.Addr().String(), "AACMCP_SCREENSHOT="+shot)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("check.mjs: %v\n%s", err, stderr.String())
	}
	var seen struct {
		URL, CSP   string
		Requests   []string
		Failed     []string
		Violations []string
		Blocked    struct{ Img, Fetched string }
		ControlImg string
		Scripts    int
		Totals     map[string]int64
		Fonts      []struct{ Family, Status string }
		Sections   []struct {
			ID, Query, Named    string
			Charts, EmptyCharts int
			ChartText           []string
			Columns             []string
			Rows                []reporttest.Row
		}
	}
	if err := json.Unmarshal(raw, &seen); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}

	// What each section shows.
	if len(seen.Sections) != len(report.Sections) {
		t.Fatalf("%d sections on the page, want %d", len(seen.Sections), len(report.Sections))
	}
	for i, s := range seen.Sections {
		want := report.Sections[i]
		if s.ID != want.ID || s.Query != want.Query || s.Named != want.Query {
			t.Errorf("section %d: id %q query %q named %q, want %s from %s", i, s.ID, s.Query, s.Named, want.ID, want.Query)
		}
		if s.Charts == 0 || s.EmptyCharts != 0 || len(s.ChartText) == 0 {
			t.Errorf("%s: %d charts (%d empty), %d texts", s.ID, s.Charts, s.EmptyCharts, len(s.ChartText))
		}
		if rows, ok := reporttest.Expected[s.ID]; ok && !reflect.DeepEqual(s.Rows, rows) {
			t.Errorf("%s shows\n %v\nwant %v", s.ID, s.Rows, rows)
		}
		if s.ID == "slowest" && (len(s.Rows) != reporttest.SlowestRows || s.Rows[0][1] != reporttest.SlowestTool || s.Rows[0][4] != reporttest.SlowestMS) {
			t.Errorf("slowest shows %v", s.Rows)
		}
	}
	wantTotals := map[string]int64{"tool_calls": reporttest.ToolCalls, "denied": reporttest.Denied,
		"destructive": reporttest.Destructive, "authorization": reporttest.Authorization}
	if !reflect.DeepEqual(seen.Totals, wantTotals) {
		t.Errorf("totals %v, want %v", seen.Totals, wantTotals)
	}
	// The confirmation kind of a later version is a stack of its own in the chart.
	for _, s := range seen.Sections {
		if s.ID == "destructive" && !slices.Contains(s.ChartText, reporttest.FutureConfirmation) {
			t.Errorf("the destructive chart has no %q stack: %v", reporttest.FutureConfirmation, s.ChartText)
		}
	}

	// Nothing is loaded: the page is the only request, no script runs, the charts'
	// font came from the page itself, and what is added to the page is blocked.
	if seen.CSP != report.CSP || seen.Scripts != 0 {
		t.Errorf("CSP %q, %d scripts", seen.CSP, seen.Scripts)
	}
	if len(seen.Requests) != 1 || seen.Requests[0] != seen.URL {
		t.Errorf("requests %v, want the file alone", seen.Requests)
	}
	if len(seen.Failed) == 0 {
		t.Error("the browser reports no failed (blocked) request for the added image")
	}
	if len(seen.Fonts) != 1 || seen.Fonts[0].Family != "Liberation Sans" || seen.Fonts[0].Status != "loaded" {
		t.Errorf("fonts %v: want the embedded Liberation Sans, loaded", seen.Fonts)
	}
	if seen.Blocked.Img != "error" || seen.Blocked.Fetched != "blocked" || len(seen.Violations) == 0 {
		t.Errorf("added content: %+v, CSP violations %v", seen.Blocked, seen.Violations)
	}
	mu.Lock()
	got := slices.Clone(probed)
	mu.Unlock()
	if !slices.Equal(got, []string{"/control"}) {
		t.Errorf("the probe saw %v: want only the control page's image (a page without the CSP)", got)
	}

	if os.Getenv("AACMCP_UPDATE_SCREENSHOT") == "1" {
		b, err := os.ReadFile(shot)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "docs", "audit-report.png"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAuditReportEmptyPeriod: a period without records gives charts that say so.
func TestAuditReportEmptyPeriod(t *testing.T) {
	data := t.TempDir()
	reporttest.Write(t, data)
	out := filepath.Join(t.TempDir(), "empty.html")
	mustRun(t, "audit", "report", "--data", data, "--out", out, "--from", "2024-01-01", "--to", "2024-01-02")
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range report.Sections {
		if !bytes.Contains(b, []byte(s.Empty)) {
			t.Errorf("the empty report does not say %q", s.Empty)
		}
	}
}

// TestAuditExportOCSF: one OCSF line per record of the period, each valid against
// the required attributes of its class.
func TestAuditExportOCSF(t *testing.T) {
	data := t.TempDir()
	reporttest.Write(t, data)
	r := run(t, nil, append([]string{"audit", "export", "--format", "ocsf", "--data", data}, fixturePeriod...)...)
	if r.code != ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	// Records makes fresh event ids on every call: count them, delivered twice once.
	want := map[int64]bool{}
	recs := reporttest.Records()
	for i, rec := range recs {
		ts, _ := audit.ParseTime(rec.Timestamp)
		if !ts.Before(reporttest.From) && ts.Before(reporttest.To) && (i == 0 || rec.EventID != recs[i-1].EventID) {
			want[int64(i)] = true
		}
	}
	schema := ocsftest.Schema(t)
	got := map[string]bool{}
	classes := map[float64]int{}
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	sc.Buffer(nil, 1<<20)
	lines := 0
	for sc.Scan() {
		lines++
		m, err := ocsftest.Validate(t, schema, sc.Bytes())
		if err != nil {
			t.Errorf("line %d: %v\n%s", lines, err, sc.Text())
		}
		got[m["metadata"].(map[string]any)["uid"].(string)] = true
		classes[jsonNumber(m["class_uid"])]++
	}
	if lines != len(want) || len(got) != lines {
		t.Errorf("%d lines (%d event ids) for %d records of the period", lines, len(got), len(want))
	}
	if classes[ocsf.ClassAPIActivity] == 0 || classes[ocsf.ClassAuthentication] == 0 || classes[ocsf.ClassAuthorize] == 0 {
		t.Errorf("classes %v", classes)
	}
	// The later writer's record cannot be read by this version: skipped, and said.
	if !strings.Contains(r.stderr, fmt.Sprintf("%d OCSF events written; 1 line skipped", lines)) {
		t.Errorf("stderr %q", r.stderr)
	}
	if r := run(t, nil, "audit", "export", "--format", "csv", "--data", data); r.code != ExitUsage {
		t.Errorf("--format csv: exit %d", r.code)
	}
}

func jsonNumber(v any) float64 {
	switch n := v.(type) {
	case json.Number:
		f, _ := n.Float64()
		return f
	case float64:
		return n
	}
	return 0
}

// cloudFormationStandIn answers DescribeStacks in CloudFormation's query protocol
// (form-encoded POST, XML answer) with the outputs of one stack, as the deployed
// stack has them (infra/outputs.go), and ValidationError for any other name.
func cloudFormationStandIn(t *testing.T, name string, outputs map[string]string) *httptest.Server {
	t.Helper()
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil || r.Form.Get("Action") != "DescribeStacks" || !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") {
			http.Error(w, "unexpected request", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/xml")
		if r.Form.Get("StackName") != name {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `<ErrorResponse xmlns="http://cloudformation.amazonaws.com/doc/2010-05-15/"><Error><Type>Sender</Type><Code>ValidationError</Code><Message>Stack with id %s does not exist</Message></Error><RequestId>1</RequestId></ErrorResponse>`, r.Form.Get("StackName"))
			return
		}
		var outs strings.Builder
		for k, v := range outputs {
			fmt.Fprintf(&outs, "<member><OutputKey>%s</OutputKey><OutputValue>%s</OutputValue></member>", k, v)
		}
		fmt.Fprintf(w, `<DescribeStacksResponse xmlns="http://cloudformation.amazonaws.com/doc/2010-05-15/"><DescribeStacksResult><Stacks><member><StackName>%s</StackName><StackId>arn:aws:cloudformation:eu-west-1:123456789012:stack/%s/1</StackId><CreationTime>2026-12-01T00:00:00Z</CreationTime><StackStatus>CREATE_COMPLETE</StackStatus><Outputs>%s</Outputs></member></Stacks></DescribeStacksResult><ResponseMetadata><RequestId>1</RequestId></ResponseMetadata></DescribeStacksResponse>`, name, name, outs.String())
	}))
}

// TestAuditReportAthenaStack: --stack reads the workgroup and database from the
// stack's outputs.
func TestAuditReportAthenaStack(t *testing.T) {
	data := t.TempDir()
	reporttest.Write(t, data)
	athenaSrv := athenaStandIn(t, data, "wg-from-stack", "db_from_stack", nil)
	cf := cloudFormationStandIn(t, "aacmcp", map[string]string{
		stackOutWorkGroup: "wg-from-stack", stackOutDatabase: "db_from_stack", "McpUrl": "https://example.test/mcp",
	})
	defer cf.Close()
	t.Setenv("AWS_ENDPOINT_URL_CLOUDFORMATION", cf.URL)
	args := func(stack string) []string {
		return append([]string{"audit", "report", "--athena", "--stack", stack, "--region", "eu-west-1",
			"--endpoint-url", athenaSrv.URL, "--poll-interval", "10ms", "--out", filepath.Join(t.TempDir(), "r.html"), "--json"}, fixturePeriod...)
	}
	r := run(t, nil, args("aacmcp")...)
	if r.code != ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "stack aacmcp: workgroup wg-from-stack, database db_from_stack") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
	checkFixtureResults(t, "athena --stack", decodeJSON[reportJSON](t, r.stdout).Results)
	if r := run(t, nil, args("other")...); r.code == ExitOK || !strings.Contains(r.stderr, "does not exist") {
		t.Errorf("unknown stack: exit %d, %s", r.code, r.stderr)
	}
}

// athenaStandIn serves the Athena API over data's audit files for one workgroup and
// database, through wrap when given, and points the AWS SDK's credentials at
// nothing real.
func athenaStandIn(t *testing.T, data, workGroup, database string, wrap func(http.Handler) http.Handler) *httptest.Server {
	t.Helper()
	eng, err := query.Open(data)
	if err != nil {
		t.Fatal(err)
	}
	stand := athenalocal.New(eng, athenalocal.Config{WorkGroup: workGroup, Database: database})
	var h http.Handler = stand
	if wrap != nil {
		h = wrap(stand)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() { srv.Close(); stand.Close(); eng.Close() })
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDLOCAL")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "local")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	return srv
}
