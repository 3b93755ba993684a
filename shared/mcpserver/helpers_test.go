package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/catalog"
	"github.com/aacworkflow/aacmcp/shared/guard"
	gt "github.com/aacworkflow/aacmcp/shared/guard/guardtest"
	"github.com/aacworkflow/aacmcp/shared/mcpserver"
)

const protocolVersion = "2025-11-25"

type server struct {
	w    *gt.World
	sink *gt.MemorySink
	g    *guard.Guard
	h    http.Handler
	url  string
	// tokens of the seeded users, every scope.
	admin, member, viewer string
}

type option func(*mcpserver.Config, *guard.Config)

// newServer serves the whole surface on 127.0.0.1 over a seeded SQLite world, with
// real token verification.
func newServer(t testing.TB, opts ...option) *server {
	t.Helper()
	w := gt.NewWorld(t)
	sink := &gt.MemorySink{}
	gcfg := guard.Config{Catalog: w.Catalog, Store: w.Store, Audit: sink}
	cfg := mcpserver.Config{ServerName: "aacmcp-test", ServerVersion: "0.0.1"}
	for _, o := range opts {
		o(&cfg, &gcfg)
	}
	g := guard.New(gcfg)
	h := mcpserver.New(cfg, g, w.Catalog, mcpserver.BearerSource{Verifier: &auth.Verifier{Store: w.Store}})
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	s := &server{w: w, sink: sink, g: g, h: h, url: ts.URL}
	s.admin = w.Token(t, gt.WS, gt.Admin, auth.AllScopes...)
	s.member = w.Token(t, gt.WS, gt.Member, auth.AllScopes...)
	s.viewer = w.Token(t, gt.WS, gt.Viewer, auth.AllScopes...)
	return s
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %d response %q: %v", r.status, r.body, err)
	}
}

// do sends one request; headers are "Name: value" strings.
func (s *server) do(t testing.TB, method, path, token, body string, headers ...string) response {
	t.Helper()
	req, err := http.NewRequest(method, s.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if path == "/mcp" {
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", protocolVersion)
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ": ")
		if strings.EqualFold(k, "Host") {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

type rpcResponse struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    struct {
			Error             string   `json:"error"`
			Code              string   `json:"code"`
			RequiredScopes    []string `json:"required_scopes"`
			RetryAfterSeconds int      `json:"retry_after_seconds"`
		} `json:"data"`
	} `json:"error"`
}

type toolResult struct {
	Meta    map[string]any `json:"_meta"`
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
}

func rpcBody(id int, method string, params any) string {
	m := map[string]any{"jsonrpc": "2.0", "id": id, "method": method}
	if params != nil {
		m["params"] = params
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// callTool sends tools/call over /mcp.
func (s *server) callTool(t testing.TB, token, tool string, args json.RawMessage) (response, rpcResponse) {
	t.Helper()
	params := map[string]any{"name": tool}
	if args != nil {
		params["arguments"] = args
	}
	r := s.do(t, "POST", "/mcp", token, rpcBody(1, "tools/call", params))
	var rr rpcResponse
	r.json(t, &rr)
	return r, rr
}

// toolResultOf decodes a successful JSON-RPC response as a tool result.
func toolResultOf(t testing.TB, r response, rr rpcResponse) toolResult {
	t.Helper()
	if r.status != http.StatusOK || rr.Error != nil {
		t.Fatalf("status %d, JSON-RPC error %s", r.status, r.body)
	}
	var tr toolResult
	if err := json.Unmarshal(rr.Result, &tr); err != nil {
		t.Fatalf("tool result %s: %v", rr.Result, err)
	}
	return tr
}

// records returns the audit records written since n.
func (s *server) recordsSince(n int) []audit.Record {
	return s.sink.Records()[n:]
}

// expectOneRecord runs fn and returns the single audit record it must write.
func (s *server) expectOneRecord(t testing.TB, fn func()) audit.Record {
	t.Helper()
	before := len(s.sink.Records())
	fn()
	recs := s.recordsSince(before)
	if len(recs) != 1 {
		t.Fatalf("%d audit records, want exactly 1: %+v", len(recs), recs)
	}
	return recs[0]
}

// expectNoRecord runs fn and fails if it wrote any audit record.
func (s *server) expectNoRecord(t testing.TB, fn func()) {
	t.Helper()
	before := len(s.sink.Records())
	fn()
	if recs := s.recordsSince(before); len(recs) != 0 {
		t.Fatalf("%d audit records, want none: %+v", len(recs), recs)
	}
}

// storeToken writes a token record directly (for expired and revoked tokens).
func (s *server) storeToken(t testing.TB, expires time.Time, revoked bool) string {
	t.Helper()
	secret, hash, err := auth.Mint()
	if err != nil {
		t.Fatal(err)
	}
	rec := auth.TokenRecord{Hash: hash, TokenID: auth.NewTokenID(), Name: "t", WorkspaceID: gt.WS, UserID: gt.Admin,
		Scopes: auth.AllScopes, CreatedAt: time.Now().Add(-2 * time.Hour), ExpiresAt: expires}
	if err := s.w.Store.CreateToken(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	if revoked {
		if _, err := s.w.Store.UpdateTokenRevoked(context.Background(), rec.TokenID, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	return secret
}

func compact(t testing.TB, b []byte) string {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		t.Fatalf("compact %q: %v", b, err)
	}
	return buf.String()
}

// toolsHolding names, in catalog order, the tools a token of scopes may call (an
// admin's token: the role allows every tool), which is what tools/list gives it.
func toolsHolding(cat *catalog.Catalog, scopes ...string) []string {
	p := auth.Principal{Scopes: scopes}
	var names []string
	for _, t := range cat.Tools() {
		if p.Has(t.Scopes...) {
			names = append(names, t.Name)
		}
	}
	return names
}
