package mcpserver_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/catalog"
	"github.com/aacworkflow/aacmcp/shared/guard"
	"github.com/aacworkflow/aacmcp/shared/guard/guardtest"
	"github.com/aacworkflow/aacmcp/shared/mcpserver"
)

// protoEnv is one server over a seeded store, with a full-scope and a read-only
// token of the workspace admin.
type protoEnv struct {
	srv      *httptest.Server
	sink     *guardtest.MemorySink
	cat      *catalog.Catalog
	full, ro string
}

func newProtoEnv(t *testing.T) *protoEnv {
	t.Helper()
	w := guardtest.NewWorld(t)
	sink := &guardtest.MemorySink{}
	g := guard.New(guard.Config{Catalog: w.Catalog, Store: w.Store, Audit: sink})
	h := mcpserver.New(mcpserver.Config{}, g, w.Catalog, mcpserver.BearerSource{Verifier: &auth.Verifier{Store: w.Store}})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &protoEnv{
		srv:  srv,
		sink: sink,
		cat:  w.Catalog,
		full: w.Token(t, guardtest.WS, guardtest.Admin, auth.AllScopes...),
		ro:   w.Token(t, guardtest.WS, guardtest.Admin, "issues:read"),
	}
}

type rpcAnswer struct {
	status int
	header http.Header
	body   struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int             `json:"code"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data"`
		} `json:"error"`
	}
}

func (e *protoEnv) post(t *testing.T, token string, headers map[string]string, body string) rpcAnswer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.srv.URL+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	a := rpcAnswer{status: resp.StatusCode, header: resp.Header}
	if err := json.Unmarshal(raw, &a.body); err != nil {
		t.Fatalf("HTTP %d: body is not JSON-RPC: %s", resp.StatusCode, raw)
	}
	return a
}

// meta is the _meta a 2026-07-28 request carries.
func meta(version string) string {
	return `"_meta":{"io.modelcontextprotocol/protocolVersion":"` + version +
		`","io.modelcontextprotocol/clientInfo":{"name":"protocol-test","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
}

const modern = mcp.ProtocolVersion20260728

func TestProtocolVersionHeader(t *testing.T) {
	e := newProtoEnv(t)
	tests := []struct {
		name     string
		version  string
		wantCode int // JSON-RPC error code; 0: success
	}{
		{"2024-11-05", mcp.ProtocolVersion20241105, 0},
		{"2025-03-26", mcp.ProtocolVersion20250326, 0},
		{"2025-06-18", mcp.ProtocolVersion20250618, 0},
		{"2025-11-25", mcp.ProtocolVersion20251125, 0},
		{"unknown past revision", "2025-01-01", mcp.UNSUPPORTED_PROTOCOL_VERSION},
		{"unknown future revision", "2099-01-01", mcp.UNSUPPORTED_PROTOCOL_VERSION},
		{"not a date", "latest", mcp.UNSUPPORTED_PROTOCOL_VERSION},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := e.post(t, e.full, map[string]string{"MCP-Protocol-Version": tt.version}, `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
			if tt.wantCode == 0 {
				if a.status != http.StatusOK || a.body.Error != nil {
					t.Fatalf("ping on %s: HTTP %d, error %+v", tt.version, a.status, a.body.Error)
				}
				return
			}
			if a.status != http.StatusBadRequest || a.body.Error == nil || a.body.Error.Code != tt.wantCode {
				t.Fatalf("ping on %s: HTTP %d, error %+v; want 400 with code %d", tt.version, a.status, a.body.Error, tt.wantCode)
			}
			var data mcp.UnsupportedProtocolVersionData
			if err := json.Unmarshal(a.body.Error.Data, &data); err != nil {
				t.Fatalf("error data %s: %v", a.body.Error.Data, err)
			}
			if data.Requested != tt.version || !slices.Contains(data.Supported, modern) || !slices.Contains(data.Supported, mcp.ProtocolVersion20250326) {
				t.Errorf("error data %+v: want the requested version and the supported list", data)
			}
		})
	}
}

