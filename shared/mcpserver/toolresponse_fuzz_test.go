package mcpserver

import (
	"encoding/json"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/guard"
)

// FuzzToolCallResponse: whatever id a client sends and whatever result a tool
// encodes (a success, a replay, a refusal; on a legacy or a 2026-07-28 request),
// the response callTool writes is byte for byte what encoding/json makes of the
// same result held in mcp-go's own types (mcp.JSONRPCResponse of an
// *mcp.CallToolResult): toolCallWire changes the cost, never the bytes.
func FuzzToolCallResponse(f *testing.F) {
	f.Add([]byte(`1`), []byte(`{"id":"x","n":1}`), uint8(0))
	f.Add([]byte(` "req-<1>" `), []byte(`{"t":"<b>&\u2028"}`), uint8(1))
	f.Add([]byte(`-42`), []byte(`{"issues":[],"next_cursor":""}`), uint8(2))
	f.Add([]byte(`1e3`), []byte(`{}`), uint8(3))
	f.Add([]byte(`"\ud800"`), []byte(`{"a":"é"}`), uint8(7))
	f.Add([]byte(`null`), []byte(`{"a":[1,2.5e3]}`), uint8(4))
	f.Add([]byte(`7`), []byte(`{"q":"<&>"}`), uint8(13))
	f.Fuzz(func(t *testing.T, rawID, result []byte, mode uint8) {
		var rv any
		if json.Unmarshal(result, &rv) != nil || !json.Valid(rawID) {
			return // the guard only hands over valid JSON; the envelope decoder only valid ids
		}
		compact, err := json.Marshal(rv)
		if err != nil {
			return
		}
		var id mcp.RequestId
		if json.Unmarshal(rawID, &id) != nil {
			return
		}
		res := guard.Result{JSON: compact, Replay: mode&1 != 0}
		if mode&2 != 0 {
			res = guard.Result{Err: apperr.New(apperr.NotFound, string(compact))}
		}
		r := toolResult(res)
		if mode&4 != 0 {
			r.ResultType = mcp.ResultTypeComplete
			r.EnsureResultMeta().SetServerInfo(mcp.Implementation{Name: "aacmcp", Version: "test"})
		}
		if mode&8 != 0 {
			// A content item toolResult never makes: encoding/json's path.
			r.Content = append(r.Content, mcp.TextContent{Annotated: mcp.Annotated{Annotations: &mcp.Annotations{Audience: []mcp.Role{mcp.RoleUser}}}, Type: "text", Text: string(compact)})
		}
		want, err := json.Marshal(mcp.JSONRPCResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: id, Result: r})
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendToolCallResponse([]byte("kept"), id, r)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != "kept"+string(want)+"\n" {
			t.Fatalf("appendToolCallResponse\n got %s\nwant kept%s\\n", got, want)
		}
	})
}
