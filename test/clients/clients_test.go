// Package clients_test drives aacmcp with the MCP clients users have: the official
// TypeScript SDK client, the MCP Inspector CLI, mcp-go's client and the official Go
// SDK client, plus plain curl. Every client lists the tools (and checks their
// annotations against the catalog), reads, writes, makes a destructive call without
// confirm (refused) and one with it (done), against `aacmcp serve` and against the
// Lambda code behind the local API Gateway.
package clients_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aacworkflow/aacmcp/shared/catalog"
	"github.com/aacworkflow/aacmcp/test/clients/harness"
)

func TestMain(m *testing.M) { harness.Main(m) }

// confirmRefusal is the spec's refusal of a destructive call without confirm.
var confirmRefusal = errorBody{Error: "confirm: true required for destructive operations", Code: "destructive_flag_missing"}

type errorBody struct {
	Error string `json:"error"`
	Code  string `json:"code"`
}

// target is one deployment shape the clients run against.
type target struct {
	name string
	// base is the URL before /mcp; mcpURL the MCP endpoint.
	base, mcpURL string
	// full is a token of the dev admin with every scope.
	full string
	// token mints another token of the dev admin holding exactly scopes.
	token func(t testing.TB, name string, scopes ...string) string
	// logs is the server's stderr so far, for failure messages.
	logs func() string
}

var (
	scopedMu     sync.Mutex
	scopedTokens = map[string]string{}
)

// scoped returns a token of tg holding exactly scopes, minted once per test binary.
func (tg target) scoped(t testing.TB, scopes ...string) string {
	t.Helper()
	key := tg.name + "|" + strings.Join(scopes, ",")
	scopedMu.Lock()
	defer scopedMu.Unlock()
	if tok, ok := scopedTokens[key]; ok {
		return tok
	}
	tok := tg.token(t, "clients-"+strings.NewReplacer(":", "-", ",", "_").Replace(strings.Join(scopes, "_")), scopes...)
	scopedTokens[key] = tok
	return tok
}

// serveTarget is `aacmcp serve --dev`, the package's one local server.
func serveTarget(t testing.TB) target {
	t.Helper()
	s := harness.Serve(t)
	return target{name: "serve", base: s.Base, mcpURL: s.MCPURL, full: s.Full, token: s.Token, logs: s.Logs}
}

// gatewayTarget is the Lambda handler behind `aacmcp gateway` (API Gateway's
// stand-in, with the authorizer) on dynalite and kinesalite.
func gatewayTarget(t testing.TB) target {
	t.Helper()
	g := harness.ServeGateway(t)
	return target{name: "gateway", base: g.Base, mcpURL: g.MCPURL, full: g.Full, token: g.Token, logs: g.Logs}
}

// targets are every deployment shape: the local server and the Lambda handler
// behind the local API Gateway.
func targets(t testing.TB) []target {
	t.Helper()
	return []target{serveTarget(t), gatewayTarget(t)}
}

// catalogTools is what every client must see in tools/list.
func catalogTools() []catalog.Tool {
	return catalog.New(catalog.Deps{}).Tools()
}

// listedTool is a tools/list entry as a client library decoded it.
type listedTool struct {
	Name                                         string
	ReadOnly, Destructive, Idempotent, OpenWorld *bool
	Scopes                                       []string
	RequiresConfirm                              *bool
}

// toolResult is a tools/call result as a client library decoded it.
type toolResult struct {
	IsError    bool
	Text       string
	Structured json.RawMessage
}

// session is what the scenario needs from a client library.
type session interface {
	ListTools(ctx context.Context) ([]listedTool, error)
	Call(ctx context.Context, name string, args map[string]any) (toolResult, error)
}

