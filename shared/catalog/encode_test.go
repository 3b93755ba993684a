package catalog

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/store"
)

// appender is what the guard looks for on a result.
type appender interface {
	AppendJSON([]byte) ([]byte, error)
}

// checkAppendJSON compares v.AppendJSON with json.Marshal(v) and with json.Marshal of
// the store type the wire type stands for (oracle), after prefixes with and without
// spare capacity. Where encoding/json fails, AppendJSON must fail too.
func checkAppendJSON(t testing.TB, v appender, oracle any) {
	t.Helper()
	want, werr := json.Marshal(v)
	if asStore, err := json.Marshal(oracle); !bytes.Equal(asStore, want) || (err == nil) != (werr == nil) {
		t.Fatalf("the wire type encodes differently from its store type:\n%s\n%s", want, asStore)
	}
	for _, prefix := range [][]byte{nil, []byte("pre"), make([]byte, 2, 8192)} {
		got, err := v.AppendJSON(bytes.Clone(prefix))
		if werr != nil {
			if err == nil {
				t.Fatalf("encoding/json fails (%v), AppendJSON gave %s", werr, got)
			}
			return
		}
		if err != nil {
			t.Fatalf("AppendJSON: %v; encoding/json gave %s", err, want)
		}
		if full := append(bytes.Clone(prefix), want...); !bytes.Equal(got, full) {
			t.Fatalf("AppendJSON after %q differs from encoding/json\n got %s\nwant %s", prefix, got, full)
		}
	}
}

// fillDistinct sets every field of the struct v points to, recursively, to a value
// of its own (strings hold their JSON name, numbers their index), so that a field
// written under the wrong key, in the wrong place or not at all shows as a
// difference. A field of a kind it does not know fails the test: teach it, and the
// encoder, the new field.
func fillDistinct(t *testing.T, v reflect.Value) {
	t.Helper()
	typ := v.Type()
	for k := range v.NumField() {
		f, sf := v.Field(k), typ.Field(k)
		name := sf.Tag.Get("json")
		switch {
		case f.Kind() == reflect.String:
			f.SetString(name)
		case f.Kind() == reflect.Int64:
			f.SetInt(int64(1000 + k))
		case f.Type() == reflect.TypeFor[time.Time]():
			f.Set(reflect.ValueOf(time.Date(2026, 1, 2, 3, 4, 5, 6000+k, time.UTC)))
		case f.Type() == reflect.TypeFor[[]string]():
			f.Set(reflect.ValueOf([]string{name, name + "-2"}))
		case f.Kind() == reflect.Pointer && f.Type().Elem().Kind() == reflect.Struct:
			f.Set(reflect.New(f.Type().Elem()))
			fillDistinct(t, f.Elem())
		default:
			t.Fatalf("%s.%s: %s is a kind this test (and the encoder in encode.go) does not know", typ, sf.Name, f.Type())
		}
	}
}

// TestIssueEncoderKnowsEveryField: store.Issue, store.Assignee and store.IssuePage
// hold exactly the fields encode.go writes, in its order. Adding a field to one of
// them fails here until the encoder (and this list) know it.
func TestIssueEncoderKnowsEveryField(t *testing.T) {
	tests := []struct {
		typ  reflect.Type
		keys []string
	}{
		{reflect.TypeFor[store.Issue](), []string{"id", "key", "title", "description", "status", "priority",
			"labels", "assignee", "created_by", "created_at", "updated_at", "version", "comment_count"}},
		{reflect.TypeFor[store.Assignee](), []string{"type", "id"}},
		{reflect.TypeFor[store.IssuePage](), []string{"issues", "next_cursor"}},
		{reflect.TypeFor[issuePage](), []string{"issues", "next_cursor"}},
	}
	for _, tt := range tests {
		var keys []string
		for k := range tt.typ.NumField() {
			keys = append(keys, tt.typ.Field(k).Tag.Get("json"))
		}
		if !slices.Equal(keys, tt.keys) {
			t.Errorf("%s has the JSON keys %q; encode.go writes %q: update the encoder, then this list", tt.typ, keys, tt.keys)
		}
	}
}

