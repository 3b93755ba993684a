package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/guard"
	gt "github.com/aacworkflow/aacmcp/shared/guard/guardtest"
	"github.com/aacworkflow/aacmcp/shared/mcpserver"
	"github.com/aacworkflow/aacmcp/shared/ratelimit"
)

func TestHealthz(t *testing.T) {
	s := newServer(t)
	r := s.do(t, "GET", "/healthz", "", "")
	if r.status != 200 || compact(t, r.body) != `{"status":"ok"}` {
		t.Fatalf("healthz: %d %s", r.status, r.body)
	}
}

func TestMCPOnlyPOST(t *testing.T) {
	s := newServer(t)
	for _, m := range []string{"GET", "DELETE", "PUT"} {
		r := s.do(t, m, "/mcp", s.admin, "")
		if r.status != http.StatusMethodNotAllowed || r.header.Get("Allow") != "POST" {
			t.Errorf("%s /mcp: %d Allow=%q, want 405 Allow=POST", m, r.status, r.header.Get("Allow"))
		}
		if ct := r.header.Get("Content-Type"); strings.Contains(ct, "event-stream") {
			t.Errorf("%s /mcp opened a stream", m)
		}
	}
}

func TestResourceMetadata(t *testing.T) {
	cases := []struct {
		name     string
		opt      option
		headers  []string
		resource string
	}{
		{"derived", nil, nil, "http://127.0.0.1:PORT/mcp"},
		{"forwarded https", nil, []string{"X-Forwarded-Proto: https"}, "https://127.0.0.1:PORT/mcp"},
		{"base path", func(c *mcpserver.Config, _ *guard.Config) { c.BasePath = "/prod/" }, nil, "http://127.0.0.1:PORT/prod/mcp"},
		{"public url", func(c *mcpserver.Config, _ *guard.Config) {
			c.PublicURL = "https://mcp.example.com/"
			c.AuthorizationServers = []string{"https://auth.example.com"}
		}, nil, "https://mcp.example.com/mcp"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var opts []option
			if c.opt != nil {
				opts = append(opts, c.opt)
			}
			s := newServer(t, opts...)
			port := s.url[strings.LastIndex(s.url, ":")+1:]
			want := strings.ReplaceAll(c.resource, "PORT", port)
			for _, path := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"} {
				r := s.do(t, "GET", path, "", "", c.headers...)
				var doc mcpserver.ResourceMetadata
				r.json(t, &doc)
				if r.status != 200 || doc.Resource != want {
					t.Fatalf("%s: %d resource=%q, want %q", path, r.status, doc.Resource, want)
				}
				if !slices.Equal(doc.ScopesSupported, auth.AllScopes) || !slices.Equal(doc.BearerMethodsSupported, []string{"header"}) || doc.ResourceName != "aacmcp-test" {
					t.Errorf("%s: %s", path, r.body)
				}
				if c.name == "public url" && !slices.Equal(doc.AuthorizationServers, []string{"https://auth.example.com"}) {
					t.Errorf("authorization_servers = %v", doc.AuthorizationServers)
				}
			}
			// A 401 points at the same document.
			r := s.do(t, "POST", "/mcp", "", rpcBody(1, "tools/list", nil), c.headers...)
			wantChallenge := `Bearer resource_metadata="` + strings.TrimSuffix(want, "/mcp") + `/.well-known/oauth-protected-resource/mcp"`
			if got := r.header.Get("WWW-Authenticate"); got != wantChallenge {
				t.Errorf("challenge = %q, want %q", got, wantChallenge)
			}
		})
	}
}

