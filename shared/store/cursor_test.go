package store

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

type testPos struct {
	U int64  `json:"u"`
	I string `json:"i"`
}

func TestCursorRoundTrip(t *testing.T) {
	fp := IssueFilter{Status: "open"}.Fingerprint("ws_1")
	c, err := EncodeCursor(fp, testPos{U: 1234567890123456789, I: "0190c3d2-0000-7000-8000-000000000001"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(c, "+/=") {
		t.Errorf("cursor %q is not URL-safe", c)
	}
	var got testPos
	if err := DecodeCursor(c, fp, &got); err != nil {
		t.Fatalf("DecodeCursor: %v", err)
	}
	if got.U != 1234567890123456789 || got.I != "0190c3d2-0000-7000-8000-000000000001" {
		t.Errorf("round trip = %+v", got)
	}
}

func TestFingerprint(t *testing.T) {
	base := IssueFilter{Status: "open", Label: "bug"}
	same := base
	same.Limit, same.Cursor = 99, "whatever" // paging fields do not identify the query
	if base.Fingerprint("ws") != same.Fingerprint("ws") {
		t.Error("limit or cursor changed the fingerprint")
	}
	differ := []struct {
		name string
		ws   string
		f    IssueFilter
	}{
		{"workspace", "ws2", base},
		{"status", "ws", IssueFilter{Status: "done", Label: "bug"}},
		{"label", "ws", IssueFilter{Status: "open", Label: "ui"}},
		{"assignee", "ws", IssueFilter{Status: "open", Label: "bug", Assignee: "a"}},
		{"query", "ws", IssueFilter{Status: "open", Label: "bug", Query: "q"}},
		{"field boundary", "ws", IssueFilter{Status: "openbug"}},
	}
	for _, d := range differ {
		if d.f.Fingerprint(d.ws) == base.Fingerprint("ws") {
			t.Errorf("%s: fingerprint did not change", d.name)
		}
	}
	if Fingerprint("a", "bc") == Fingerprint("ab", "c") {
		t.Error("Fingerprint parts are not delimited")
	}
}

func TestDecodeCursorRejects(t *testing.T) {
	fp := Fingerprint("ws", "issues")
	good, _ := EncodeCursor(fp, testPos{U: 1, I: "x"})
	enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	tests := []struct {
		name, cursor, msgPart string
	}{
		{"not base64", "!!!", "malformed"},
		{"padded", good + "==", "malformed"},
		{"not JSON", enc("hello"), "malformed"},
		{"JSON null", enc("null"), "malformed"},
		{"wrong version", enc(`{"v":2,"f":"` + fp + `","p":{"u":1,"i":"x"}}`), "malformed"},
		{"no position", enc(`{"v":1,"f":"` + fp + `"}`), "malformed"},
		{"unknown field", enc(`{"v":1,"f":"` + fp + `","p":{"u":1,"i":"x"},"z":1}`), "malformed"},
		{"unknown position field", enc(`{"v":1,"f":"` + fp + `","p":{"u":1,"i":"x","q":1}}`), "malformed"},
		{"position of the wrong type", enc(`{"v":1,"f":"` + fp + `","p":{"u":"1","i":"x"}}`), "malformed"},
		{"trailing data", enc(`{"v":1,"f":"` + fp + `","p":{"u":1,"i":"x"}} {}`), "malformed"},
		{"too long", strings.Repeat("A", maxCursorLen+1), "malformed"},
		{"other query", func() string { c, _ := EncodeCursor(Fingerprint("ws", "comments"), testPos{U: 1, I: "x"}); return c }(), "different query"},
	}
	for _, tc := range tests {
		var p testPos
		err := DecodeCursor(tc.cursor, fp, &p)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.msgPart) {
			t.Errorf("%s: %v, want invalid_arguments mentioning %q", tc.name, err, tc.msgPart)
		}
	}
}

func FuzzDecodeCursor(f *testing.F) {
	fp := Fingerprint("ws", "issues")
	good, _ := EncodeCursor(fp, testPos{U: 42, I: "abc"})
	for _, s := range []string{"", good, good[:len(good)/2], "e30", "bnVsbA", "!!", strings.Repeat("A", 2000)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cursor string) {
		var p testPos
		err := DecodeCursor(cursor, fp, &p)
		if err == nil {
			// Whatever decodes must re-encode to a cursor that decodes the same.
			again, err := EncodeCursor(fp, p)
			if err != nil {
				t.Fatal(err)
			}
			var q testPos
			if err := DecodeCursor(again, fp, &q); err != nil || q != p {
				t.Fatalf("re-encoded cursor decodes to %+v, %v; want %+v", q, err, p)
			}
			return
		}
		if !errors.Is(err, ErrInvalid) {
			t.Fatalf("cursor %q: %v, want invalid_arguments", cursor, err)
		}
	})
}
