package security

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/mcpserver"
	"github.com/aacworkflow/aacmcp/test/load/server"
)

// marker is planted in hostile arguments: arguments are audited only as a digest,
// so it must never appear in a record.
const marker = "PII-MARKER-7f3a"

// TestHostileArguments sends argument documents built to hurt over both
// transports: each gets its stable code (never a 5xx), exactly one audit record
// under 1 KB, and the record holds no argument text.
func TestHostileArguments(t *testing.T) {
	e := newEnv(t, mcpserverConfig())
	issue := e.w.Issue.ID
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	// Arguments that are not JSON make a /mcp body that is not JSON either: that is
	// a JSON-RPC parse error (-32700), no tool call and so no audit record.
	const parseError = "jsonrpc:-32700"
	cases := []struct {
		name, tool, args string
		want             []string
	}{
		{"unknown field", "create_issue", `{"title":"` + marker + `","admin":true}`, []string{"invalid_arguments"}},
		{"unknown field on a read", "list_issues", `{"workspace":"other","note":"` + marker + `"}`, []string{"invalid_arguments"}},
		{"nested 33 deep", "create_issue", `{"title":"x","labels":` + deep(33) + `}`, []string{"invalid_arguments"}},
		{"nested 5000 deep", "create_issue", `{"title":"x","labels":` + deep(5000) + `}`, []string{"invalid_arguments"}},
		{"unbalanced nesting", "create_issue", `{"title":"x","labels":` + strings.Repeat("[", 4000) + `}`, []string{"invalid_arguments", parseError}},
		{"title too long", "create_issue", `{"title":"` + marker + strings.Repeat("t", 300) + `"}`, []string{"invalid_arguments"}},
		{"description over 64 KiB", "create_issue", `{"title":"x","description":"` + marker + strings.Repeat("d", 65537) + `"}`, []string{"invalid_arguments"}},
		{"arguments over 256 KiB", "comment_issue", `{"issue_id":"` + issue + `","body":"` + marker + strings.Repeat("b", 300<<10) + `"}`, []string{"invalid_arguments"}},
		{"comment over 64 KiB", "comment_issue", `{"issue_id":"` + issue + `","body":"` + marker + strings.Repeat("b", 70000) + `"}`, []string{"invalid_arguments"}},
		{"too many labels", "create_issue", `{"title":"x","labels":[` + strings.Repeat(`"l",`, 25) + `"l"]}`, []string{"invalid_arguments"}},
		{"huge number", "list_issues", `{"limit":1e400}`, []string{"invalid_arguments"}},
		{"negative limit", "list_issues", `{"limit":-1}`, []string{"invalid_arguments"}},
		{"float limit", "list_issues", `{"limit":2.5}`, []string{"invalid_arguments"}},
		{"string confirm", "delete_issue", `{"issue_id":"` + issue + `","confirm":"true"}`, []string{"destructive_flag_missing"}},
		{"numeric confirm", "delete_issue", `{"issue_id":"` + issue + `","confirm":1}`, []string{"destructive_flag_missing"}},
		// A repeated name is ambiguous (first or last?): refused before confirm is read.
		{"duplicate confirm", "delete_issue", `{"issue_id":"` + issue + `","confirm":true,"confirm":false}`, []string{"invalid_arguments"}},
		{"duplicate confirm, true last", "delete_issue", `{"issue_id":"` + issue + `","confirm":false,"confirm":true}`, []string{"invalid_arguments"}},
		{"arguments are an array", "list_issues", `[]`, []string{"invalid_arguments"}},
		{"arguments are a string", "list_issues", `"` + marker + `"`, []string{"invalid_arguments"}},
		{"trailing garbage", "list_issues", `{} {}`, []string{"invalid_arguments", parseError}},
		{"NUL in a title", "create_issue", `{"title":"a\u0000b` + marker + `"}`, []string{"", "invalid_arguments"}},
		{"invalid UTF-8", "create_issue", "{\"title\":\"\xff\xfe" + marker + "\"}", []string{"", "invalid_arguments"}},
		{"lone surrogate", "create_issue", `{"title":"\ud800` + marker + `"}`, []string{"", "invalid_arguments"}},
		{"SQL in an id", "get_issue", `{"issue_id":"1' OR '1'='1"}`, []string{"invalid_arguments"}},
		{"SQL in a query", "list_issues", `{"query":"%' OR 1=1; DROP TABLE issues; --` + marker + `"}`, []string{""}},
		{"LIKE wildcards", "list_issues", `{"query":"%_%\\"}`, []string{""}},
		{"path in a key", "get_issue", `{"issue_id":"../../etc/passwd"}`, []string{"invalid_arguments"}},
		{"forged cursor", "list_issues", `{"cursor":"eyJ3cyI6Im90aGVyIn0"}`, []string{"invalid_arguments"}},
		{"cursor of garbage", "list_comments", `{"issue_id":"` + issue + `","cursor":"!!!` + marker + `"}`, []string{"invalid_arguments"}},
	}
	for _, tr := range transports {
		for _, tc := range cases {
			t.Run(tr+"/"+tc.name, func(t *testing.T) {
				before := len(e.sink.Records())
				r, err := e.post(tr, tc.tool, tc.args, http.Header{"Authorization": {"Bearer " + e.admin}})
				if err != nil {
					t.Fatal(err)
				}
				if r.Status >= 500 {
					t.Fatalf("status %d: %s", r.Status, r.Body)
				}
				if !contains(tc.want, r.Code) || (r.Code == parseError) != (tr == server.MCP && contains(tc.want, parseError)) {
					t.Errorf("code %q (HTTP %d, %q), want one of %q", r.Code, r.Status, r.Message, tc.want)
				}
				if goText(r.Body) {
					t.Errorf("the answer leaks decoder internals: %s", r.Body)
				}
				recs := e.sink.Records()[before:]
				if r.Code == parseError {
					if len(recs) != 0 {
						t.Errorf("%d audit records for a body that is not JSON", len(recs))
					}
					return
				}
				if len(recs) != 1 {
					t.Fatalf("%d audit records, want 1", len(recs))
				}
				checkRecordHygiene(t, recs[0])
			})
		}
	}
}