// TestInvalidTokens: every way a token can be wrong gives 401 with the challenge,
// on every authenticated route, and exactly one audit record naming the tool.
func TestInvalidTokens(t *testing.T) {
	s := newServer(t)
	unknown, _, _ := auth.Mint()
	expired := s.storeToken(t, time.Now().Add(-time.Hour), false)
	revoked := s.storeToken(t, time.Now().Add(time.Hour), true)
	cases := []struct {
		name, header string
		sent         bool
	}{
		{"missing", "", false},
		{"empty bearer", "Bearer", true},
		{"basic", "Basic YWxhZGRpbjpvcGVuc2VzYW1l", true},
		{"malformed", "Bearer aac_nope", true},
		{"unknown", "Bearer " + unknown, true},
		{"expired", "Bearer " + expired, true},
		{"revoked", "Bearer " + revoked, true},
	}
	routes := []struct {
		name, method, path, body, tool string
	}{
		{"mcp tools/call", "POST", "/mcp", rpcBody(3, "tools/call", map[string]any{"name": "get_issue", "arguments": map[string]any{"issue_id": "ACME-1"}}), "get_issue"},
		{"mcp tools/list", "POST", "/mcp", rpcBody(4, "tools/list", nil), ""},
		{"rest call", "POST", "/tools/delete_issue", `{"issue_id":"ACME-1"}`, "delete_issue"},
		{"rest list", "GET", "/tools", "", ""},
	}
	for _, c := range cases {
		for _, rt := range routes {
			t.Run(c.name+"/"+rt.name, func(t *testing.T) {
				var r response
				rec := s.expectOneRecord(t, func() {
					var hdr []string
					if c.header != "" {
						hdr = append(hdr, "Authorization: "+c.header)
					}
					r = s.do(t, rt.method, rt.path, "", rt.body, hdr...)
				})
				if r.status != http.StatusUnauthorized {
					t.Fatalf("status %d, want 401: %s", r.status, r.body)
				}
				ch := r.header.Get("WWW-Authenticate")
				if !strings.HasPrefix(ch, `Bearer resource_metadata="http://127.0.0.1:`) || strings.Contains(ch, `error="invalid_token"`) != c.sent {
					t.Errorf("WWW-Authenticate = %q", ch)
				}
				if rec.Reason != "invalid_token" || rec.Outcome != "denied" || rec.Tool != rt.tool || rec.UserID != "" || rec.WorkspaceID != "" {
					t.Errorf("record: %+v", rec)
				}
				if (c.name == "expired" || c.name == "revoked") != (rec.TokenID != "") {
					t.Errorf("token_id = %q for %s", rec.TokenID, c.name)
				}
				if rt.path == "/mcp" {
					var rr rpcResponse
					r.json(t, &rr)
					if rr.Error == nil || rr.Error.Data.Code != "invalid_token" {
						t.Errorf("body = %s", r.body)
					}
				} else if !strings.Contains(string(r.body), `"code":"invalid_token"`) {
					t.Errorf("body = %s", r.body)
				}
				if strings.Contains(string(r.body), "revoked") || strings.Contains(string(r.body), "expired\"") {
					t.Logf("body: %s", r.body)
				}
			})
		}
	}
}

// TestInsufficientScopeMCP: HTTP 403 with the RFC 6750 challenge and a JSON-RPC
// error whose data names the code and the scopes needed; audited once.
func TestInsufficientScopeMCP(t *testing.T) {
	s := newServer(t)
	tok := s.w.Token(t, gt.WS, gt.Admin, "issues:read")
	var r response
	var rr rpcResponse
	rec := s.expectOneRecord(t, func() {
		r, rr = s.callTool(t, tok, "delete_issue", json.RawMessage(`{"issue_id":"ACME-1","confirm":true}`))
	})
	if r.status != http.StatusForbidden {
		t.Fatalf("status %d, want 403", r.status)
	}
	want := `Bearer error="insufficient_scope", scope="issues:write", resource_metadata="` + s.url + `/.well-known/oauth-protected-resource/mcp"`
	if got := r.header.Get("WWW-Authenticate"); got != want {
		t.Errorf("WWW-Authenticate = %q\nwant %q", got, want)
	}
	if rr.Error == nil || rr.Error.Data.Code != "insufficient_scope" || !slices.Equal(rr.Error.Data.RequiredScopes, []string{"issues:write"}) || string(rr.ID) != "1" {
		t.Errorf("body = %s", r.body)
	}
	if rec.Reason != "insufficient_scope" || rec.Tool != "delete_issue" || rec.Transport != "mcp" || rec.JSONRPCID != "1" {
		t.Errorf("record = %+v", rec)
	}
}

