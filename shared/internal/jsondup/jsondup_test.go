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
		// encoding/json matches member names to struct fields case-insensitively
		// (Unicode simple folding) and the last match wins: names that differ only
		// in case are the same name to it, so they are duplicates here too.
		{`{"name":"get_issue","NAME":"delete_issue"}`, "NAME", true},
		{`{"arguments":{},"Arguments":{"confirm":true}}`, "Arguments", true},
		{`{"method":"tools/list","METHOD":"tools/call"}`, "METHOD", true},
		{`{"a":{"confirm":false,"Confirm":true}}`, "Confirm", true},
		{`{"kind":1,"\u212aind":2}`, "\u212aind", true},                // KELVIN SIGN folds to k
		{`{"arguments":1,"argument\u017f":2}`, "argument\u017f", true}, // LONG S folds to s
		{`{"\u00e9":1,"\u00c9":2}`, "\u00c9", true},
		{`{"stra\u00dfe":1,"STRASSE":2}`, "", false}, // ß is not a simple fold of SS
		{`{"a":1,"b":2,"A1":3}`, "", false},
		{bigObject(40, "N3"), "N3", true},
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
// some object holds two names that strings.EqualFold calls equal, the rule
// encoding/json matches names by.
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
		var seen []string
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return false, err
			}
			for _, prev := range seen {
				if strings.EqualFold(prev, k.(string)) {
					dup = true
				}
			}
			seen = append(seen, k.(string))
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
	for _, s := range []string{`{"a":1,"a":2}`, `{"a":{"b":[1,{"c":1,"c":2}]}}`, `[{"a":1},{"a":1}]`, `{"x":"y"}`,
		`{"name":"get_issue","NAME":"delete_issue"}`, `{"params":{"arguments":{},"Arguments":{}}}`,
		`{"\u212a":1,"k":2}`, `{"\u017f":1,"S":2}`, `{"\u00df":1,"SS":2}`, `{"\u01c5":1,"\u01c6":2}`} {
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
			// And so is the same name in another case.
			uq := strconv.Quote(strings.ToUpper(key))
			variant := []byte(`{` + q + `:` + string(doc) + `,` + uq + `:null}`)
			if n, ok := Find(variant); !ok && strings.EqualFold(key, strings.ToUpper(key)) {
				t.Fatalf("Find(%q) missed %q and its case variant (got %q)", variant, key, n)
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

// The premise of folding: encoding/json gives a struct field the last member whose
// name folds to the field's, so each pair below means one thing to a reader that
// matches names exactly and another to this server; Find refuses every one.
func TestDecoderMatchesFoldedNames(t *testing.T) {
	for _, doc := range []string{
		`{"name":"get_issue","NAME":"delete_issue"}`,
		`{"name":"get_issue","Name":"delete_issue"}`,
		`{"name":"get_issue","n\u0041me":"delete_issue"}`,
		`{"kind":"get_issue","\u212aind":"delete_issue"}`,
		`{"class":"get_issue","cla\u017f\u017f":"delete_issue"}`,
	} {
		var v struct {
			Name  string `json:"name"`
			Kind  string `json:"kind"`
			Class string `json:"class"`
		}
		if err := json.Unmarshal([]byte(doc), &v); err != nil {
			t.Fatal(err)
		}
		if v.Name+v.Kind+v.Class != "delete_issue" {
			t.Errorf("%s decoded as %+v: the premise no longer holds", doc, v)
		}
		if _, ok := Find([]byte(doc)); !ok {
			t.Errorf("Find(%s) found no duplicate", doc)
		}
	}
}
