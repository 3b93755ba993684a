package query_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/events/queries"
	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/audit/audittest"
	"github.com/aacworkflow/aacmcp/shared/audit/file"
	"github.com/aacworkflow/aacmcp/shared/audit/query"
)

func openEngine(t *testing.T, dir string) *query.Engine {
	t.Helper()
	e, err := query.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	})
	return e
}

func run(t *testing.T, e *query.Engine, q string) *query.Result {
	t.Helper()
	res, err := e.Query(context.Background(), q)
	if err != nil {
		t.Fatalf("%s\n-> %v", q, err)
	}
	return res
}

// writeRecords files recs through the real sink (one sink per call: one more file
// per hour, as another process would write).
func writeRecords(t *testing.T, dir string, recs []audit.Record) {
	t.Helper()
	s, err := file.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := s.Write(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

func recordColumns() []string {
	var cols []string
	for f := range reflect.TypeFor[audit.Record]().Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		cols = append(cols, name)
	}
	return append(cols, "dt", "hour")
}

func TestEmptyLog(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(dir string) error
	}{
		{"no audit folder", func(string) error { return nil }},
		{"empty audit folder", func(dir string) error { return os.MkdirAll(filepath.Join(dir, "audit"), 0o700) }},
		{"empty partition", func(dir string) error {
			return os.MkdirAll(filepath.Join(dir, "audit", "dt=2025-06-22", "hour=15"), 0o700)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := tc.setup(dir); err != nil {
				t.Fatal(err)
			}
			e := openEngine(t, dir)
			res := run(t, e, "SELECT * FROM audit_log")
			if !slices.Equal(res.Columns, recordColumns()) {
				t.Errorf("columns %v\nwant    %v", res.Columns, recordColumns())
			}
			if len(res.Rows) != 0 {
				t.Errorf("rows %v", res.Rows)
			}
			if got := run(t, e, "SELECT count(*) AS n FROM audit_log"); !reflect.DeepEqual(got.Rows, [][]any{{int64(0)}}) {
				t.Errorf("count = %v", got.Rows)
			}
			for _, q := range queries.All() {
				res, err := e.Query(context.Background(), runnableSQL(t, q))
				if err != nil {
					t.Errorf("%s on an empty log: %v", q.Name, err)
				} else if len(res.Rows) != 0 {
					t.Errorf("%s on an empty log: %v", q.Name, res.Rows)
				}
			}
		})
	}
}

func TestViewRoundTripsRecords(t *testing.T) {
	dir := t.TempDir()
	ts := time.Date(2025, 6, 22, 7, 30, 0, 123e6, time.UTC)
	r := audittest.Record(ts, audittest.Tool("delete_issue"), audittest.Denied("destructive_flag_missing"),
		func(r *audit.Record) {
			r.ScopesProvided = []string{"issues:read", "issues:write"}
			r.DurationMS = 17
			r.IdempotentReplay = true
		}, audittest.Client("https://claude.ai/oauth/mcp-oauth-client-metadata"))
	writeRecords(t, dir, []audit.Record{r})
	e := openEngine(t, dir)
	res := run(t, e, "SELECT * FROM audit_log")
	if len(res.Rows) != 1 {
		t.Fatalf("rows %v", res.Rows)
	}
	got := map[string]any{}
	for i, c := range res.Columns {
		got[c] = res.Rows[0][i]
	}
	want := map[string]any{
		"event_id": r.EventID, "event_version": audit.EventVersion, "timestamp": "2025-06-22T07:30:00.123Z",
		"tool": "delete_issue", "outcome": "denied", "reason": "destructive_flag_missing",
		"scopes_provided": []any{"issues:read", "issues:write"}, "scopes_required": []any{"issues:write"},
		"workspace_id": "demo", "user_id": "dev", "token_id": "tok_test",
		"read_only": false, "destructive": true, "confirm_present": false,
		"resource_id": "AAC-1", "idempotency_key_hmac": "", "idempotent_replay": true,
		"request_id": "req-1", "jsonrpc_id": "1", "client_name": "audittest", "client_version": "1.0.0",
		"protocol_version": "2025-11-25", "user_agent": "audittest/1.0", "source_ip": "127.0.0.1",
		"args_hmac": r.ArgsHMAC, "duration_ms": int64(17), "transport": "mcp",
		"client_id": "https://claude.ai/oauth/mcp-oauth-client-metadata", "event_type": "tool_call", "action": "",
		"confirmation": "",
		// A current line has no legacy columns: NULL, as in Athena.
		"args_sha256": nil, "idempotency_key": nil,
		// Partition values stay strings: hour=07 is "07", not 7.
		"dt": "2025-06-22", "hour": "07",
	}
	if !reflect.DeepEqual(got, want) {
		for k := range want {
			if !reflect.DeepEqual(got[k], want[k]) {
				t.Errorf("%s = %#v, want %#v", k, got[k], want[k])
			}
		}
	}
}

