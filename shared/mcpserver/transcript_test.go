package mcpserver_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/guard"
	gt "github.com/aacworkflow/aacmcp/shared/guard/guardtest"
	"github.com/aacworkflow/aacmcp/shared/mcpserver"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

var (
	reUUID  = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	reULID  = regexp.MustCompile(`\b[0-7][0-9A-HJKMNP-TV-Z]{25}\b`)
	reTime  = regexp.MustCompile(`\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})`)
	reLocal = regexp.MustCompile(`http://127\.0\.0\.1:\d+`)
)

// normalize replaces what differs from run to run (ids, times, the port) and a
// tools/list result's tools (checked against the catalog by TestToolDefinitions, and
// their names against the token's scopes by TestGoldenTranscript), so the golden file
// shows the protocol exchange itself and a new tool does not change it.
func normalize(v any, key string) any {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if _, list := val.([]any); list && k == "tools" {
				x[k] = "<catalog>"
				continue
			}
			x[k] = normalize(val, k)
		}
		return x
	case []any:
		for i := range x {
			x[i] = normalize(x[i], key)
		}
		return x
	case string:
		x = reUUID.ReplaceAllString(x, "<uuid>")
		x = reULID.ReplaceAllString(x, "<ulid>")
		x = reTime.ReplaceAllString(x, "<time>")
		return reLocal.ReplaceAllString(x, "http://<host>")
	}
	return v
}

type exchange struct {
	Name     string         `json:"name"`
	Token    string         `json:"token"`
	Request  any            `json:"request"`
	Status   int            `json:"status"`
	Headers  map[string]any `json:"headers,omitempty"`
	Response any            `json:"response,omitempty"`
	Audit    any            `json:"audit,omitempty"`
}

