package mcpserver

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/aacworkflow/aacmcp/shared/guard"
)

// FuzzToolResponseJSON: whatever id a client sends and whatever result a tool
// encodes, a response the direct path writes is one valid JSON-RPC message carrying
// the same id and the result twice (text and structured), unchanged.
func FuzzToolResponseJSON(f *testing.F) {
	f.Add([]byte(`1`), []byte(`{"id":"x","n":1}`))
	f.Add([]byte(` "req-<1>" `), []byte(`{"t":"<b>&\u2028"}`))
	f.Add([]byte(`-42`), []byte(`{"issues":[],"next_cursor":""}`))
	f.Add([]byte(`1e3`), []byte(`{}`))
	f.Add([]byte(`"\ud800"`), []byte(`{"a":"é"}`))
	f.Fuzz(func(t *testing.T, id, result []byte) {
		var rv any
		if json.Unmarshal(result, &rv) != nil || !json.Valid(id) {
			return // the guard only hands over valid JSON; the envelope decoder only valid ids
		}
		compact, err := json.Marshal(rv)
		if err != nil {
			return
		}
		b, ok := toolResponseJSON(id, guard.Result{JSON: compact})
		if !ok {
			return
		}
		var msg struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Result  struct {
				Content []struct {
					Type string `json:"type"`
					Text string `json:"text"`
				} `json:"content"`
				Structured json.RawMessage `json:"structuredContent"`
			} `json:"result"`
		}
		if err := json.Unmarshal(b, &msg); err != nil {
			t.Fatalf("invalid JSON %q: %v", b, err)
		}
		var gotID, wantID any
		if json.Unmarshal(msg.ID, &gotID) != nil || json.Unmarshal(id, &wantID) != nil || gotID != wantID {
			t.Fatalf("id %q came back as %q", id, msg.ID)
		}
		if msg.JSONRPC != "2.0" || len(msg.Result.Content) != 1 || msg.Result.Content[0].Type != "text" ||
			msg.Result.Content[0].Text != string(compact) || !bytes.Equal(msg.Result.Structured, compact) {
			t.Fatalf("result not carried unchanged: %s", b)
		}
	})
}

// FuzzToolResponseText: for any result bytes (JSON or not, so that the escaper's
// every branch is reached) the direct response is byte for byte the fixed parts, the
// id, json.Marshal(string(result)) as the text and the result itself.
func FuzzToolResponseText(f *testing.F) {
	for _, seed := range []string{
		`{"a":"b\\c\"d"}`, "x<y", "tab\there", "\u2028", "\xff", "é✓", "\x7f", "\xe2\x80",
		`{"issues":[{"title":"\u003cb\u003e \u2028 \ufffd","labels":["a\"b"]}],"next_cursor":""}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, result []byte) {
		if len(result) == 0 {
			return // not a result the direct path shapes
		}
		text, err := json.Marshal(string(result))
		if err != nil {
			t.Skip()
		}
		want := `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":` + string(text) +
			`}],"structuredContent":` + string(result) + `}}`
		got, ok := toolResponseJSON([]byte("7"), guard.Result{JSON: result})
		if !ok || string(got) != want {
			t.Fatalf("toolResponseJSON(%q) = %q, %v\nwant %q", result, got, ok, want)
		}
	})
}
