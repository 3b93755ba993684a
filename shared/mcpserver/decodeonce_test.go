package mcpserver

import (
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// The pre-dispatch decodes a tools/call's params once and hands the version its
// _meta declares to checkProtocol. These tests hold the result to the functions it
// replaced, kept here as oracles: checkProtocolOracle decodes the params itself,
// parseToolCallOracle decodes _meta as a plain map.

// oracleToolCallParams are tools/call params as parseToolCall decoded them before.
type oracleToolCallParams struct {
	Name      string                     `json:"name"`
	Arguments json.RawMessage            `json:"arguments"`
	Meta      map[string]json.RawMessage `json:"_meta"`
}

func parseToolCallOracle(params json.RawMessage) oracleToolCallParams {
	var p oracleToolCallParams
	if json.Unmarshal(params, &p) != nil {
		return oracleToolCallParams{}
	}
	return p
}

// checkProtocolOracle is checkProtocol as it was before it took the declared
// version: it decodes params' _meta into an *mcp.Meta every time.
func checkProtocolOracle(header http.Header, env rpcEnvelope) *protocolError {
	hv := header.Get(mcp.HeaderProtocolVersion)
	var params struct {
		Meta *mcp.Meta `json:"_meta"`
	}
	_ = json.Unmarshal(env.Params, &params)
	mv := params.Meta.ProtocolVersion()

	for _, v := range []string{hv, mv} {
		if v != "" && !mcp.IsValidProtocolVersion(v) {
			e := mcp.UnsupportedProtocolVersionError{Version: v, Supported: mcp.ValidProtocolVersions}.JSONRPCError()
			return &protocolError{code: e.Error.Code, msg: e.Error.Message, data: e.Error.Data}
		}
	}
	if !mcp.IsModernProtocol(hv) && !mcp.IsModernProtocol(mv) {
		return nil
	}
	switch {
	case hv == "":
		return &protocolError{code: mcp.HEADER_MISMATCH, msg: mcp.HeaderProtocolVersion + " header is required for requests carrying " + mcp.MetaKeyProtocolVersion}
	case mv == "":
		return &protocolError{code: mcp.INVALID_PARAMS, msg: "missing or invalid _meta field " + mcp.MetaKeyProtocolVersion}
	case hv != mv:
		return &protocolError{code: mcp.HEADER_MISMATCH, msg: mcp.HeaderProtocolVersion + " header " + hv + " does not match request " + mcp.MetaKeyProtocolVersion + " " + mv}
	}
	if env.Method == "" {
		return nil
	}
	if err := mcp.ValidateStandardHeaders(header.Get, mv, mcp.MCPMethod(env.Method), env.Params); err != nil {
		var hm mcp.HeaderMismatchError
		if errors.As(err, &hm) {
			return &protocolError{code: mcp.HEADER_MISMATCH, msg: hm.Error()}
		}
		return &protocolError{code: mcp.HEADER_MISMATCH, msg: "header mismatch"}
	}
	return nil
}

// compareDecodeOnce runs one body and header set through the new and the oracle
// pre-dispatch decoding and fails on any difference. The params are decoded as a
// tools/call's whatever the method, so that every params shape reaches
// declaredVersion.
func compareDecodeOnce(t *testing.T, body, version, method, name string) {
	t.Helper()
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
	tc, decoded := parseToolCall(env.Params)
	old := parseToolCallOracle(env.Params)
	if tc.Name != old.Name || string(tc.Arguments) != string(old.Arguments) || !reflect.DeepEqual(tc.Meta.fields, old.Meta) {
		t.Fatalf("parseToolCall(%q) = %q %q %v, oracle %q %q %v", env.Params, tc.Name, tc.Arguments, tc.Meta.fields, old.Name, old.Arguments, old.Meta)
	}
	want := checkProtocolOracle(h, env)
	for _, declared := range []bodyVersion{tc.declaredVersion(decoded), {}} {
		if got := checkProtocol(h, env, declared); !reflect.DeepEqual(got, want) {
			t.Fatalf("body %q headers %v: checkProtocol(declared %+v) = %+v, oracle %+v", body, h, declared, got, want)
		}
	}
	if bv := tc.declaredVersion(decoded); bv.known {
		var p struct {
			Meta *mcp.Meta `json:"_meta"`
		}
		_ = json.Unmarshal(env.Params, &p)
		if bv.v != p.Meta.ProtocolVersion() {
			t.Fatalf("params %q: declared version %q, *mcp.Meta reads %q", env.Params, bv.v, p.Meta.ProtocolVersion())
		}
	}
}

const pvKey = `"` + mcp.MetaKeyProtocolVersion + `"`

var decodeOnceCases = []struct{ name, body, version, method, mcpName string }{
	{"no meta", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_issue","arguments":{"issue_id":"AAC-1"}}}`, "2025-11-25", "", ""},
	{"modern agreeing", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_issue","_meta":{` + pvKey + `:"2026-07-28"}}}`, "2026-07-28", "tools/call", "get_issue"},
	{"modern no header", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_issue","_meta":{` + pvKey + `:"2026-07-28"}}}`, "", "", ""},
	{"modern mismatch", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_issue","_meta":{` + pvKey + `:"2025-11-25"}}}`, "2026-07-28", "tools/call", "get_issue"},
	{"unknown body version", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{` + pvKey + `:"1999-01-01"}}}`, "", "", ""},
	{"version not a string", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{` + pvKey + `:20260728}}}`, "2026-07-28", "tools/call", "x"},
	{"version null", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{` + pvKey + `:null}}}`, "2026-07-28", "tools/call", "x"},
	{"meta null", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":null}}`, "2026-07-28", "tools/call", "x"},
	{"meta not an object", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":"2026-07-28"}}`, "2026-07-28", "tools/call", "x"},
	{"name not a string", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5,"_meta":{` + pvKey + `:"2026-07-28"}}}`, "2026-07-28", "tools/call", "x"},
	{"params not an object", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[1]}`, "2026-07-28", "tools/call", "x"},
	{"params absent", `{"jsonrpc":"2.0","id":1,"method":"tools/call"}`, "2026-07-28", "tools/call", "x"},
	{"params null", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":null}`, "2025-11-25", "", ""},
	// *mcp.Meta keeps the last _meta, a map field merges them: the version must
	// come from the last.
	{"meta repeated", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{` + pvKey + `:"2026-07-28"},"_meta":{}}}`, "2026-07-28", "tools/call", "x"},
	{"meta repeated other case", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_META":{` + pvKey + `:"2026-07-28"},"_meta":{"a":1}}}`, "2026-07-28", "tools/call", "x"},
	{"meta then null", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{` + pvKey + `:"2026-07-28"},"_meta":null}}`, "2026-07-28", "tools/call", "x"},
	// A number beyond float64 in _meta makes *mcp.Meta fail to decode: no version.
	{"meta huge number", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{` + pvKey + `:"2026-07-28","progressToken":1e400}}}`, "2026-07-28", "tools/call", "x"},
	{"meta nested huge number", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{` + pvKey + `:"2026-07-28","a":{"b":[-1e999]}}}}`, "2026-07-28", "tools/call", "x"},
	{"meta number-like string", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{` + pvKey + `:"2026-07-28","a":"1e400 \"1e999\""}}}`, "2026-07-28", "tools/call", "x"},
	{"meta escaped version", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"io.modelcontextprotocol\/protocolVersion":"2026\u002d07-28"}}}`, "2026-07-28", "tools/call", "x"},
	{"meta key repeated", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{` + pvKey + `:"2026-07-28",` + pvKey + `:"2025-11-25"}}}`, "2025-11-25", "", ""},
	{"params key case", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"NAME":"x","_Meta":{` + pvKey + `:"2026-07-28"}}}`, "2026-07-28", "tools/call", "x"},
	{"other method", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{` + pvKey + `:"2026-07-28"}}}`, "2026-07-28", "tools/list", ""},
	{"response", `{"jsonrpc":"2.0","id":1,"result":{},"params":{"_meta":{` + pvKey + `:"2026-07-28"}}}`, "2026-07-28", "", ""},
	{"invalid utf8 version", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"x\",\"_meta\":{" + pvKey + ":\"2026-07-28\xff\"}}}", "2026-07-28", "tools/call", "x"},
}