func TestIssueAppendJSONMatchesEncodingJSON(t *testing.T) {
	var distinct store.Issue
	fillDistinct(t, reflect.ValueOf(&distinct).Elem())
	ts := time.Date(2026, 11, 30, 1, 53, 58, 123456789, time.UTC)
	typical := store.Issue{
		ID: "01a22a30-7cd6-71c9-b2e4-61fa24112cca", Key: "AAC-42", Title: "Fix login", Description: "Steps:\n1. open",
		Status: "open", Priority: "medium", Labels: []string{"backend", "team-1"}, CreatedBy: "ada",
		CreatedAt: ts, UpdatedAt: ts.Add(time.Hour), Version: 3, CommentCount: 2,
	}
	with := func(f func(*store.Issue)) store.Issue {
		i := typical
		f(&i)
		return i
	}
	var allBytes strings.Builder
	for b := range 256 {
		allBytes.WriteByte(byte(b))
	}
	paris := time.FixedZone("CET", 3600)
	tests := []struct {
		name  string
		issue store.Issue
	}{
		{"zero value", store.Issue{}},
		{"typical", typical},
		{"every field distinct", distinct},
		{"nil labels are null", with(func(i *store.Issue) { i.Labels = nil })},
		{"empty labels are []", with(func(i *store.Issue) { i.Labels = []string{} })},
		{"one empty label", with(func(i *store.Issue) { i.Labels = []string{""} })},
		{"assigned", with(func(i *store.Issue) { i.Assignee = &store.Assignee{Type: "agent", ID: "triage-bot"} })},
		{"empty assignee", with(func(i *store.Issue) { i.Assignee = &store.Assignee{} })},
		{"html and separators", with(func(i *store.Issue) {
			i.Title = `</script><script>alert(1)&x=1</script>`
			i.Description = "a\u2028b\u2029c"
			i.Labels = []string{"<b>", "a&b", `"q"`, `back\slash`}
		})},
		{"every byte value", with(func(i *store.Issue) { i.Description = allBytes.String() })},
		{"invalid UTF-8", with(func(i *store.Issue) { i.Title = "a\x80b\xffc\xed\xa0\x80"; i.Key = "\xe2\x80" })},
		{"multi-byte", with(func(i *store.Issue) { i.Title = "café 東京 🦀 \ufffd" })},
		{"whole seconds drop the fraction", with(func(i *store.Issue) { i.CreatedAt = ts.Truncate(time.Second) })},
		{"trailing zeros of the fraction drop", with(func(i *store.Issue) { i.CreatedAt = ts.Truncate(time.Millisecond) })},
		{"zero time", with(func(i *store.Issue) { i.UpdatedAt = time.Time{} })},
		{"zone offset", with(func(i *store.Issue) { i.CreatedAt = ts.In(paris) })},
		{"negative zone offset with minutes", with(func(i *store.Issue) { i.CreatedAt = ts.In(time.FixedZone("", -(9*3600 + 30*60))) })},
		{"zone offset with seconds", with(func(i *store.Issue) { i.CreatedAt = ts.In(time.FixedZone("", 3600+30)) })},
		{"monotonic reading is ignored", with(func(i *store.Issue) { i.CreatedAt = time.Now() })},
		{"year 9999", with(func(i *store.Issue) { i.CreatedAt = time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC) })},
		{"year 10000 fails", with(func(i *store.Issue) { i.UpdatedAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) })},
		{"year -1 fails", with(func(i *store.Issue) { i.CreatedAt = time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC) })},
		{"zone offset of 24h fails", with(func(i *store.Issue) { i.CreatedAt = ts.In(time.FixedZone("", 24*3600)) })},
		{"zone offset of 100h fails", with(func(i *store.Issue) { i.UpdatedAt = ts.In(time.FixedZone("", -100*3600)) })},
		{"extreme numbers", with(func(i *store.Issue) { i.Version, i.CommentCount = math.MaxInt64, math.MinInt64 })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkAppendJSON(t, issueResult(tt.issue), tt.issue)
			// The same issue in a page, alone and beside others.
			for _, issues := range [][]store.Issue{{tt.issue}, {typical, tt.issue, distinct}} {
				checkAppendJSON(t, toPage(issues, "cursor-<&>"), store.IssuePage{Issues: issues, NextCursor: "cursor-<&>"})
			}
		})
	}
}

