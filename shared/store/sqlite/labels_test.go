package sqlite

import (
	"encoding/json"
	"slices"
	"testing"
)

// labelsOracle is what the labels column decoded to before decodeLabels: encoding/json,
// with null and absent read as no labels.
func labelsOracle(s string) ([]string, error) {
	var labels []string
	if err := json.Unmarshal([]byte(s), &labels); err != nil {
		return nil, err
	}
	if labels == nil {
		labels = []string{}
	}
	return labels, nil
}

func TestDecodeLabels(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{in: `[]`, want: []string{}},
		{in: `null`, want: []string{}},
		{in: `["a"]`, want: []string{"a"}},
		{in: `["backend","team-1","ü ñ 日本"]`, want: []string{"backend", "team-1", "ü ñ 日本"}},
		{in: `[""]`, want: []string{""}},
		{in: `["a,b","c"]`, want: []string{"a,b", "c"}},
		{in: `["say \"hi\"","x\\y"]`, want: []string{`say "hi"`, `x\y`}},
		{in: `["\u003cb\u003e","\u2028"]`, want: []string{"<b>", "\u2028"}},
		{in: ` [ "a" , "b" ] `, want: []string{"a", "b"}},
		{in: "[\"\xff\"]", want: []string{"\ufffd"}},
		{in: ``, wantErr: true},
		{in: `[`, wantErr: true},
		{in: `["a"`, wantErr: true},
		{in: `["a",]`, wantErr: true},
		{in: `[,"a"]`, wantErr: true},
		{in: `["a""b"]`, wantErr: true},
		{in: `["a"]x`, wantErr: true},
		{in: `[1]`, wantErr: true},
		{in: `{"a":1}`, wantErr: true},
		{in: "[\"a\x01\"]", wantErr: true},
		{in: `["a]`, wantErr: true},
	} {
		got, err := decodeLabels(tc.in)
		if (err != nil) != tc.wantErr {
			t.Errorf("decodeLabels(%q) error = %v, want error %v", tc.in, err, tc.wantErr)
			continue
		}
		if !tc.wantErr && (got == nil || !slices.Equal(got, tc.want)) {
			t.Errorf("decodeLabels(%q) = %#v, want %#v", tc.in, got, tc.want)
		}
	}
}

// TestDecodeLabelsRoundTrip: whatever labelsJSON writes, decodeLabels reads back.
func TestDecodeLabelsRoundTrip(t *testing.T) {
	for _, labels := range [][]string{nil, {}, {"a"}, {"bug", "p1"}, {`q"uote`, `back\slash`, "<html>&", "tab\there", "line\u2028sep", "ünï", ""}} {
		s, err := labelsJSON(labels)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeLabels(s)
		want := labels
		if want == nil {
			want = []string{}
		}
		if err != nil || got == nil || !slices.Equal(got, want) {
			t.Errorf("labels %q stored as %s read back as %#v, %v", labels, s, got, err)
		}
	}
}

// FuzzDecodeLabels holds decodeLabels to encoding/json: the same labels for every
// input json.Unmarshal accepts, an error for every input it refuses.
func FuzzDecodeLabels(f *testing.F) {
	for _, s := range []string{`[]`, `null`, `["a","b"]`, `["a\"b"]`, `[ "a" ]`, `["a",]`, "[\"\xff\"]", `["\u00e9"]`, `[1]`, `"a"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := decodeLabels(s)
		want, werr := labelsOracle(s)
		if (err != nil) != (werr != nil) {
			t.Fatalf("decodeLabels(%q) error %v, encoding/json error %v", s, err, werr)
		}
		if err == nil && (got == nil || !slices.Equal(got, want)) {
			t.Fatalf("decodeLabels(%q) = %#v, encoding/json %#v", s, got, want)
		}
	})
}