func TestDecodeOnceMatchesOracle(t *testing.T) {
	for _, tc := range decodeOnceCases {
		t.Run(tc.name, func(t *testing.T) {
			compareDecodeOnce(t, tc.body, tc.version, tc.method, tc.mcpName)
		})
	}
}

func TestDeclaredVersion(t *testing.T) {
	tests := []struct {
		name, params string
		want         bodyVersion
	}{
		{"no meta", `{"name":"x"}`, bodyVersion{known: true}},
		{"version", `{"_meta":{` + pvKey + `:"2026-07-28"}}`, bodyVersion{v: "2026-07-28", known: true}},
		{"meta null", `{"_meta":null}`, bodyVersion{known: true}},
		{"version a number", `{"_meta":{` + pvKey + `:1}}`, bodyVersion{known: true}},
		{"huge number", `{"_meta":{` + pvKey + `:"2026-07-28","p":1e309}}`, bodyVersion{known: true}},
		{"largest float", `{"_meta":{` + pvKey + `:"2026-07-28","p":1.7976931348623157e308}}`, bodyVersion{v: "2026-07-28", known: true}},
		{"repeated meta", `{"_meta":{},"_meta":{}}`, bodyVersion{}},
		{"undecodable", `{"name":1}`, bodyVersion{}},
		{"absent", ``, bodyVersion{}},
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

func TestNumbersFitFloat64(t *testing.T) {
	tests := []struct {
		json string
		want bool
	}{
		{`{}`, true},
		{`1`, true},
		{`-0.5e-400`, true}, // underflow rounds to zero: no error
		{`1e308`, true},
		{`1e309`, false},
		{`-1E+400`, false},
		{`"1e400"`, true},
		{`"\"1e400"`, true},
		{`"\\"`, true},
		{`["\\",1e400]`, false},
		{`{"a":[true,false,null,{"b":"1e999"}]}`, true},
		{`{"a":[true,false,null,{"b":1e999}]}`, false},
		{`1` + strings.Repeat("0", 400), false},
	}
	for _, tc := range tests {
		if got := numbersFitFloat64([]byte(tc.json)); got != tc.want {
			t.Errorf("numbersFitFloat64(%.40s) = %v, want %v", tc.json, got, tc.want)
		}
	}
}

// FuzzDecodeOnce holds the once-decoded pre-dispatch to the oracles on arbitrary
// bodies and headers: same params, same protocol verdict, byte for byte.
func FuzzDecodeOnce(f *testing.F) {
	for _, tc := range decodeOnceCases {
		f.Add(tc.body, tc.version, tc.method, tc.mcpName)
	}
	f.Fuzz(compareDecodeOnce)
}

// BenchmarkPreDispatchDecode is the pre-dispatch's decoding of one tools/call
// (envelope, params, protocol check), once-decoded against the oracles.
func BenchmarkPreDispatchDecode(b *testing.B) {
	bodies := []struct{ name, body, version string }{
		{"legacy", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_issue","arguments":{"issue_id":"AAC-1"}}}`, "2025-11-25"},
		{"modern", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_issue","arguments":{"issue_id":"AAC-1"},"_meta":{` + pvKey + `:"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"}}}}`, "2026-07-28"},
	}
	for _, bb := range bodies {
		h := http.Header{}
		h.Set(mcp.HeaderProtocolVersion, bb.version)
		h.Set(mcp.HeaderMethod, "tools/call")
		h.Set(mcp.HeaderName, "get_issue")
		body := []byte(bb.body)
		b.Run(bb.name+"/oracle", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				env, _, _ := parseEnvelope(body)
				_ = parseToolCallOracle(env.Params)
				if pe := checkProtocolOracle(h, env); pe != nil {
					b.Fatal(pe.msg)
				}
			}
		})
		b.Run(bb.name+"/once", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				env, _, _ := parseEnvelope(body)
				tc, decoded := parseToolCall(env.Params)
				if pe := checkProtocol(h, env, tc.declaredVersion(decoded)); pe != nil {
					b.Fatal(pe.msg)
				}
			}
		})
	}
}