func TestIssuePageAppendJSONMatchesEncodingJSON(t *testing.T) {
	tests := []struct {
		name string
		page store.IssuePage
	}{
		{"nil issues are null", store.IssuePage{}},
		{"no issues", store.IssuePage{Issues: []store.Issue{}}},
		{"cursor needing escapes", store.IssuePage{Issues: []store.Issue{}, NextCursor: "a\"b\\c\n\u2028<"}},
		{"a full page", store.IssuePage{Issues: slices.Repeat([]store.Issue{{ID: "x", Labels: []string{"a"}}}, 100), NextCursor: "eyJ0Ijo"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p issuePage
			if tt.page.Issues != nil {
				p = toPage(tt.page.Issues, tt.page.NextCursor)
			}
			p.NextCursor = tt.page.NextCursor
			checkAppendJSON(t, p, tt.page)
		})
	}
}

// TestDeletedResultMatchesEncodingJSON holds deletedResult to the structs the delete
// tools answered with before it stood for both.
func TestDeletedResultMatchesEncodingJSON(t *testing.T) {
	for _, id := range []string{"", "01JQ3Z7R6W7YV1T0B3Q6Y2K9ZC", "a\"b\\c\n\u2028<&>\xff"} {
		checkAppendJSON(t, deletedResult{"issue_id", id}, struct {
			Deleted bool   `json:"deleted"`
			IssueID string `json:"issue_id"`
		}{true, id})
		checkAppendJSON(t, deletedResult{"comment_id", id}, struct {
			Deleted   bool   `json:"deleted"`
			CommentID string `json:"comment_id"`
		}{true, id})
	}
}

// TestIssueResultsAreAppenders: the results the guard encodes without reflection are
// the ones the issue tools return (a handler returning the store type again would
// silently lose the fast path).
func TestIssueResultsAreAppenders(t *testing.T) {
	var _ appender = wireIssue(store.Issue{})
	var _ appender = issuePage{}
}

// TestIssueAppendJSONAllocations pins the point of the encoder: with room in dst, an
// issue is encoded without allocating.
func TestIssueAppendJSONAllocations(t *testing.T) {
	i := issueResult{ID: "id", Labels: []string{"a", "<b>"}, Assignee: &store.Assignee{Type: "user", ID: "u"},
		CreatedAt: time.Now(), UpdatedAt: time.Now()}
	dst := make([]byte, 0, 4096)
	if n := testing.AllocsPerRun(100, func() { dst, _ = i.AppendJSON(dst[:0]) }); n != 0 {
		t.Errorf("%v allocations per issue", n)
	}
}

func toPage(issues []store.Issue, cursor string) issuePage {
	p := issuePage{Issues: make([]issueResult, 0, len(issues)), NextCursor: cursor}
	for _, i := range issues {
		p.Issues = append(p.Issues, issueResult(i))
	}
	return p
}

