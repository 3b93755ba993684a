package mcpserver

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// FuzzRequestIDOf: the id callTool answers with is the one mcp-go's RequestId
// decodes from the same bytes, whatever the id (strconv's fast path for numbers
// included), and an id it cannot decode answers with none.
func FuzzRequestIDOf(f *testing.F) {
	for _, s := range []string{`1`, `-42`, `1e3`, `1.5`, `-0`, `9007199254740993`, `1e400`, `"x"`, `"\ud800"`, `null`, `0.1e-2`, `123456789012345678901234567890`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var env rpcEnvelope
		if json.Unmarshal([]byte(`{"id":`+string(raw)+`}`), &env) != nil || !validID(env.ID) {
			return // parseEnvelope hands over only one valid JSON value
		}
		var want mcp.RequestId
		if json.Unmarshal(env.ID, &want) != nil {
			want = mcp.RequestId{}
		}
		got := requestIDOf(env.ID)
		if !reflect.DeepEqual(got.Value(), want.Value()) {
			t.Fatalf("requestIDOf(%s) = %#v, RequestId decodes %#v", env.ID, got.Value(), want.Value())
		}
	})
}