func TestProtocolVersionHeaderBeforeScopes(t *testing.T) {
	e := newProtoEnv(t)
	// A read-only token calling a write tool with an unsupported version: the
	// malformed request is the answer, not a scope challenge.
	a := e.post(t, e.ro, map[string]string{"MCP-Protocol-Version": "2030-01-01"},
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"create_issue","arguments":{"title":"x"}}}`)
	if a.status != http.StatusBadRequest || a.body.Error == nil || a.body.Error.Code != mcp.UNSUPPORTED_PROTOCOL_VERSION {
		t.Fatalf("HTTP %d, error %+v; want 400 unsupported protocol version", a.status, a.body.Error)
	}
	if a.header.Get("WWW-Authenticate") != "" {
		t.Errorf("a malformed request got a challenge: %q", a.header.Get("WWW-Authenticate"))
	}
	recs := e.sink.Records()
	if len(recs) != 1 || recs[0].Tool != "create_issue" || recs[0].Reason != "invalid_arguments" || recs[0].Outcome != "error" {
		t.Fatalf("audit records %+v: want one invalid_arguments error for create_issue", recs)
	}
}

func TestSessionlessHeaders(t *testing.T) {
	e := newProtoEnv(t)
	call := func(name string) string {
		return `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"` + name + `","arguments":{"limit":1},` + meta(modern) + `}}`
	}
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{` + meta(modern) + `}}`
	tests := []struct {
		name       string
		token      string
		headers    map[string]string
		body       string
		wantStatus int
		wantCode   int // JSON-RPC error code when wantStatus is 400
		wantAudit  string
	}{
		{
			name:       "server/discover",
			token:      e.full,
			headers:    map[string]string{"MCP-Protocol-Version": modern, "Mcp-Method": "server/discover"},
			body:       `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + meta(modern) + `}}`,
			wantStatus: http.StatusOK,
		},
		{
			name:       "tools/list with headers",
			token:      e.full,
			headers:    map[string]string{"MCP-Protocol-Version": modern, "Mcp-Method": "tools/list"},
			body:       list,
			wantStatus: http.StatusOK,
		},
		{
			name:       "tools/list without Mcp-Method",
			token:      e.full,
			headers:    map[string]string{"MCP-Protocol-Version": modern},
			body:       list,
			wantStatus: http.StatusBadRequest, wantCode: mcp.HEADER_MISMATCH,
		},
		{
			name:       "Mcp-Method differs from the body",
			token:      e.full,
			headers:    map[string]string{"MCP-Protocol-Version": modern, "Mcp-Method": "tools/call", "Mcp-Name": "list_issues"},
			body:       list,
			wantStatus: http.StatusBadRequest, wantCode: mcp.HEADER_MISMATCH,
		},
		{
			name:       "tools/call with matching headers",
			token:      e.full,
			headers:    map[string]string{"MCP-Protocol-Version": modern, "Mcp-Method": "tools/call", "Mcp-Name": "list_issues"},
			body:       call("list_issues"),
			wantStatus: http.StatusOK, wantAudit: "success",
		},
		{
			name:       "tools/call without Mcp-Name",
			token:      e.full,
			headers:    map[string]string{"MCP-Protocol-Version": modern, "Mcp-Method": "tools/call"},
			body:       call("list_issues"),
			wantStatus: http.StatusBadRequest, wantCode: mcp.HEADER_MISMATCH, wantAudit: "invalid_arguments",
		},
		{
			// The header names a tool the token may use, the body one it may not:
			// refused as malformed before the scope check could answer 403.
			name:       "Mcp-Name differs from the body",
			token:      e.ro,
			headers:    map[string]string{"MCP-Protocol-Version": modern, "Mcp-Method": "tools/call", "Mcp-Name": "list_issues"},
			body:       call("delete_issue"),
			wantStatus: http.StatusBadRequest, wantCode: mcp.HEADER_MISMATCH, wantAudit: "invalid_arguments",
		},
		{
			name:       "header and _meta versions differ",
			token:      e.full,
			headers:    map[string]string{"MCP-Protocol-Version": mcp.ProtocolVersion20251125, "Mcp-Method": "tools/list"},
			body:       list,
			wantStatus: http.StatusBadRequest, wantCode: mcp.HEADER_MISMATCH,
		},
		{
			name:       "2026-07-28 header without _meta",
			token:      e.full,
			headers:    map[string]string{"MCP-Protocol-Version": modern, "Mcp-Method": "tools/list"},
			body:       `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
			wantStatus: http.StatusBadRequest, wantCode: mcp.INVALID_PARAMS,
		},
		{
			name:       "_meta version without the header",
			token:      e.full,
			headers:    map[string]string{"Mcp-Method": "tools/list"},
			body:       list,
			wantStatus: http.StatusBadRequest, wantCode: mcp.HEADER_MISMATCH,
		},
		{
			name:       "unsupported _meta version",
			token:      e.full,
			headers:    map[string]string{"MCP-Protocol-Version": "2031-01-01", "Mcp-Method": "tools/list"},
			body:       `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{` + meta("2031-01-01") + `}}`,
			wantStatus: http.StatusBadRequest, wantCode: mcp.UNSUPPORTED_PROTOCOL_VERSION,
		},
		{
			// The conformance suite's sep-2575-http-server-header-mismatch-400:
			// the two places disagree, which is the answer whatever the body says.
			name:       "2026-07-28 header, unknown _meta version",
			token:      e.full,
			headers:    map[string]string{"MCP-Protocol-Version": modern, "Mcp-Method": "tools/list"},
			body:       `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{` + meta("v999.0.0") + `}}`,
			wantStatus: http.StatusBadRequest, wantCode: mcp.HEADER_MISMATCH,
		},
		{
			name:       "unknown header, 2026-07-28 _meta version",
			token:      e.full,
			headers:    map[string]string{"MCP-Protocol-Version": "2031-01-01", "Mcp-Method": "tools/list"},
			body:       list,
			wantStatus: http.StatusBadRequest, wantCode: mcp.HEADER_MISMATCH,
		},
		{
			name:       "insufficient scope with valid headers is still 403",
			token:      e.ro,
			headers:    map[string]string{"MCP-Protocol-Version": modern, "Mcp-Method": "tools/call", "Mcp-Name": "delete_issue"},
			body:       call("delete_issue"),
			wantStatus: http.StatusForbidden, wantAudit: "insufficient_scope",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.sink.Reset()
			a := e.post(t, tt.token, tt.headers, tt.body)
			if a.status != tt.wantStatus {
				t.Fatalf("HTTP %d (error %+v), want %d", a.status, a.body.Error, tt.wantStatus)
			}
			if tt.wantStatus == http.StatusBadRequest && (a.body.Error == nil || a.body.Error.Code != tt.wantCode) {
				t.Fatalf("error %+v, want code %d", a.body.Error, tt.wantCode)
			}
			if tt.wantStatus == http.StatusOK && a.body.Error != nil {
				t.Fatalf("error %+v, want a result", a.body.Error)
			}
			recs := e.sink.Records()
			if tt.wantAudit == "" {
				if len(recs) != 0 {
					t.Fatalf("audit records %+v, want none", recs)
				}
				return
			}
			got := recs[0].Reason
			if got == "" {
				got = recs[0].Outcome
			}
			if len(recs) != 1 || got != tt.wantAudit {
				t.Fatalf("audit records %+v, want one %s", recs, tt.wantAudit)
			}
		})
	}
}