func TestUnknownToolMCP(t *testing.T) {
	s := newServer(t)
	var r response
	var rr rpcResponse
	rec := s.expectOneRecord(t, func() { r, rr = s.callTool(t, s.admin, "drop_database", nil) })
	if r.status != 200 || rr.Error == nil || rr.Error.Code != -32602 || rr.Error.Data.Code != "unknown_tool" {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if rec.Reason != "unknown_tool" || rec.Outcome != "error" || rec.Tool != "drop_database" {
		t.Errorf("record = %+v", rec)
	}
}

// TestRESTStatuses: each code's HTTP status and body on POST /tools/{name}.
func TestRESTStatuses(t *testing.T) {
	s := newServer(t, func(_ *mcpserver.Config, g *guard.Config) {})
	readOnly := s.w.Token(t, gt.WS, gt.Admin, "issues:read")
	missing := "00000000-0000-4000-8000-000000000000"
	cases := []struct {
		name, token, tool, body string
		status                  int
		code                    string
	}{
		{"success", s.admin, "get_issue", `{"issue_id":"` + s.w.Issue.ID + `"}`, 200, ""},
		{"empty body", s.admin, "list_issues", ``, 200, ""},
		{"insufficient scope", readOnly, "create_issue", `{"title":"x"}`, 403, "insufficient_scope"},
		{"missing confirm", s.admin, "delete_issue", `{"issue_id":"` + s.w.Issue.ID + `"}`, 400, "destructive_flag_missing"},
		{"viewer writes", s.viewer, "create_issue", `{"title":"x"}`, 403, "permission_denied"},
		{"bad args", s.admin, "create_issue", `{"title":5}`, 400, "invalid_arguments"},
		{"not json", s.admin, "create_issue", `title=x`, 400, "invalid_arguments"},
		{"not found", s.admin, "get_issue", `{"issue_id":"` + missing + `"}`, 404, "not_found"},
		{"other workspace", s.admin, "get_issue", `{"issue_id":"` + s.w.OtherIssue.ID + `"}`, 404, "not_found"},
		{"unknown tool", s.admin, "nope", `{}`, 404, "unknown_tool"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var r response
			rec := s.expectOneRecord(t, func() { r = s.do(t, "POST", "/tools/"+c.tool, c.token, c.body) })
			if r.status != c.status {
				t.Fatalf("status %d, want %d: %s", r.status, c.status, r.body)
			}
			if rec.Reason != c.code || rec.Transport != "rest" {
				t.Errorf("record reason %q transport %q", rec.Reason, rec.Transport)
			}
			if c.code == "" {
				return
			}
			var body struct{ Error, Code string }
			r.json(t, &body)
			if body.Code != c.code || body.Error == "" {
				t.Errorf("body = %s", r.body)
			}
			// The admin may read and delete the issue: the refusal previews it
			// (TestPreviewGolden has the callers it does not).
			if c.code == "destructive_flag_missing" && compact(t, r.body) != `{"error":"confirm: true required for destructive operations","code":"destructive_flag_missing",`+
				`"preview":{"kind":"issue","id":"`+s.w.Issue.ID+`","key":"`+s.w.Issue.Key+`","title":"First","comment_count":1}}` {
				t.Errorf("body = %s", r.body)
			}
			if c.code == "insufficient_scope" && !strings.Contains(r.header.Get("WWW-Authenticate"), `scope="issues:write"`) {
				t.Errorf("challenge = %q", r.header.Get("WWW-Authenticate"))
			}
		})
	}
}

func TestRESTConflictAndReplay(t *testing.T) {
	s := newServer(t)
	first := s.do(t, "POST", "/tools/create_issue", s.member, `{"title":"once","idempotency_key":"r1"}`)
	again := s.do(t, "POST", "/tools/create_issue", s.member, `{"idempotency_key":"r1","title":"once"}`)
	if first.status != 200 || again.status != 200 || string(first.body) != string(again.body) {
		t.Fatalf("replay: %d %s / %d %s", first.status, first.body, again.status, again.body)
	}
	if first.header.Get("Idempotent-Replay") != "" || again.header.Get("Idempotent-Replay") != "true" {
		t.Errorf("Idempotent-Replay headers: %q then %q", first.header.Get("Idempotent-Replay"), again.header.Get("Idempotent-Replay"))
	}
	c := s.do(t, "POST", "/tools/create_issue", s.member, `{"title":"twice","idempotency_key":"r1"}`)
	if c.status != http.StatusConflict || !strings.Contains(string(c.body), `"code":"conflict"`) {
		t.Fatalf("conflict: %d %s", c.status, c.body)
	}
}

