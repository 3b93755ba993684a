package jsondup

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

func TestFind(t *testing.T) {
	tests := []struct {
		doc  string
		name string
		ok   bool
	}{
		{`{}`, "", false},
		{`{"a":1,"b":2}`, "", false},
		{`{"a":1,"a":2}`, "a", true},
		{`{"confirm":false,"confirm":true}`, "confirm", true},
		{`{"a":1,"\u0061":2}`, "a", true},
		{`{"a":{"b":1},"c":{"b":2}}`, "", false},
		{`{"a":{"b":1,"b":2}}`, "b", true},
		{`{"a":[{"x":1},{"x":2}]}`, "", false},
		{`{"a":[{"x":1,"x":2}]}`, "x", true},
		{`[{"a":1},{"a":1}]`, "", false},
		{`{"a":"a","b":"a"}`, "", false},
		{`{"a":[],"a":[]}`, "a", true},
		{`{"a":{},"b":{},"a":null}`, "a", true},
		{`{"k":"v","nested":{"k":"v"},"k2":1}`, "", false},
		{`{"a":1,"a":`, "", false}, // invalid: the decoder's to report
		{`"a"`, "", false},
		{"{\"\xff\":1,\"\xfe\":2}", "\ufffd", true}, // both decode to U+FFFD
		{`{"é":1,"\u00e9":2}`, "é", true},
		// Past smallObject names an object's names move to a map.
		{bigObject(40, "n3"), "n3", true},
		{bigObject(40, "n39"), "n39", true},
		{bigObject(40, ""), "", false},
		{`{"a":` + bigObject(40, "") + `,"b":1,"a":2}`, "a", true},
		{`42`, "", false},
	}
	for _, tc := range tests {
		name, ok := Find([]byte(tc.doc))
		if name != tc.name || ok != tc.ok {
			t.Errorf("Find(%s) = %q, %v; want %q, %v", tc.doc, name, ok, tc.name, tc.ok)
		}
	}
}

// bigObject is an object with members n0..n(n-1), then again, if repeat is not
// empty, a member named repeat.
func bigObject(n int, repeat string) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"n%d":{"n%d":[%d]}`, i, i, i)
	}
	if repeat != "" {
		fmt.Fprintf(&b, `,%q:null`, repeat)
	}
	b.WriteString("}")
	return b.String()
}

// hasDuplicate is an independent reference: it decodes doc keeping every member of
// every object (json.Decoder's Token stream walked recursively) and reports whether
// some object repeats a name.
func hasDuplicate(dec *json.Decoder) (bool, error) {
	tok, err := dec.Token()
	if err != nil {
		return false, err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return false, nil
	}
	dup := false
	switch d {
	case '{':
		seen := map[string]bool{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return false, err
			}
			if seen[k.(string)] {
				dup = true
			}
			seen[k.(string)] = true
			inner, err := hasDuplicate(dec)
			if err != nil {
				return false, err
			}
			dup = dup || inner
		}
	case '[':
		for dec.More() {
			inner, err := hasDuplicate(dec)
			if err != nil {
				return false, err
			}
			dup = dup || inner
		}
	}
	_, err = dec.Token() // the closing delimiter
	return dup, err
}

func FuzzFind(f *testing.F) {
	for _, s := range []string{`{"a":1,"a":2}`, `{"a":{"b":[1,{"c":1,"c":2}]}}`, `[{"a":1},{"a":1}]`, `{"x":"y"}`} {
		f.Add([]byte(s), "k")
	}
	f.Fuzz(func(t *testing.T, doc []byte, key string) {
		name, ok := Find(doc)
		if json.Valid(doc) {
			want, err := hasDuplicate(json.NewDecoder(bytes.NewReader(doc)))
			if err == nil && want != ok {
				t.Fatalf("Find(%q) = %q, %v; reference says duplicate=%v", doc, name, ok, want)
			}
		}
		// Any valid object with a repeated name is caught, whatever the name's
		// spelling and the values.
		if json.Valid(doc) {
			q := strconv.Quote(key)
			if !json.Valid([]byte(q)) {
				return
			}
			twice := []byte(`{` + q + `:` + string(doc) + `,` + q + `:null}`)
			if n, ok := Find(twice); !ok {
				t.Fatalf("Find(%q) missed the repeated %q (got %q)", twice, key, n)
			}
		}
	})
}

// BenchmarkFind is one tools/call body as a client sends it.
func BenchmarkFind(b *testing.B) {
	doc := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_issue","arguments":{"issue_id":"BENCH-4242"},"_meta":{"progressToken":7}}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, dup := Find(doc); dup {
			b.Fatal("duplicate")
		}
	}
}
