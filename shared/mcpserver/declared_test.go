package mcpserver

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// TestDeclaredVersion: the version a tools/call's _meta declares, as the protocol
// check reads it. tools/call never reaches mcp-go, so this decoding is the only one;
// a number *mcp.Meta could not hold (1e309) no longer hides the version.
func TestDeclaredVersion(t *testing.T) {
	pvKey := strconv.Quote(mcp.MetaKeyProtocolVersion)
	tests := []struct {
		name, params string
		want         bodyVersion
	}{
		{"no meta", `{"name":"x"}`, bodyVersion{known: true}},
		{"version", `{"_meta":{` + pvKey + `:"2026-07-28"}}`, bodyVersion{v: "2026-07-28", known: true}},
		{"meta null", `{"_meta":null}`, bodyVersion{known: true}},
		{"version a number", `{"_meta":{` + pvKey + `:1}}`, bodyVersion{known: true}},
		{"huge number beside it", `{"_meta":{` + pvKey + `:"2026-07-28","p":1e309}}`, bodyVersion{v: "2026-07-28", known: true}},
		{"meta not an object", `{"_meta":"2026-07-28"}`, bodyVersion{known: true}},
		{"undecodable", `{"name":1}`, bodyVersion{known: true}},
		{"absent", ``, bodyVersion{known: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, decoded := parseToolCall(json.RawMessage(tc.params))
			if got := p.declaredVersion(decoded); got != tc.want {
				t.Errorf("declaredVersion(%s) = %+v, want %+v", tc.params, got, tc.want)
			}
		})
	}
}