func TestMCPIdempotentReplay(t *testing.T) {
	s := newServer(t)
	args := json.RawMessage(`{"title":"mcp once","idempotency_key":"m1"}`)
	r1, rr1 := s.callTool(t, s.member, "create_issue", args)
	r2, rr2 := s.callTool(t, s.member, "create_issue", args)
	t1, t2 := toolResultOf(t, r1, rr1), toolResultOf(t, r2, rr2)
	if t1.IsError || t2.IsError || string(t1.StructuredContent) != string(t2.StructuredContent) {
		t.Fatalf("results differ: %s / %s", t1.StructuredContent, t2.StructuredContent)
	}
	if t1.Meta["aacmcp/idempotent_replay"] != nil || t2.Meta["aacmcp/idempotent_replay"] != true {
		t.Errorf("replay meta: %v then %v", t1.Meta, t2.Meta)
	}
}

// TestRateLimit429: REST gets 429 with Retry-After; MCP gets a tool error with
// retry_after_seconds.
func TestRateLimit429(t *testing.T) {
	s := newServer(t, func(_ *mcpserver.Config, g *guard.Config) {
		rate, err := ratelimit.Parse("1/h")
		if err != nil {
			t.Fatal(err)
		}
		g.Limiter = ratelimit.New(g.Store, rate)
	})
	if r := s.do(t, "POST", "/tools/list_issues", s.admin, `{}`); r.status != 200 {
		t.Fatalf("first: %d", r.status)
	}
	r := s.do(t, "POST", "/tools/list_issues", s.admin, `{}`)
	if r.status != http.StatusTooManyRequests {
		t.Fatalf("second: %d %s", r.status, r.body)
	}
	sec, err := strconv.Atoi(r.header.Get("Retry-After"))
	if err != nil || sec < 1 || sec > 3600 {
		t.Errorf("Retry-After = %q", r.header.Get("Retry-After"))
	}
	resp, rr := s.callTool(t, s.admin, "list_issues", json.RawMessage(`{}`))
	tr := toolResultOf(t, resp, rr)
	var body struct {
		Code       string `json:"code"`
		RetryAfter int    `json:"retry_after_seconds"`
	}
	if err := json.Unmarshal([]byte(tr.Content[0].Text), &body); err != nil || !tr.IsError || body.Code != "rate_limited" || body.RetryAfter < 1 {
		t.Errorf("MCP rate limit result: %s", rr.Result)
	}
}

// TestMCPConfirmMatrix: on /mcp a missing confirm is a tool error whose text is
// exactly the error body, with no structuredContent; true succeeds.
func TestMCPConfirmMatrix(t *testing.T) {
	s := newServer(t)
	for _, confirm := range []string{"", "false", `"true"`, "1", "true"} {
		t.Run("confirm="+confirm, func(t *testing.T) {
			var args map[string]any
			_ = json.Unmarshal(s.w.Args(t, "delete_issue"), &args)
			delete(args, "confirm")
			if confirm != "" {
				args["confirm"] = json.RawMessage(confirm)
			}
			b, _ := json.Marshal(args)
			var tr toolResult
			rec := s.expectOneRecord(t, func() {
				r, rr := s.callTool(t, s.admin, "delete_issue", b)
				tr = toolResultOf(t, r, rr)
			})
			if confirm == "true" {
				if tr.IsError || compact(t, tr.StructuredContent) != compact(t, []byte(tr.Content[0].Text)) {
					t.Fatalf("success result: %+v", tr)
				}
				if rec.Outcome != "success" || !rec.ConfirmPresent {
					t.Errorf("record %+v", rec)
				}
				return
			}
			if !tr.IsError || tr.StructuredContent != nil || len(tr.Content) != 1 || tr.Content[0].Type != "text" ||
				tr.Content[0].Text != `{"error":"confirm: true required for destructive operations","code":"destructive_flag_missing",`+
					`"preview":{"kind":"issue","id":"`+args["issue_id"].(string)+`","key":"`+issueKey(t, s, args["issue_id"].(string))+`","title":"Fresh","comment_count":0}}` {
				t.Fatalf("result: %+v", tr)
			}
			if rec.Reason != "destructive_flag_missing" || rec.ConfirmPresent {
				t.Errorf("record %+v", rec)
			}
		})
	}
}

// issueKey is the key of the issue id names in the seeded workspace.
func issueKey(t *testing.T, s *server, id string) string {
	t.Helper()
	is, err := s.w.Store.GetIssue(context.Background(), gt.WS, id)
	if err != nil {
		t.Fatal(err)
	}
	return is.Key
}

