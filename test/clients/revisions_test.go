package clients_test

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// rawPost sends one JSON-RPC message to tg's /mcp and decodes the answer.
func rawPost(t *testing.T, tg target, token string, headers map[string]string, body string) (int, http.Header, rpcReply) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, tg.mcpURL, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var r rpcReply
	if len(strings.TrimSpace(string(raw))) > 0 {
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatalf("HTTP %d: not JSON-RPC: %s", resp.StatusCode, raw)
		}
	}
	r.raw = raw
	return resp.StatusCode, resp.Header, r
}

type rpcReply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
	raw []byte
}

func modernMeta(version string) string {
	return `"_meta":{"io.modelcontextprotocol/protocolVersion":"` + version +
		`","io.modelcontextprotocol/clientInfo":{"name":"raw-http","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
}

// TestProtocolRevisionsOverHTTP speaks each revision by hand through every
// target, including the refusals no client library would produce: an unsupported
// MCP-Protocol-Version, and 2026-07-28 headers that contradict the body.
func TestProtocolRevisionsOverHTTP(t *testing.T) {
	for _, tg := range targets(t) {
		t.Run(tg.name, func(t *testing.T) {
			ro := tg.scoped(t, "issues:read")
			for _, v := range []string{"2025-03-26", "2025-06-18", "2025-11-25"} {
				status, _, r := rawPost(t, tg, tg.full, nil,
					`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+v+`","capabilities":{},"clientInfo":{"name":"raw-http","version":"1"}}}`)
				var init struct {
					ProtocolVersion string `json:"protocolVersion"`
				}
				if status != http.StatusOK || r.Error != nil || json.Unmarshal(r.Result, &init) != nil || init.ProtocolVersion != v {
					t.Errorf("initialize %s: HTTP %d %s", v, status, r.raw)
				}
				h := map[string]string{"MCP-Protocol-Version": v}
				if v == "2025-03-26" {
					h = nil // that revision has no header
				}
				if status, _, r := rawPost(t, tg, tg.full, h, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_issues","arguments":{"limit":1}}}`); status != http.StatusOK || r.Error != nil {
					t.Errorf("tools/call on %s: HTTP %d %s", v, status, r.raw)
				}
			}

			modern := "2026-07-28"
			list := `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{` + modernMeta(modern) + `}}`
			names := map[string][]string{}
			for label, token := range map[string]string{"full": tg.full, "issues:read": ro} {
				status, hdr, r := rawPost(t, tg, token, map[string]string{"MCP-Protocol-Version": modern, "Mcp-Method": "tools/list"}, list)
				var res struct {
					CacheScope string `json:"cacheScope"`
					Tools      []struct {
						Name string `json:"name"`
					} `json:"tools"`
				}
				if status != http.StatusOK || r.Error != nil || json.Unmarshal(r.Result, &res) != nil {
					t.Fatalf("2026-07-28 tools/list (%s): HTTP %d %s", label, status, r.raw)
				}
				if res.CacheScope != "private" {
					t.Errorf("2026-07-28 tools/list (%s): cacheScope %q, want private", label, res.CacheScope)
				}
				if cc := hdr.Get("Cache-Control"); !strings.Contains(cc, "no-store") && !strings.Contains(cc, "private") {
					t.Errorf("2026-07-28 tools/list (%s): Cache-Control %q lets a shared cache keep it", label, cc)
				}
				for _, tl := range res.Tools {
					names[label] = append(names[label], tl.Name)
				}
			}
			if !slices.Equal(names["issues:read"], []string{"list_issues", "get_issue"}) || len(names["full"]) != len(catalogTools()) {
				t.Errorf("tools/list does not vary by token: %v", names)
			}

			call := func(name string) string {
				return `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"` + name + `","arguments":{"limit":1},` + modernMeta(modern) + `}}`
			}
			refusals := []struct {
				name    string
				headers map[string]string
				body    string
			}{
				{"unsupported MCP-Protocol-Version", map[string]string{"MCP-Protocol-Version": "2024-01-01"}, `{"jsonrpc":"2.0","id":5,"method":"ping"}`},
				{"future MCP-Protocol-Version", map[string]string{"MCP-Protocol-Version": "2099-12-31"}, `{"jsonrpc":"2.0","id":5,"method":"ping"}`},
				{"Mcp-Method missing", map[string]string{"MCP-Protocol-Version": modern}, list},
				{"Mcp-Method contradicts the body", map[string]string{"MCP-Protocol-Version": modern, "Mcp-Method": "ping"}, list},
				{"Mcp-Name contradicts the body", map[string]string{"MCP-Protocol-Version": modern, "Mcp-Method": "tools/call", "Mcp-Name": "get_issue"}, call("list_issues")},
				{"Mcp-Name missing", map[string]string{"MCP-Protocol-Version": modern, "Mcp-Method": "tools/call"}, call("list_issues")},
			}
			for _, rf := range refusals {
				status, _, r := rawPost(t, tg, tg.full, rf.headers, rf.body)
				if status != http.StatusBadRequest || r.Error == nil {
					t.Errorf("%s: HTTP %d %s, want 400 with a JSON-RPC error", rf.name, status, r.raw)
				}
			}
			status, _, r := rawPost(t, tg, tg.full, map[string]string{"MCP-Protocol-Version": modern, "Mcp-Method": "tools/call", "Mcp-Name": "list_issues"}, call("list_issues"))
			if status != http.StatusOK || r.Error != nil {
				t.Errorf("2026-07-28 tools/call with matching headers: HTTP %d %s", status, r.raw)
			}
		})
	}
}