// TestGoldenTranscript replays a fixed MCP conversation and compares it, normalised,
// with testdata/transcript.golden. Regenerate with: go test ./shared/mcpserver -run
// TestGoldenTranscript -update
func TestGoldenTranscript(t *testing.T) {
	s := newServer(t)
	tokens := map[string]string{
		"admin":     s.admin,
		"read-only": s.w.Token(t, gt.WS, gt.Admin, "issues:read"),
		"none":      "",
	}
	scopes := map[string][]string{"admin": auth.AllScopes, "read-only": {"issues:read"}}
	steps := []struct{ name, token, body string }{
		{"initialize", "admin", rpcBody(1, "initialize", map[string]any{"protocolVersion": protocolVersion, "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "golden", "version": "1.0"}})},
		{"initialized notification", "admin", `{"jsonrpc":"2.0","method":"notifications/initialized"}`},
		{"ping", "admin", rpcBody(2, "ping", nil)},
		{"tools/list, full scope", "admin", rpcBody(3, "tools/list", nil)},
		{"tools/list, issues:read", "read-only", rpcBody(4, "tools/list", nil)},
		{"get_issue by key", "admin", rpcBody(5, "tools/call", map[string]any{"name": "get_issue", "arguments": map[string]any{"issue_id": "ACME-1"}})},
		{"create_issue", "admin", rpcBody(6, "tools/call", map[string]any{"name": "create_issue", "arguments": map[string]any{"title": "Golden", "labels": []string{"gold"}, "priority": "high"}})},
		{"delete_issue without confirm", "admin", rpcBody(7, "tools/call", map[string]any{"name": "delete_issue", "arguments": map[string]any{"issue_id": "ACME-2"}})},
		{"delete_issue with confirm \"true\"", "admin", rpcBody(8, "tools/call", map[string]any{"name": "delete_issue", "arguments": map[string]any{"issue_id": "ACME-2", "confirm": "true"}})},
		{"delete_issue with confirm true", "admin", rpcBody(9, "tools/call", map[string]any{"name": "delete_issue", "arguments": map[string]any{"issue_id": "ACME-2", "confirm": true}})},
		{"invalid arguments", "admin", rpcBody(10, "tools/call", map[string]any{"name": "create_issue", "arguments": map[string]any{"title": 5, "foo": true}})},
		{"unknown tool", "admin", rpcBody(11, "tools/call", map[string]any{"name": "drop_tables", "arguments": map[string]any{}})},
		{"insufficient scope", "read-only", rpcBody(12, "tools/call", map[string]any{"name": "delete_issue", "arguments": map[string]any{"issue_id": "ACME-1", "confirm": true}})},
		{"no token", "none", rpcBody(13, "tools/call", map[string]any{"name": "get_issue", "arguments": map[string]any{"issue_id": "ACME-1"}})},
	}
	var got []exchange
	for _, st := range steps {
		before := len(s.sink.Records())
		r := s.do(t, "POST", "/mcp", tokens[st.token], st.body)
		var req any
		_ = json.Unmarshal([]byte(st.body), &req)
		ex := exchange{Name: st.name, Token: st.token, Request: req, Status: r.status, Headers: map[string]any{}}
		for _, h := range []string{"Content-Type", "WWW-Authenticate", "Mcp-Session-Id"} {
			if v := r.header.Get(h); v != "" {
				ex.Headers[h] = normalize(v, "")
			}
		}
		if len(bytes.TrimSpace(r.body)) > 0 {
			var resp any
			if err := json.Unmarshal(r.body, &resp); err != nil {
				t.Fatalf("%s: response is not JSON: %q", st.name, r.body)
			}
			var list struct {
				Result struct {
					Tools []struct{ Name string } `json:"tools"`
				} `json:"result"`
			}
			if json.Unmarshal(r.body, &list) == nil && list.Result.Tools != nil {
				var names []string
				for _, tl := range list.Result.Tools {
					names = append(names, tl.Name)
				}
				if want := toolsHolding(s.w.Catalog, scopes[st.token]...); !slices.Equal(names, want) {
					t.Errorf("%s: tools %v, want %v", st.name, names, want)
				}
			}
			ex.Response = normalize(resp, "")
		}
		recs := s.recordsSince(before)
		if len(recs) > 1 {
			t.Fatalf("%s: %d audit records", st.name, len(recs))
		}
		if len(recs) == 1 {
			ex.Audit = map[string]any{"tool": recs[0].Tool, "outcome": recs[0].Outcome, "reason": recs[0].Reason, "jsonrpc_id": recs[0].JSONRPCID}
		}
		got = append(got, ex)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(got); err != nil {
		t.Fatal(err)
	}
	out := buf.Bytes()
	path := filepath.Join("testdata", "transcript.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden (run with -update to create it): %v", err)
	}
	if !bytes.Equal(out, want) {
		t.Errorf("transcript differs from %s (run with -update after checking the change):\n%s", path, lineDiff(string(want), string(out)))
	}
}

// lineDiff shows the first differing lines.
func lineDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(wl) || i < len(gl); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return "line " + itoa(i+1) + ":\n- " + w + "\n+ " + g
		}
	}
	return ""
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// FuzzMCPBody posts arbitrary bytes to /mcp with a valid token: never a panic,
// never a 500, at most one audit record per request.
func FuzzMCPBody(f *testing.F) {
	seeds := []string{
		rpcBody(1, "initialize", map[string]any{"protocolVersion": protocolVersion, "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "f", "version": "1"}}),
		rpcBody(2, "tools/list", nil),
		rpcBody(3, "tools/call", map[string]any{"name": "list_issues", "arguments": map[string]any{"limit": 2}}),
		rpcBody(4, "tools/call", map[string]any{"name": "delete_issue", "arguments": map[string]any{"issue_id": "ACME-1"}}),
		rpcBody(5, "tools/call", map[string]any{"name": "nope"}),
		rpcBody(6, "tools/call", "x"),
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":{"a":1},"method":"tools/call","params":{"name":"get_issue","arguments":{"issue_id":"ACME-1"}}}`,
		`{`, ``, `null`, `"str"`, `{"jsonrpc":"2.0","id":1,"result":{}}`,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	w := gt.NewWorld(f)
	sink := &gt.MemorySink{}
	g := guard.New(guard.Config{Catalog: w.Catalog, Store: w.Store, Audit: sink})
	h := mcpserver.New(mcpserver.Config{}, g, w.Catalog, mcpserver.BearerSource{Verifier: &auth.Verifier{Store: w.Store}})
	token := w.Token(f, gt.WS, gt.Admin, auth.AllScopes...)
	f.Fuzz(func(t *testing.T, body []byte) {
		before := len(sink.Records())
		req := httptest.NewRequest(http.MethodPost, "/mcp", bytes.NewReader(body))
		req.Host = "127.0.0.1"
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("status %d for %q: %s", rec.Code, body, rec.Body.Bytes())
		}
		if n := len(sink.Records()) - before; n > 1 {
			t.Fatalf("%d audit records for one request %q", n, body)
		}
		if ct := rec.Header().Get("Content-Type"); strings.Contains(ct, "event-stream") {
			t.Fatalf("SSE answer for %q", body)
		}
	})
}