// checkAnnotations requires every catalog tool, in catalog order, with all four
// annotations explicit and equal to the catalog's.
func checkAnnotations(t *testing.T, got []listedTool) {
	t.Helper()
	want := catalogTools()
	var names, wantNames []string
	for _, g := range got {
		names = append(names, g.Name)
	}
	for _, w := range want {
		wantNames = append(wantNames, w.Name)
	}
	if !slices.Equal(names, wantNames) {
		t.Fatalf("tools/list: %v, want %v", names, wantNames)
	}
	b := func(p *bool) string {
		if p == nil {
			return "unset"
		}
		if *p {
			return "true"
		}
		return "false"
	}
	for i, w := range want {
		g := got[i]
		for _, a := range []struct {
			name string
			got  *bool
			want bool
		}{
			{"readOnlyHint", g.ReadOnly, w.Annotations.ReadOnly},
			{"destructiveHint", g.Destructive, w.Annotations.Destructive},
			{"idempotentHint", g.Idempotent, w.Annotations.Idempotent},
			{"openWorldHint", g.OpenWorld, w.Annotations.OpenWorld},
		} {
			if a.got == nil || *a.got != a.want {
				t.Errorf("%s %s: %s, want %v", w.Name, a.name, b(a.got), a.want)
			}
		}
		if g.Scopes != nil && !slices.Equal(g.Scopes, w.Scopes) {
			t.Errorf("%s _meta scopes %v, want %v", w.Name, g.Scopes, w.Scopes)
		}
		if g.RequiresConfirm != nil && *g.RequiresConfirm != w.Annotations.Destructive {
			t.Errorf("%s _meta requires_confirm %v, want %v", w.Name, *g.RequiresConfirm, w.Annotations.Destructive)
		}
	}
}

// runScenario is what every client does: list, read, write, a destructive call
// without confirm (refused, nothing deleted) and with it (deleted).
func runScenario(t *testing.T, s session, client string) {
	t.Helper()
	ctx := context.Background()
	tools, err := s.ListTools(ctx)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	checkAnnotations(t, tools)

	page := mustCall(t, s, "list_issues", map[string]any{"limit": 5})
	var issues struct {
		Issues []struct {
			ID string `json:"id"`
		} `json:"issues"`
	}
	decode(t, page, &issues)
	if len(issues.Issues) == 0 {
		t.Fatalf("list_issues returned no issue; the dev workspace is seeded: %s", page)
	}

	created := mustCall(t, s, "create_issue", map[string]any{"title": "Filed by " + client, "labels": []string{"client-test"}})
	var issue struct {
		ID    string `json:"id"`
		Key   string `json:"key"`
		Title string `json:"title"`
	}
	decode(t, created, &issue)
	if issue.ID == "" || issue.Key == "" || issue.Title != "Filed by "+client {
		t.Fatalf("create_issue returned %s", created)
	}

	refused := callError(t, s, "delete_issue", map[string]any{"issue_id": issue.ID})
	if refused != confirmRefusal {
		t.Fatalf("delete_issue without confirm: %+v, want %+v", refused, confirmRefusal)
	}
	again := mustCall(t, s, "get_issue", map[string]any{"issue_id": issue.Key})
	var still struct {
		ID string `json:"id"`
	}
	decode(t, again, &still)
	if still.ID != issue.ID {
		t.Fatalf("after the refused delete get_issue returned %s", again)
	}

	deleted := mustCall(t, s, "delete_issue", map[string]any{"issue_id": issue.ID, "confirm": true})
	var del struct {
		Deleted bool   `json:"deleted"`
		IssueID string `json:"issue_id"`
	}
	decode(t, deleted, &del)
	if !del.Deleted || del.IssueID != issue.ID {
		t.Fatalf("delete_issue with confirm returned %s", deleted)
	}
	if gone := callError(t, s, "get_issue", map[string]any{"issue_id": issue.ID}); gone.Code != "not_found" {
		t.Fatalf("get_issue of the deleted issue: %+v, want not_found", gone)
	}
}

// mustCall calls a tool that must succeed and returns its structured result.
func mustCall(t *testing.T, s session, name string, args map[string]any) json.RawMessage {
	t.Helper()
	res, err := s.Call(context.Background(), name, args)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if res.IsError {
		t.Fatalf("%s: error result %s", name, res.Text)
	}
	if len(res.Structured) == 0 {
		t.Fatalf("%s: no structured content (text %q)", name, res.Text)
	}
	if !jsonEqual(res.Structured, json.RawMessage(res.Text)) {
		t.Errorf("%s: the text content %s is not the structured content %s", name, res.Text, res.Structured)
	}
	return res.Structured
}