// TestBodyLimit: an oversized body is refused with 413 before anything parses it,
// whether or not it declares its length; nothing is audited.
func TestBodyLimit(t *testing.T) {
	s := newServer(t, func(c *mcpserver.Config, _ *guard.Config) { c.MaxBodyBytes = 512 })
	big := `{"title":"` + strings.Repeat("x", 600) + `"}`
	s.expectNoRecord(t, func() {
		for _, path := range []string{"/mcp", "/tools/create_issue"} {
			body := big
			if path == "/mcp" {
				body = rpcBody(1, "tools/call", map[string]any{"name": "create_issue", "arguments": json.RawMessage(big)})
			}
			if r := s.do(t, "POST", path, s.admin, body); r.status != http.StatusRequestEntityTooLarge {
				t.Errorf("%s: %d, want 413", path, r.status)
			}
			// Chunked: no Content-Length, the limit still holds.
			req, _ := http.NewRequest("POST", s.url+path, struct{ *strings.Reader }{strings.NewReader(body)})
			req.Header.Set("Authorization", "Bearer "+s.admin)
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusRequestEntityTooLarge {
				t.Errorf("%s chunked: %d, want 413", path, resp.StatusCode)
			}
		}
	})
}

func TestOriginAndHost(t *testing.T) {
	s := newServer(t, func(c *mcpserver.Config, _ *guard.Config) { c.AllowedOrigins = []string{"https://app.example.com"} })
	list := rpcBody(1, "tools/list", nil)
	cases := []struct {
		name    string
		headers []string
		status  int
	}{
		{"no origin", nil, 200},
		{"allowed origin", []string{"Origin: https://app.example.com"}, 200},
		{"foreign origin", []string{"Origin: https://evil.example.com"}, 403},
		{"origin prefix trick", []string{"Origin: https://app.example.com.evil.com"}, 403},
		{"localhost host", []string{"Host: localhost:9999"}, 200},
		{"ipv6 loopback host", []string{"Host: [::1]:9999"}, 200},
		{"foreign host", []string{"Host: evil.example.com"}, 403},
		{"rebinding host", []string{"Host: attacker.test:80"}, 403},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if r := s.do(t, "POST", "/mcp", s.admin, list, c.headers...); r.status != c.status {
				t.Fatalf("status %d, want %d: %s", r.status, c.status, r.body)
			}
		})
	}

	any := newServer(t, func(c *mcpserver.Config, _ *guard.Config) { c.AllowedHosts = []string{"*"} })
	if r := any.do(t, "GET", "/healthz", "", "", "Host: api.example.com"); r.status != 200 {
		t.Errorf(`AllowedHosts "*": %d`, r.status)
	}
	named := newServer(t, func(c *mcpserver.Config, _ *guard.Config) { c.AllowedHosts = []string{"api.example.com"} })
	for host, want := range map[string]int{"api.example.com": 200, "api.example.com:443": 200, "localhost": 403} {
		if r := named.do(t, "GET", "/healthz", "", "", "Host: "+host); r.status != want {
			t.Errorf("AllowedHosts named, Host %s: %d, want %d", host, r.status, want)
		}
	}
}

// TestToolsListMatchesGetTools: for every subset of the scopes, tools/list names
// exactly the tools GET /tools marks allowed, in the same (catalog) order.
func TestToolsListMatchesGetTools(t *testing.T) {
	s := newServer(t)
	var catalogOrder []string
	for _, tool := range s.w.Catalog.Tools() {
		catalogOrder = append(catalogOrder, tool.Name)
	}
	n := len(auth.AllScopes)
	for mask := range 1 << n {
		var scopes []string
		for i, sc := range auth.AllScopes {
			if mask&(1<<i) != 0 {
				scopes = append(scopes, sc)
			}
		}
		if len(scopes) == 0 {
			continue // a token needs a scope; fail-closed listing is tested below
		}
		tok := s.w.Token(t, gt.WS, gt.Viewer, scopes...)
		r := s.do(t, "POST", "/mcp", tok, rpcBody(1, "tools/list", nil))
		var rr rpcResponse
		r.json(t, &rr)
		var listed struct {
			Tools []struct{ Name string } `json:"tools"`
		}
		_ = json.Unmarshal(rr.Result, &listed)
		var names []string
		for _, tl := range listed.Tools {
			names = append(names, tl.Name)
		}
		var list mcpserver.ToolList
		s.do(t, "GET", "/tools", tok, "").json(t, &list)
		var allowed, all []string
		for _, ti := range list.Tools {
			all = append(all, ti.Name)
			if ti.Allowed {
				allowed = append(allowed, ti.Name)
			}
		}
		if !slices.Equal(names, allowed) {
			t.Fatalf("scopes %v: tools/list %v, GET /tools allowed %v", scopes, names, allowed)
		}
		if !slices.Equal(all, catalogOrder) {
			t.Fatalf("GET /tools order %v, want %v", all, catalogOrder)
		}
		for _, name := range names {
			tool, _ := s.w.Catalog.Lookup(name)
			for _, need := range tool.Scopes {
				if !slices.Contains(scopes, need) {
					t.Fatalf("scopes %v: %s listed without %s", scopes, name, need)
				}
			}
		}
	}
}