func TestViewSkipsTornLineAndSeesNewFiles(t *testing.T) {
	dir := t.TempDir()
	ts := time.Date(2025, 6, 22, 15, 30, 0, 0, time.UTC)
	writeRecords(t, dir, []audit.Record{audittest.Record(ts), audittest.Record(ts)})
	e := openEngine(t, dir)
	count := func() any { return run(t, e, "SELECT count(*) FROM audit_log").Rows[0][0] }
	if got := count(); got != int64(2) {
		t.Fatalf("count = %v, want 2", got)
	}
	// A crash mid-write leaves a torn last line in a file of its own.
	line, _ := audit.MarshalLine(audittest.Record(ts))
	torn := filepath.Join(dir, "audit", "dt=2025-06-22", "hour=15", "crashed.json")
	if err := os.WriteFile(torn, append(append([]byte{}, line...), line[:50]...), 0o600); err != nil {
		t.Fatal(err)
	}
	// Files written after Open are seen by the next query.
	writeRecords(t, dir, []audit.Record{audittest.Record(ts.Add(time.Hour))})
	if got := count(); got != int64(4) {
		t.Fatalf("count = %v, want 4 (2 + 1 whole line of the crashed file + 1 new)", got)
	}
}

func TestTrinoMacros(t *testing.T) {
	e := openEngine(t, t.TempDir())
	tests := []struct {
		sql  string
		want any
	}{
		{`SELECT from_iso8601_timestamp('2025-06-22T15:30:00.123Z') = TIMESTAMPTZ '2025-06-22 15:30:00.123+00'`, true},
		{`SELECT date_format(from_iso8601_timestamp('2025-06-22T15:04:05.000Z'), '%Y-%m-%d %H:%i:%s')`, "2025-06-22 15:04:05"},
		{`SELECT to_unixtime(from_iso8601_timestamp('1970-01-01T00:01:00.000Z'))`, float64(60)},
		{`SELECT cardinality(['a', 'b', 'c'])`, int64(3)},
		{`SELECT element_at(['a', 'b', 'c'], 2)`, "b"},
		{`SELECT array_join(['a', 'b'], ',')`, "a,b"},
		{`SELECT regexp_like('delete_issue', '^delete_')`, true},
		{`SELECT approx_distinct(x) FROM (VALUES (1), (2), (2)) t(x)`, int64(2)},
		{`SELECT date_trunc('day', from_iso8601_timestamp('2025-06-22T23:30:00.000Z')) = TIMESTAMPTZ '2025-06-22 00:00:00+00'`, true},
		{`SELECT current_setting('TimeZone')`, "UTC"},
	}
	for _, tt := range tests {
		res := run(t, e, tt.sql)
		if len(res.Rows) != 1 || !reflect.DeepEqual(res.Rows[0][0], tt.want) {
			t.Errorf("%s = %#v, want %#v", tt.sql, res.Rows, tt.want)
		}
	}
}

