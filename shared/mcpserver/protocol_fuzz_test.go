package mcpserver

import (
	"net/http"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// FuzzCheckProtocol feeds arbitrary bodies and headers to the pre-dispatch
// protocol check: it must never panic, and whatever it refuses is a 400-class
// JSON-RPC error with a code from the protocol's set.
func FuzzCheckProtocol(f *testing.F) {
	f.Add(`{"jsonrpc":"2.0","id":1,"method":"ping"}`, "", "", "")
	f.Add(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, "2026-07-28", "tools/list", "")
	f.Add(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_issue","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, "2026-07-28", "tools/call", "=?base64?Z2V0X2lzc3Vl?=")
	f.Add(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5}}`, "2026-07-28", "tools/call", "x")
	f.Add(`{"params":"not an object"}`, "2025-06-18", "", "")
	f.Fuzz(func(t *testing.T, body, version, method, name string) {
		env, batch, err := parseEnvelope([]byte(body))
		if err != nil || batch {
			return
		}
		h := http.Header{}
		for k, v := range map[string]string{mcp.HeaderProtocolVersion: version, mcp.HeaderMethod: method, mcp.HeaderName: name} {
			if v != "" {
				h.Set(k, v)
			}
		}
		pe := checkProtocol(h, env, bodyVersion{})
		if pe == nil {
			return
		}
		switch pe.code {
		case mcp.UNSUPPORTED_PROTOCOL_VERSION, mcp.HEADER_MISMATCH, mcp.INVALID_PARAMS:
		default:
			t.Fatalf("unexpected code %d (%s)", pe.code, pe.msg)
		}
		if pe.msg == "" {
			t.Fatal("refusal without a message")
		}
	})
}