func TestSessionlessToolsListIsPrivate(t *testing.T) {
	e := newProtoEnv(t)
	body := `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{` + meta(modern) + `}}`
	names := map[string][]string{}
	for label, token := range map[string]string{"full": e.full, "read-only": e.ro} {
		a := e.post(t, token, map[string]string{"MCP-Protocol-Version": modern, "Mcp-Method": "tools/list"}, body)
		if a.status != http.StatusOK || a.body.Error != nil {
			t.Fatalf("%s: HTTP %d, error %+v", label, a.status, a.body.Error)
		}
		var res struct {
			CacheScope string `json:"cacheScope"`
			ResultType string `json:"resultType"`
			Tools      []struct {
				Name string `json:"name"`
			} `json:"tools"`
		}
		if err := json.Unmarshal(a.body.Result, &res); err != nil {
			t.Fatal(err)
		}
		if res.CacheScope != string(mcp.CacheScopePrivate) {
			t.Errorf("%s: cacheScope %q, want private (the list varies by token)", label, res.CacheScope)
		}
		if res.ResultType != "complete" {
			t.Errorf("%s: resultType %q, want complete", label, res.ResultType)
		}
		if cc := a.header.Get("Cache-Control"); cc != "no-store" {
			t.Errorf("%s: Cache-Control %q, want no-store", label, cc)
		}
		for _, tool := range res.Tools {
			names[label] = append(names[label], tool.Name)
		}
	}
	if !slices.Equal(names["read-only"], toolsHolding(e.cat, "issues:read")) {
		t.Errorf("read-only token lists %v, want the issues:read tools", names["read-only"])
	}
	if len(names["full"]) <= len(names["read-only"]) {
		t.Errorf("full token lists %v: the list does not vary by token", names["full"])
	}
}

func TestOriginOnLoopback(t *testing.T) {
	e := newProtoEnv(t)
	host := strings.TrimPrefix(e.srv.URL, "http://")
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	tests := []struct {
		name, host, origin string
		want               int
	}{
		{"no origin", host, "", http.StatusOK},
		{"loopback page, loopback server", host, "http://" + host, http.StatusOK},
		{"localhost page on another port", host, "http://localhost:5173", http.StatusOK},
		{"foreign page", host, "http://evil.example.com", http.StatusForbidden},
		{"rebinding: foreign host and origin", "evil.example.com", "http://evil.example.com", http.StatusForbidden},
		{"origin with a path is not an origin", host, "http://127.0.0.1/x", http.StatusForbidden},
		{"not http", host, "file://localhost", http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, e.srv.URL+"/mcp", bytes.NewReader([]byte(ping)))
			if err != nil {
				t.Fatal(err)
			}
			req.Host = tt.host
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Authorization", "Bearer "+e.full)
			if tt.origin != "" {
				req.Header.Set("Origin", tt.origin)
			}
			resp, err := e.srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Fatalf("HTTP %d, want %d", resp.StatusCode, tt.want)
			}
		})
	}
}