// TestToolDefinitions: tools/list carries all four annotations explicitly, the
// title, both schemas and the _meta facts, straight from the catalog.
func TestToolDefinitions(t *testing.T) {
	s := newServer(t)
	r := s.do(t, "POST", "/mcp", s.admin, rpcBody(1, "tools/list", nil))
	var rr rpcResponse
	r.json(t, &rr)
	var listed struct {
		Tools []struct {
			Name         string          `json:"name"`
			Title        string          `json:"title"`
			InputSchema  json.RawMessage `json:"inputSchema"`
			OutputSchema json.RawMessage `json:"outputSchema"`
			Annotations  map[string]any  `json:"annotations"`
			Meta         map[string]any  `json:"_meta"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(rr.Result, &listed); err != nil {
		t.Fatal(err)
	}
	if len(listed.Tools) != len(s.w.Catalog.Tools()) {
		t.Fatalf("%d tools listed", len(listed.Tools))
	}
	for i, tool := range s.w.Catalog.Tools() {
		got := listed.Tools[i]
		want := map[string]any{
			"readOnlyHint": tool.Annotations.ReadOnly, "destructiveHint": tool.Annotations.Destructive,
			"idempotentHint": tool.Annotations.Idempotent, "openWorldHint": tool.Annotations.OpenWorld,
			"title": tool.Title,
		}
		for k, v := range want {
			if got.Annotations[k] != v {
				t.Errorf("%s: annotations.%s = %v, want %v", tool.Name, k, got.Annotations[k], v)
			}
		}
		if got.Name != tool.Name || got.Title != tool.Title ||
			compact(t, got.InputSchema) != compact(t, tool.InputSchema) || compact(t, got.OutputSchema) != compact(t, tool.OutputSchema) {
			t.Errorf("%s: definition differs from the catalog", tool.Name)
		}
		scopes, _ := json.Marshal(got.Meta["aacmcp/scopes"])
		wantScopes, _ := json.Marshal(tool.Scopes)
		if string(scopes) != string(wantScopes) || got.Meta["aacmcp/requires_confirm"] != tool.Annotations.Destructive ||
			got.Meta["aacmcp/accepts_idempotency_key"] != tool.AcceptsIdempotencyKey() {
			t.Errorf("%s: _meta = %v", tool.Name, got.Meta)
		}
	}
}

// TestOnlyToolCallsAudited: initialize, ping, tools/list, notifications and
// GET /tools write nothing; each tools/call writes one record.
func TestOnlyToolCallsAudited(t *testing.T) {
	s := newServer(t)
	s.expectNoRecord(t, func() {
		init := rpcBody(1, "initialize", map[string]any{"protocolVersion": protocolVersion, "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}})
		for _, body := range []string{init, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, rpcBody(2, "ping", nil), rpcBody(3, "tools/list", nil)} {
			if r := s.do(t, "POST", "/mcp", s.admin, body); r.status >= 300 {
				t.Errorf("%s: %d %s", body, r.status, r.body)
			}
		}
		if r := s.do(t, "GET", "/tools", s.admin, ""); r.status != 200 {
			t.Errorf("GET /tools: %d", r.status)
		}
		if r := s.do(t, "POST", "/mcp", s.admin, `[`+rpcBody(1, "ping", nil)+`]`); r.status != 400 {
			t.Errorf("batch: %d %s", r.status, r.body)
		}
	})
	for _, tool := range s.w.Catalog.Tools() {
		rec := s.expectOneRecord(t, func() {
			r, rr := s.callTool(t, s.admin, tool.Name, s.w.Args(t, tool.Name))
			if tr := toolResultOf(t, r, rr); tr.IsError {
				t.Errorf("%s: %s", tool.Name, tr.Content[0].Text)
			}
		})
		if rec.Tool != tool.Name || rec.Outcome != "success" || rec.Transport != "mcp" || rec.ProtocolVersion != protocolVersion || rec.UserAgent == "" {
			t.Errorf("%s: record %+v", tool.Name, rec)
		}
	}
	// Malformed tools/call params are still one record.
	s.expectOneRecord(t, func() { s.do(t, "POST", "/mcp", s.admin, rpcBody(9, "tools/call", "nonsense")) })
	s.expectOneRecord(t, func() {
		s.do(t, "POST", "/mcp", s.admin, rpcBody(9, "tools/call", map[string]any{"name": "list_issues", "_meta": 5}))
	})
}

func TestRequestID(t *testing.T) {
	s := newServer(t)
	rec := s.expectOneRecord(t, func() {
		r := s.do(t, "POST", "/tools/list_issues", s.admin, `{}`, "X-Request-Id: abc-123")
		if r.header.Get("X-Request-Id") != "abc-123" {
			t.Errorf("echo = %q", r.header.Get("X-Request-Id"))
		}
	})
	if rec.RequestID != "abc-123" {
		t.Errorf("record request_id = %q", rec.RequestID)
	}
	r := s.do(t, "GET", "/healthz", "", "", "X-Request-Id: bad id with spaces")
	if got := r.header.Get("X-Request-Id"); got == "" || strings.Contains(got, " ") {
		t.Errorf("unsafe request id kept: %q", got)
	}
}

// TestClientInfoFromMeta: the self-reported client in _meta reaches the record.
func TestClientInfoFromMeta(t *testing.T) {
	s := newServer(t)
	rec := s.expectOneRecord(t, func() {
		s.do(t, "POST", "/mcp", s.admin, rpcBody(5, "tools/call", map[string]any{
			"name": "list_issues", "arguments": map[string]any{},
			"_meta": map[string]any{"io.modelcontextprotocol/clientInfo": map[string]any{"name": "claude-code", "version": "2.1"}},
		}), "User-Agent: test-agent/1")
	})
	if rec.ClientName != "claude-code" || rec.ClientVersion != "2.1" || rec.UserAgent != "test-agent/1" || rec.JSONRPCID != "5" || rec.SourceIP != "127.0.0.1" {
		t.Errorf("record %+v", rec)
	}
}

// TestAuditFailureIs500: a success whose record cannot be written is answered 500
// without internal text.
func TestAuditFailureIs500(t *testing.T) {
	s := newServer(t)
	s.sink.Fail = errors.New("sink exploded")
	r := s.do(t, "POST", "/tools/list_issues", s.admin, `{}`)
	if r.status != 500 || strings.Contains(string(r.body), "exploded") || !strings.Contains(string(r.body), `"code":"internal_error"`) {
		t.Fatalf("%d %s", r.status, r.body)
	}
}

// TestGetToolsForViewer: GET /tools lists every tool, and allows a viewer's token
// the read-only tools its scopes cover.
func TestGetToolsForViewer(t *testing.T) {
	s := newServer(t)
	tok := s.w.Token(t, gt.WS, gt.Viewer, "comments:read")
	var list mcpserver.ToolList
	s.do(t, "GET", "/tools", tok, "").json(t, &list)
	if len(list.Tools) != len(s.w.Catalog.Tools()) {
		t.Errorf("%d tools listed, the catalog has %d", len(list.Tools), len(s.w.Catalog.Tools()))
	}
	for _, ti := range list.Tools {
		tool, _ := s.w.Catalog.Lookup(ti.Name)
		if ti.Allowed != (tool.Annotations.ReadOnly && slices.Equal(tool.Scopes, []string{"comments:read"})) || ti.RequiresConfirm != tool.Annotations.Destructive ||
			ti.AcceptsIdempotencyKey != tool.AcceptsIdempotencyKey() || len(ti.InputSchema) == 0 || len(ti.OutputSchema) == 0 ||
			ti.Annotations.ReadOnlyHint != tool.Annotations.ReadOnly {
			t.Errorf("%+v", ti)
		}
	}
}
