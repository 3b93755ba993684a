package jsonstr_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/aacworkflow/aacmcp/shared/internal/jsonstr"
)

// marshal is the oracle: encoding/json's bytes for a Go string.
func marshal(t testing.TB, s string) []byte {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatalf("encoding/json: %v", err)
	}
	return b
}

// check compares Append for s, as a string and as a []byte, after two prefixes
// (one without spare capacity, one with), with encoding/json.
func check(t testing.TB, s string) {
	t.Helper()
	want := marshal(t, s)
	for _, prefix := range [][]byte{nil, []byte("pre"), make([]byte, 2, 1024)} {
		full := append(bytes.Clone(prefix), want...)
		if got := jsonstr.Append(bytes.Clone(prefix), s); !bytes.Equal(got, full) {
			t.Fatalf("Append(%q, string %q)\n got %q\nwant %q", prefix, s, got, full)
		}
		if got := jsonstr.Append(bytes.Clone(prefix), []byte(s)); !bytes.Equal(got, full) {
			t.Fatalf("Append(%q, []byte %q)\n got %q\nwant %q", prefix, s, got, full)
		}
	}
	// Spare capacity past what the result covers is left as it was (Append stores
	// whole words ahead of its output).
	buf := bytes.Repeat([]byte{0xAA}, len(want)+64)
	got := jsonstr.Append(buf[:1], s)
	if !bytes.Equal(got[1:], want) {
		t.Fatalf("Append into spare capacity: got %q, want %q", got[1:], want)
	}
	if rest := buf[len(got):]; bytes.Count(rest, []byte{0xAA}) != len(rest) {
		t.Fatalf("Append(%q) wrote past its result: %q", s, rest)
	}
}

func TestAppendMatchesEncodingJSON(t *testing.T) {
	var allBytes strings.Builder
	for b := range 256 {
		allBytes.WriteByte(byte(b))
	}
	tests := []struct {
		name string
		s    string
	}{
		{"empty", ""},
		{"plain", "AAC-42 open medium"},
		{"every byte value", allBytes.String()},
		{"quotes and backslashes", `{"a":"b\\c\"d"}`},
		{"named escapes", "\b\f\n\r\t"},
		{"other controls and DEL", "\x00\x01\x1f\x7f"},
		{"html", `</script><script>alert(1)&x=1</script>`},
		{"line and paragraph separators", "a\u2028b\u2029c\u2027d\u202ae"},
		{"separators at the ends", "\u2028x\u2029"},
		{"valid multi-byte", "café 東京 🦀 \u00a0\ufeff\U0010ffff"},
		{"replacement character itself", "\ufffd"},
		{"invalid UTF-8", "a\x80b\xffc\xc0\xafd\xed\xa0\x80e"},
		{"above U+10FFFF", "\xf4\x90\x80\x80"},
		{"truncated sequence at the end", "ok\xe2\x80"},
		{"truncated separator", "\xe2\x80\xa8\xe2\x80"},
		{"escapes at both ends", "\n\"x\"\t"},
		{"encoded JSON text", `{"title":"\u003cb\u003e \u2028 \ufffd","labels":["a\"b"]}`},
		{"long mixed", strings.Repeat(`Mozilla/5.0 <&> "é" \ `, 200)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { check(t, tt.s) })
	}
}

// TestAppendNoAllocations: with room in dst, a string or a []byte is escaped without
// allocating (the []byte's rune decoding stays on the stack).
func TestAppendNoAllocations(t *testing.T) {
	s := "escapes <&> \n \u2028 \xff é"
	b := []byte(s)
	dst := make([]byte, 0, 256)
	if n := testing.AllocsPerRun(100, func() { dst = jsonstr.Append(dst[:0], s) }); n != 0 {
		t.Errorf("string: %v allocations", n)
	}
	if n := testing.AllocsPerRun(100, func() { dst = jsonstr.Append(dst[:0], b) }); n != 0 {
		t.Errorf("[]byte: %v allocations", n)
	}
}

func FuzzAppendMatchesEncodingJSON(f *testing.F) {
	for _, seed := range []string{
		`{"a":"b\\c\"d"}`, "x<y>&z", "tab\there\n", "\u2028\u2029", "\xff\xfe", "é✓🦀",
		"\x7f\x00", "", "\xe2\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) { check(t, s) })
}

// BenchmarkAppend quotes a list_issues result (compact JSON, a '"' every few bytes),
// what the MCP text content of a tool result costs, beside encoding/json doing it.
func BenchmarkAppend(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"issues":[`)
	for i := range 25 {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"id":"01a22a30-7cd6-71c9-b2e4-61fa2411%04d","key":"AAC-%d","title":"Issue %d",`+
			`"description":"a description of the issue","status":"open","priority":"medium",`+
			`"labels":["backend","team-%d"],"assignee":null,"created_by":"member",`+
			`"created_at":"2026-11-30T02:02:30.485784688Z","updated_at":"2026-11-30T02:02:30.485784688Z",`+
			`"version":1,"comment_count":0}`, i, i, i, i%4)
	}
	sb.WriteString(`],"next_cursor":"eyJ0IjoiMjAyNi0xMS0zMFQwMjowMjozMC40ODU3ODQ2ODhaIn0"}`)
	text := []byte(sb.String())
	b.Run("jsonstr", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		dst := make([]byte, 0, 2*len(text))
		for b.Loop() {
			dst = jsonstr.Append(dst[:0], text)
		}
	})
	b.Run("encoding_json", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			if _, err := json.Marshal(string(text)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