// checkRecordHygiene: under 1 KB on the wire, and no argument text in it.
func checkRecordHygiene(t *testing.T, r audit.Record) {
	t.Helper()
	line, err := audit.MarshalLine(r)
	if err != nil {
		t.Fatalf("record does not encode: %v", err)
	}
	if len(line) >= 1024 {
		t.Errorf("audit record is %d bytes, want < 1024: %s", len(line), line)
	}
	if bytes.Contains(line, []byte(marker)) {
		t.Errorf("audit record holds argument text: %s", line)
	}
	if len(r.ArgsHMAC) != 64 {
		t.Errorf("args_hmac %q is not an HMAC-SHA256", r.ArgsHMAC)
	}
}

// TestHostileRequests covers what arrives before the arguments: oversized bodies,
// foreign Origin and Host, batches, malformed JSON-RPC, and hostile headers.
func TestHostileRequests(t *testing.T) {
	e := newEnv(t, mcpserver.Config{ServerName: "aacmcp-security", Logger: discard, AllowedOrigins: []string{"https://app.example.com"}})
	auth := http.Header{"Authorization": {"Bearer " + e.admin}}
	big := bytes.Repeat([]byte("x"), mcpserver.DefaultMaxBodyBytes+1)

	t.Run("oversized bodies are 413 before parsing or auth", func(t *testing.T) {
		for _, url := range []string{"/mcp", "/tools/create_issue"} {
			for _, hdr := range []http.Header{auth, nil} {
				before := len(e.sink.Records())
				r, err := e.raw(http.MethodPost, url, big, hdr, -1)
				if err != nil {
					t.Fatal(err)
				}
				if r.status != http.StatusRequestEntityTooLarge {
					t.Errorf("%s with %d bytes: status %d, want 413", url, len(big), r.status)
				}
				// Chunked (no Content-Length): the limit holds while reading.
				r, err = e.raw(http.MethodPost, url, big, hdr, 0)
				if err != nil {
					t.Fatal(err)
				}
				if r.status != http.StatusRequestEntityTooLarge {
					t.Errorf("%s chunked with %d bytes: status %d, want 413", url, len(big), r.status)
				}
				if n := len(e.sink.Records()) - before; n != 0 {
					t.Errorf("%s: %d audit records for bodies never read as calls", url, n)
				}
			}
		}
	})

	t.Run("origin", func(t *testing.T) {
		call := e.body(server.MCP, "list_issues", `{}`)
		for _, tc := range []struct {
			origin string
			want   int
		}{
			{"https://evil.example", http.StatusForbidden},
			{"null", http.StatusForbidden},
			{"https://app.example.com.evil.example", http.StatusForbidden},
			{"https://app.example.com", http.StatusOK},
			{"", http.StatusOK},
		} {
			for _, url := range []string{"/mcp", "/tools/list_issues"} {
				body := call
				if url != "/mcp" {
					body = []byte(`{}`)
				}
				hdr := auth.Clone()
				if tc.origin != "" {
					hdr.Set("Origin", tc.origin)
				}
				before := len(e.sink.Records())
				r, err := e.raw(http.MethodPost, url, body, hdr, len(body))
				if err != nil {
					t.Fatal(err)
				}
				if r.status != tc.want {
					t.Errorf("%s Origin %q: status %d, want %d", url, tc.origin, r.status, tc.want)
				}
				if n := len(e.sink.Records()) - before; tc.want == http.StatusForbidden && n != 0 {
					t.Errorf("%s Origin %q: refused request left %d audit records", url, tc.origin, n)
				}
			}
		}
	})

	t.Run("DNS rebinding: foreign Host", func(t *testing.T) {
		for _, host := range []string{"evil.example", "evil.example:80", "127.0.0.1.evil.example", "localhost.evil.example"} {
			for _, url := range []string{"/mcp", "/tools/list_issues", "/tools", "/healthz"} {
				hdr := auth.Clone()
				hdr.Set("Host", host)
				r, err := e.raw(http.MethodPost, url, []byte(`{}`), hdr, 2)
				if err != nil {
					t.Fatal(err)
				}
				if r.status != http.StatusForbidden {
					t.Errorf("%s Host %q: status %d, want 403", url, host, r.status)
				}
			}
		}
	})

	t.Run("malformed JSON-RPC", func(t *testing.T) {
		for _, tc := range []struct {
			name, body string
		}{
			{"batch", `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_issues"}}]`},
			{"not JSON", `{"jsonrpc":`},
			{"deeper than the decoder allows", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_issues","arguments":{"a":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}}}`},
			{"params not an object", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"list_issues"}`},
			{"name not a string", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":["list_issues"]}}`},
			{"object id", `{"jsonrpc":"2.0","id":{"$gt":""},"method":"tools/call","params":{"name":"list_issues","arguments":{}}}`},
		} {
			before := len(e.sink.Records())
			r, err := e.raw(http.MethodPost, "/mcp", []byte(tc.body), auth, len(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if r.status >= 500 {
				t.Errorf("%s: status %d: %s", tc.name, r.status, r.body)
			}
			if goText(r.body) {
				t.Errorf("%s: the answer leaks decoder internals: %s", tc.name, r.body)
			}
			if !bytes.Contains(r.body, []byte(`"jsonrpc":"2.0"`)) {
				t.Errorf("%s: answer is not JSON-RPC: %s", tc.name, r.body)
			}
			if n := len(e.sink.Records()) - before; n > 1 {
				t.Errorf("%s: %d audit records, want at most 1", tc.name, n)
			}
		}
	})

	t.Run("hostile headers stay out of the record's budget", func(t *testing.T) {
		long := strings.Repeat("u", 10000)
		hdr := auth.Clone()
		hdr.Set("User-Agent", long)
		hdr.Set("X-Request-Id", "evil\tid "+long)
		hdr.Set("MCP-Protocol-Version", "2025-11-25")
		body := `{"jsonrpc":"2.0","id":"` + strings.Repeat("i", 5000) + `","method":"tools/call","params":{"name":"list_issues","arguments":{},"_meta":{"io.modelcontextprotocol/clientInfo":{"name":"` + long + `","version":"` + long + `"}}}}`
		before := len(e.sink.Records())
		r, err := e.raw(http.MethodPost, "/mcp", []byte(body), hdr, len(body))
		if err != nil {
			t.Fatal(err)
		}
		if r.status != http.StatusOK {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		recs := e.sink.Records()[before:]
		if len(recs) != 1 {
			t.Fatalf("%d records", len(recs))
		}
		checkRecordHygiene(t, recs[0])
		if strings.ContainsAny(recs[0].RequestID, " \t") {
			t.Errorf("request_id %q kept a hostile X-Request-Id", recs[0].RequestID)
		}
	})
}

type rawResponse struct {
	status int
	body   []byte
}

// raw sends a request as is. contentLength -1 sets it from the body; 0 sends the
// body chunked (no Content-Length).
func (e *env) raw(method, path string, body []byte, hdr http.Header, contentLength int) (rawResponse, error) {
	var rd = bytes.NewReader(body)
	req, err := http.NewRequestWithContext(context.Background(), method, e.c.Base+path, rd)
	if err != nil {
		return rawResponse{}, err
	}
	switch contentLength {
	case 0:
		req.ContentLength = -1
		req.Body = readerOnly{rd}
	case -1:
	default:
		req.ContentLength = int64(contentLength)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, vs := range hdr {
		if k == "Host" {
			req.Host = vs[0]
			continue
		}
		req.Header[k] = vs
	}
	resp, err := e.c.HTTP.Do(req)
	if err != nil {
		return rawResponse{}, err
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, err = buf.ReadFrom(resp.Body)
	return rawResponse{status: resp.StatusCode, body: buf.Bytes()}, err
}

// readerOnly hides the concrete reader so net/http cannot learn the length and
// sends the body chunked.
type readerOnly struct{ r *bytes.Reader }

func (r readerOnly) Read(p []byte) (int, error) { return r.r.Read(p) }
func (r readerOnly) Close() error               { return nil }

// goText spots Go implementation text in an answer: decoder errors, struct dumps.
func goText(b []byte) bool {
	for _, s := range []string{"Go struct", "Go value", "json: ", "&{", "goroutine ", "runtime error"} {
		if bytes.Contains(b, []byte(s)) {
			return true
		}
	}
	return false
}

func contains(set []string, s string) bool {
	for _, v := range set {
		if v == s {
			return true
		}
	}
	return false
}