func TestQueryErrors(t *testing.T) {
	e := openEngine(t, t.TempDir())
	for _, q := range []string{"", "   ", "SELEC 1", "SELECT no_such_column FROM audit_log", "SELECT * FROM no_such_table"} {
		_, err := e.Query(context.Background(), q)
		if !apperr.Is(err, apperr.InvalidArguments) {
			t.Errorf("%q: err = %v, want invalid_arguments", q, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.Query(ctx, "SELECT 1"); err == nil {
		t.Error("query with a cancelled context succeeded")
	}
	// The engine still works after errors.
	if res := run(t, e, "SELECT 42 AS answer"); !reflect.DeepEqual(res, &query.Result{Columns: []string{"answer"}, Rows: [][]any{{int64(42)}}}) {
		t.Errorf("result %+v", res)
	}
}

func TestValueConversion(t *testing.T) {
	e := openEngine(t, t.TempDir())
	res := run(t, e, `SELECT DATE '2025-06-22' AS d, TIMESTAMPTZ '2025-06-22 15:30:00.5+00' AS ts,
		1.25::DECIMAL(5,2) AS dec, 'x'::VARCHAR AS s, NULL AS n, 12::HUGEINT AS h, 'nan'::DOUBLE AS nan,
		{'a': 1} AS st, [1, 2] AS l, 3::TINYINT AS tiny, true AS b`)
	want := []any{"2025-06-22", "2025-06-22T15:30:00.5Z", 1.25, "x", nil, int64(12), "NaN",
		map[string]any{"a": int64(1)}, []any{int64(1), int64(2)}, int64(3), true}
	if !reflect.DeepEqual(res.Rows[0], want) {
		t.Errorf("row %#v\nwant %#v", res.Rows[0], want)
	}
}

// TestViewOverCompactedHours: compacted hours are read from Parquet, open hours from
// JSON, and a crash between publishing the Parquet file and removing the JSON files
// it replaced counts nothing twice.
func TestViewOverCompactedHours(t *testing.T) {
	dir := t.TempDir()
	h := time.Date(2025, 6, 22, 10, 0, 0, 0, time.UTC)
	var recs []audit.Record
	for i := range 30 {
		recs = append(recs, audittest.Record(h.Add(time.Duration(i)*3*time.Minute)))
	}
	writeRecords(t, dir, recs[:15])
	writeRecords(t, dir, recs[15:])
	writeRecords(t, dir, []audit.Record{audittest.Record(h.Add(2 * time.Hour))})

	// Keep copies of hour 10's JSON files to put back after compaction: the state a
	// crash right after the rename leaves.
	hour10 := filepath.Join(dir, "audit", "dt=2025-06-22", "hour=10")
	jsons, err := filepath.Glob(filepath.Join(hour10, "*.json"))
	if err != nil || len(jsons) != 2 {
		t.Fatalf("hour 10 files %v, %v", jsons, err)
	}
	saved := map[string][]byte{}
	for _, j := range jsons {
		if saved[j], err = os.ReadFile(j); err != nil {
			t.Fatal(err)
		}
	}
	e := openEngine(t, dir)
	const q = "SELECT hour, count(*) AS n, count(DISTINCT event_id) AS ids FROM audit_log GROUP BY hour ORDER BY hour"
	want := [][]any{{"10", int64(20), int64(20)}, {"11", int64(10), int64(10)}, {"12", int64(1), int64(1)}}
	if got := run(t, e, q).Rows; !reflect.DeepEqual(got, want) {
		t.Fatalf("before compaction %v, want %v", got, want)
	}
	stats, err := file.Compact(dir, h.Add(2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if stats.Partitions != 2 {
		t.Fatalf("compaction %+v", stats)
	}
	if got := run(t, e, q).Rows; !reflect.DeepEqual(got, want) {
		t.Fatalf("after compaction %v, want %v", got, want)
	}
	for path, b := range saved {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if got := run(t, e, q).Rows; !reflect.DeepEqual(got, want) {
		t.Fatalf("with replaced JSON files back %v, want %v", got, want)
	}
	// The saved queries and the record columns work over Parquet too.
	res := run(t, e, "SELECT * FROM audit_log WHERE hour = '10' ORDER BY event_id LIMIT 1")
	if !slices.Equal(res.Columns, recordColumns()) {
		t.Errorf("columns over Parquet %v", res.Columns)
	}
	if res.Rows[0][0] != recs[0].EventID || !reflect.DeepEqual(res.Rows[0][6], []any{"issues:read"}) {
		t.Errorf("first row over Parquet %v", res.Rows[0])
	}
}

// TestViewOverVersion10Files: hours a 1.0 writer left (JSON lines and Parquet files
// without client_id, event_type and action) stay queryable next to 1.1 records. The
// missing columns are NULL, as Athena reads the same Parquet files, and the
// coalesce the saved queries use makes them personal-token tool calls.
func TestViewOverVersion10Files(t *testing.T) {
	h := time.Date(2025, 6, 22, 10, 0, 0, 0, time.UTC)
	mkdir := func(t *testing.T, dir string, hour time.Time) string {
		d := filepath.Join(dir, file.Subdir, "dt="+hour.Format(time.DateOnly), hour.Format("hour=15"))
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		return d
	}
	legacyJSON := func(t *testing.T, dir string, recs ...audit.Record) {
		var b []byte
		for _, r := range recs {
			b = append(b, audittest.LegacyLine(r)...)
		}
		if err := os.WriteFile(filepath.Join(mkdir(t, dir, h), "legacy.json"), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	legacyParquet := func(t *testing.T, dir string, recs ...audit.Record) {
		audittest.WriteLegacyParquet(t, filepath.Join(mkdir(t, dir, h.Add(time.Hour)), "compacted-"+audit.NewEventIDAt(h)+".parquet"), recs)
	}
	j1, j2 := audittest.Record(h), audittest.Record(h.Add(time.Minute), audittest.Tool("delete_issue"))
	p1 := audittest.Record(h.Add(time.Hour), audittest.Tool("delete_issue"))
	cur := audittest.Record(h.Add(2*time.Hour), audittest.Tool("delete_issue"), audittest.Client("c_1"))
	authz := audittest.Record(h.Add(2*time.Hour), audittest.Authorization(audit.ActionTokenIssued), audittest.Client("c_1"))

	const q = `SELECT event_version, client_id, event_type, action, count(*) AS n,
		count_if(coalesce(event_type, 'tool_call') = 'tool_call') AS tool_calls,
		count_if(coalesce(client_id, '') = '') AS personal
		FROM audit_log GROUP BY ALL ORDER BY event_version, event_type NULLS FIRST`
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string)
		want  [][]any
	}{
		{"only 1.0 Parquet", func(t *testing.T, dir string) { legacyParquet(t, dir, p1) },
			[][]any{{"1.0", nil, nil, nil, int64(1), int64(1), int64(1)}}},
		{"only 1.0 JSON", func(t *testing.T, dir string) { legacyJSON(t, dir, j1, j2) },
			[][]any{{"1.0", nil, nil, nil, int64(2), int64(2), int64(2)}}},
		{"1.0 JSON and Parquet with 1.1 JSON", func(t *testing.T, dir string) {
			legacyJSON(t, dir, j1, j2)
			legacyParquet(t, dir, p1)
			writeRecords(t, dir, []audit.Record{cur, authz})
		}, [][]any{
			{"1.0", nil, nil, nil, int64(3), int64(3), int64(3)},
			{audit.EventVersion, "c_1", "authorization", "token_issued", int64(1), int64(0), int64(0)},
			{audit.EventVersion, "c_1", "tool_call", "", int64(1), int64(1), int64(0)},
		}},
		{"1.0 and 1.1 Parquet", func(t *testing.T, dir string) {
			legacyParquet(t, dir, p1)
			writeRecords(t, dir, []audit.Record{cur})
			if _, err := file.Compact(dir, h.Add(3*time.Hour)); err != nil {
				t.Fatal(err)
			}
		}, [][]any{
			{"1.0", nil, nil, nil, int64(1), int64(1), int64(1)},
			{audit.EventVersion, "c_1", "tool_call", "", int64(1), int64(1), int64(0)},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tt.setup(t, dir)
			e := openEngine(t, dir)
			if got := run(t, e, q).Rows; !reflect.DeepEqual(got, tt.want) {
				t.Errorf("rows %v\nwant %v", got, tt.want)
			}
			res := run(t, e, "SELECT * FROM audit_log")
			if !slices.Equal(res.Columns, recordColumns()) {
				t.Errorf("columns %v", res.Columns)
			}
			for _, sq := range queries.All() {
				if _, err := e.Query(context.Background(), runnableSQL(t, sq)); err != nil {
					t.Errorf("saved query %s: %v", sq.Name, err)
				}
			}
		})
	}
}

// Records of 1.1 (the plain args_sha256, the idempotency key in clear) and of 1.2
// (their HMACs) are queried side by side: each version's own columns hold its
// values, and the other's read NULL, as in Athena.
func TestViewOverVersion11And12Lines(t *testing.T) {
	h := time.Date(2025, 6, 22, 10, 0, 0, 0, time.UTC)
	dir := t.TempDir()
	old := audittest.Record(h, audittest.Tool("create_issue"), func(r *audit.Record) { r.IdempotencyKey = "retry-1" })
	d := filepath.Join(dir, file.Subdir, "dt="+h.Format(time.DateOnly), "hour=10")
	if err := os.MkdirAll(d, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "v11.json"), audittest.V11Line(old), 0o600); err != nil {
		t.Fatal(err)
	}
	cur := audittest.Record(h.Add(time.Minute), audittest.Tool("create_issue"), func(r *audit.Record) {
		r.IdempotencyKeyHMAC = strings.Repeat("ab", 32)
	})
	writeRecords(t, dir, []audit.Record{cur})
	e := openEngine(t, dir)
	got := run(t, e, `SELECT event_version, args_sha256, idempotency_key, args_hmac, idempotency_key_hmac
		FROM audit_log ORDER BY event_version`).Rows
	want := [][]any{
		{"1.1", old.ArgsHMAC, "retry-1", nil, nil},
		{audit.EventVersion, nil, nil, cur.ArgsHMAC, cur.IdempotencyKeyHMAC},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("rows %v\nwant %v", got, want)
	}
}

// A 1.2 line, written before confirmation existed, reads NULL there, as Athena
// reads the column a file lacks; the saved queries' coalesce to the empty string
// gives it its meaning (no confirmation recorded), next to 1.3 lines that carry
// flag or elicited.
func TestViewOverVersion12Lines(t *testing.T) {
	h := time.Date(2025, 6, 22, 10, 0, 0, 0, time.UTC)
	dir := t.TempDir()
	old := audittest.Record(h, audittest.Tool("delete_issue"), audittest.Confirmed(true))
	d := filepath.Join(dir, file.Subdir, "dt="+h.Format(time.DateOnly), "hour=10")
	if err := os.MkdirAll(d, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "v12.json"), audittest.V12Line(old), 0o600); err != nil {
		t.Fatal(err)
	}
	flag := audittest.Record(h.Add(time.Minute), audittest.Tool("delete_issue"), audittest.Confirmed(true),
		audittest.Confirmation(audit.ConfirmationFlag))
	asked := audittest.Record(h.Add(2*time.Minute), audittest.Tool("delete_issue"), audittest.Confirmed(true),
		audittest.Confirmation(audit.ConfirmationElicited))
	writeRecords(t, dir, []audit.Record{flag, asked})
	e := openEngine(t, dir)
	got := run(t, e, `SELECT event_version, confirmation, coalesce(confirmation, '') AS c
		FROM audit_log ORDER BY "timestamp"`).Rows
	want := [][]any{
		{audit.EventVersion12, nil, ""},
		{audit.EventVersion, audit.ConfirmationFlag, audit.ConfirmationFlag},
		{audit.EventVersion, audit.ConfirmationElicited, audit.ConfirmationElicited},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("rows %v\nwant %v", got, want)
	}
}