// fuzzIssue builds an issue from fuzzed inputs: every string field gets a different
// mix of a and b, the flags decide nil labels and assignee, the times come from
// arbitrary instants and zone offsets (out-of-range ones included).
func fuzzIssue(a, b string, sec int64, nsec int32, offset int32, n int64, flags uint8) store.Issue {
	pick := func(k int) string {
		switch k % 4 {
		case 0:
			return a
		case 1:
			return b
		case 2:
			return a + b
		}
		return b + a
	}
	i := store.Issue{
		ID: pick(0), Key: pick(1), Title: pick(2), Description: pick(3), Status: pick(4),
		Priority: pick(5), CreatedBy: pick(6), Version: n, CommentCount: -n ^ int64(flags),
		CreatedAt: time.Unix(sec, int64(nsec)).In(time.FixedZone("z", int(offset))),
		UpdatedAt: time.Unix(sec/3, int64(nsec)/7).UTC(),
	}
	if flags&1 == 0 {
		i.Labels = strings.Split(a, ",")
	} else if flags&2 == 0 {
		i.Labels = []string{}
	}
	if flags&4 != 0 {
		i.Assignee = &store.Assignee{Type: pick(7), ID: pick(8)}
	}
	return i
}

func FuzzIssueAppendJSON(f *testing.F) {
	f.Add("AAC-42", "open", int64(1780000000), int32(123456789), int32(0), int64(3), uint8(0))
	f.Add("<script>&amp;</script>", "a\u2028b\u2029", int64(0), int32(0), int32(3600+30), int64(-1), uint8(4))
	f.Add("\x00\x1f\x7f\"\\", "\xff\xfe\xed\xa0\x80", int64(253402300800), int32(1), int32(-86400), int64(math.MinInt64), uint8(7))
	f.Add("a,,b", "", int64(-62135596801), int32(999999999), int32(86399), int64(math.MaxInt64), uint8(2))
	f.Fuzz(func(t *testing.T, a, b string, sec int64, nsec, offset int32, n int64, flags uint8) {
		i := fuzzIssue(a, b, sec, nsec, offset, n, flags)
		checkAppendJSON(t, issueResult(i), i)
	})
}

func FuzzIssuePageAppendJSON(f *testing.F) {
	f.Add("AAC-42", "next", int64(1780000000), int32(5), uint8(3), uint8(0))
	f.Add("<&>", "\u2028\xff", int64(253402300800), int32(0), uint8(0), uint8(4))
	f.Add("", "", int64(0), int32(-3600), uint8(1), uint8(255))
	f.Fuzz(func(t *testing.T, a, cursor string, sec int64, offset int32, count, flags uint8) {
		var issues []store.Issue
		if flags&8 == 0 {
			issues = []store.Issue{}
		}
		for k := range int(count % 8) {
			issues = append(issues, fuzzIssue(a, cursor, sec+int64(k), int32(k), offset, int64(k), flags+uint8(k)))
		}
		want := store.IssuePage{Issues: issues, NextCursor: cursor}
		p := issuePage{NextCursor: cursor}
		if issues != nil {
			p = toPage(issues, cursor)
		}
		checkAppendJSON(t, p, want)
	})
}

// BenchmarkIssuePageEncode encodes a first page of 25 issues, as list_issues answers
// it, with the hand-written encoder and with encoding/json.
func BenchmarkIssuePageEncode(b *testing.B) {
	ts := time.Date(2026, 11, 30, 2, 2, 30, 485784688, time.UTC)
	p := issuePage{NextCursor: "eyJ0IjoiMjAyNi0xMS0zMFQwMjowMjozMC40ODU3ODQ2ODhaIn0"}
	for k := range 25 {
		p.Issues = append(p.Issues, issueResult{
			ID: "01a22a30-7cd6-71c9-b2e4-61fa24112cca", Key: "AAC-" + strconv.Itoa(k), Title: "Issue " + strconv.Itoa(k),
			Description: "a description of the issue", Status: "open", Priority: "medium",
			Labels: []string{"backend", "team-" + strconv.Itoa(k%4)}, CreatedBy: "member",
			CreatedAt: ts, UpdatedAt: ts, Version: 1,
		})
	}
	b.Run("AppendJSON", func(b *testing.B) {
		for b.Loop() {
			if _, err := p.AppendJSON(nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding_json", func(b *testing.B) {
		for b.Loop() {
			if _, err := json.Marshal(p); err != nil {
				b.Fatal(err)
			}
		}
	})
}