// callError calls a tool that must fail with an error result and returns the
// error object its text carries.
func callError(t *testing.T, s session, name string, args map[string]any) errorBody {
	t.Helper()
	res, err := s.Call(context.Background(), name, args)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if !res.IsError {
		t.Fatalf("%s: want an error result, got %s", name, res.Text)
	}
	var e errorBody
	if err := json.Unmarshal([]byte(res.Text), &e); err != nil {
		t.Fatalf("%s: error text %q is not the error object: %v", name, res.Text, err)
	}
	return e
}

func decode(t *testing.T, raw json.RawMessage, v any) {
	t.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}

// headerTransport adds fixed headers to every request and records the MCP
// headers and methods each request carried.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string

	mu   sync.Mutex
	sent []sentRequest
}

type sentRequest struct {
	Method          string // JSON-RPC method ("" for GET/DELETE or a batch)
	HTTPMethod      string
	ProtocolVersion string // MCP-Protocol-Version header
	McpMethod       string // Mcp-Method header
	McpName         string // Mcp-Name header
}

func (h *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.headers {
		r.Header.Set(k, v)
	}
	rec := sentRequest{
		HTTPMethod:      r.Method,
		ProtocolVersion: r.Header.Get("MCP-Protocol-Version"),
		McpMethod:       r.Header.Get("Mcp-Method"),
		McpName:         r.Header.Get("Mcp-Name"),
	}
	if r.GetBody != nil {
		if body, err := r.GetBody(); err == nil {
			var env struct {
				Method string `json:"method"`
			}
			_ = json.NewDecoder(body).Decode(&env)
			_ = body.Close()
			rec.Method = env.Method
		}
	}
	h.mu.Lock()
	h.sent = append(h.sent, rec)
	h.mu.Unlock()
	base := h.base
	if base == nil {
		base = http.DefaultTransport
	}
	return base.RoundTrip(r)
}

func (h *headerTransport) requests() []sentRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.sent)
}

// checkWire requires that the client spoke version on the wire: for 2026-07-28 no
// initialize, a server/discover, and every POST with Mcp-Method (and Mcp-Name on
// tools/call) mirroring the body; for earlier revisions an initialize and, from
// 2025-06-18, the MCP-Protocol-Version header on every later request.
func checkWire(t *testing.T, sent []sentRequest, version string) {
	t.Helper()
	var methods []string
	for _, r := range sent {
		if r.HTTPMethod == http.MethodPost {
			methods = append(methods, r.Method)
		}
	}
	if version >= "2026-07-28" {
		if slices.Contains(methods, "initialize") {
			t.Errorf("2026-07-28 client sent initialize: %v", methods)
		}
		if !slices.Contains(methods, "server/discover") {
			t.Errorf("2026-07-28 client sent no server/discover: %v", methods)
		}
		for _, r := range sent {
			if r.HTTPMethod != http.MethodPost || r.Method == "" || strings.HasPrefix(r.Method, "notifications/") {
				continue
			}
			if r.ProtocolVersion != version || r.McpMethod != r.Method {
				t.Errorf("%s sent with MCP-Protocol-Version %q, Mcp-Method %q", r.Method, r.ProtocolVersion, r.McpMethod)
			}
			if r.Method == "tools/call" && r.McpName == "" {
				t.Errorf("tools/call sent without Mcp-Name")
			}
		}
		return
	}
	if len(methods) == 0 || methods[0] != "initialize" {
		t.Fatalf("%s client did not start with initialize: %v", version, methods)
	}
	if version < "2025-06-18" {
		return
	}
	for _, r := range sent[1:] {
		if r.HTTPMethod == http.MethodPost && r.ProtocolVersion != version {
			t.Errorf("%s sent with MCP-Protocol-Version %q, want %s", r.Method, r.ProtocolVersion, version)
		}
	}
}
