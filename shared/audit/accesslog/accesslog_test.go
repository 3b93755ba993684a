package accesslog

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/aacworkflow/aacmcp/shared/audit/record"
	"github.com/aacworkflow/aacmcp/shared/catalog"
)

// sampleLine renders Format the way API Gateway would, with vars filled in
// and "-" for everything not given.
func sampleLine(vars map[string]string) string {
	out := Format
	for _, v := range []string{
		"$context.requestTimeEpoch", "$context.extendedRequestId", "$context.requestId", "$context.identity.sourceIp",
		"$context.identity.userAgent", "$context.httpMethod", "$context.resourcePath",
		"$context.path", "$context.stage", "$context.protocol", "$context.status",
		"$context.error.responseType", "$context.responseLatency", "$context.integration.latency",
		"$context.authorizer.status", "$context.authorizer.latency", "$context.authorizer.requestId",
		"$context.authorizer.error",
	} {
		val, ok := vars[v]
		if !ok {
			val = "-"
		}
		out = strings.ReplaceAll(out, `"`+v+`"`, `"`+val+`"`)
	}
	return out
}

func TestFormatIsJSON(t *testing.T) {
	line := sampleLine(nil)
	if strings.Contains(line, "$context") {
		t.Fatalf("a variable of the format is not covered by the test: %s", line)
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatalf("format with values is not JSON: %v", err)
	}
	// Every field the parser reads is in the format.
	b, _ := json.Marshal(Entry{})
	var fields map[string]string
	_ = json.Unmarshal(b, &fields)
	for k := range fields {
		if _, ok := m[k]; !ok {
			t.Errorf("Entry field %s is not in Format", k)
		}
	}
}

func TestAccessLogRecord(t *testing.T) {
	cat := catalog.New(catalog.Deps{})
	base := map[string]string{
		"$context.extendedRequestId":    "0b1c2d3e-aaaa-bbbb-cccc-000000000001",
		"$context.identity.sourceIp":    "198.51.100.20",
		"$context.identity.userAgent":   "curl/8.0",
		"$context.requestTimeEpoch":     "1772366400123",
		"$context.httpMethod":           "POST",
		"$context.status":               "401",
		"$context.error.responseType":   "UNAUTHORIZED",
		"$context.responseLatency":      "4",
		"$context.stage":                "prod",
		"$context.resourcePath":         "/tools/{name}",
		"$context.path":                 "/prod/tools/delete_issue",
		"$context.authorizer.status":    "-",
		"$context.authorizer.latency":   "-",
		"$context.authorizer.requestId": "-",
	}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	tests := []struct {
		name        string
		vars        map[string]string
		want        bool
		tool        string
		transport   string
		scopes      []string
		destructive bool
	}{
		{name: "rest tool without header", vars: base, want: true, tool: "delete_issue", transport: "rest", scopes: []string{"issues:write"}, destructive: true},
		{name: "mcp without header", vars: with("$context.resourcePath", "/mcp", "$context.path", "/prod/mcp"), want: true, tool: "", transport: "mcp", scopes: []string{}},
		{name: "unknown tool", vars: with("$context.path", "/prod/tools/nope"), want: true, tool: "nope", transport: "rest", scopes: []string{}},
		{name: "authorizer ran (it audited)", vars: with("$context.authorizer.status", "401", "$context.authorizer.latency", "12", "$context.authorizer.requestId", "abc"), want: false},
		{name: "success", vars: with("$context.status", "200", "$context.authorizer.status", "200"), want: false},
		{name: "forbidden", vars: with("$context.status", "403"), want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, ok := Parse([]byte(sampleLine(tt.vars)))
			if !ok {
				t.Fatal("line not parsed")
			}
			r, ok := e.Record(cat)
			if ok != tt.want {
				t.Fatalf("Record ok = %v, want %v", ok, tt.want)
			}
			if !ok {
				return
			}
			if err := r.Validate(); err != nil {
				t.Fatalf("record invalid: %v", err)
			}
			if r.Outcome != "denied" || r.Reason != "invalid_token" || r.Tool != tt.tool || r.Transport != tt.transport {
				t.Errorf("record = %+v", r)
			}
			if r.Timestamp != "2026-03-01T12:00:00.123Z" || r.SourceIP != "198.51.100.20" || r.UserAgent != "curl/8.0" ||
				r.RequestID != "0b1c2d3e-aaaa-bbbb-cccc-000000000001" || r.DurationMS != 4 {
				t.Errorf("record = %+v", r)
			}
			if !slices.Equal(r.ScopesRequired, tt.scopes) || r.Destructive != tt.destructive || r.ScopesProvided == nil {
				t.Errorf("scopes/destructive = %v %v %v", r.ScopesRequired, r.Destructive, r.ScopesProvided)
			}
			// Delivered twice, the same entry must give the same event id (dedup key).
			r2, _ := e.Record(cat)
			if r2.EventID != r.EventID {
				t.Errorf("event id not deterministic: %s vs %s", r.EventID, r2.EventID)
			}
		})
	}
}

func TestParseIgnoresOtherLines(t *testing.T) {
	for _, line := range []string{
		"",
		"START RequestId: 123 Version: $LATEST",
		`{"level":"INFO","msg":"hello"}`,
		`{"requestId":"-","status":"401"}`,
		`[1,2,3]`,
		`{"requestId":"x","status":`,
	} {
		if _, ok := Parse([]byte(line)); ok {
			t.Errorf("Parse(%q) accepted", line)
		}
	}
}

func FuzzAccessLogRecord(f *testing.F) {
	f.Add([]byte(sampleLine(map[string]string{"$context.extendedRequestId": "r1", "$context.status": "401", "$context.resourcePath": "/tools/{name}", "$context.path": "/prod/tools/get_issue"})))
	f.Add([]byte(`{"extendedRequestId":"r","status":"401","requestTime":"-5","path":"/tools/%zz"}`))
	f.Add([]byte(`{"extendedRequestId":"r","status":"401","userAgent":"` + strings.Repeat("é", 200) + `"}`))
	f.Add([]byte("not json"))
	cat := catalog.New(catalog.Deps{})
	f.Fuzz(func(t *testing.T, line []byte) {
		e, ok := Parse(line)
		if !ok {
			return
		}
		r, ok := e.Record(cat)
		if !ok {
			return
		}
		if err := r.Validate(); err != nil {
			t.Fatalf("record from %q is invalid: %v", line, err)
		}
		if len(r.UserAgent) > record.MaxText || len(r.Tool) > record.MaxText || len(r.SourceIP) > record.MaxText || len(r.RequestID) > record.MaxText {
			t.Fatalf("unbounded text in %+v", r)
		}
	})
}
