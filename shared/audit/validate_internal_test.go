package audit

import (
	"regexp"
	"strings"
	"testing"
)

// The patterns of the record schema (events/audit/record.schema.json) that isULID
// and isSHA256OrEmpty implement by hand; Validate used these regexps before.
var (
	ulidPattern   = regexp.MustCompile(`^[0-7][0-9A-HJKMNP-TV-Z]{25}$`)
	sha256Pattern = regexp.MustCompile(`^(|[0-9a-f]{64})$`)
)

var patternCases = []string{
	"",
	"01JYC45F604AFAE8ATNFBXZBSG",
	"71JYC45F604AFAE8ATNFBXZBSG",
	"81JYC45F604AFAE8ATNFBXZBSG",  // first character too large
	"01JYC45F604AFAE8ATNFBXZBS",   // 25 characters
	"01JYC45F604AFAE8ATNFBXZBSGG", // 27 characters
	"01jyc45f604afae8atnfbxzbsg",  // lowercase
	"01JYC45F604AFAE8ATNFBXZBSI",
	"01JYC45F604AFAE8ATNFBXZBSL",
	"01JYC45F604AFAE8ATNFBXZBSO",
	"01JYC45F604AFAE8ATNFBXZBSU",
	"01JYC45F604AFAE8ATNFBXZBS\n",
	"01JYC45F604AFAE8ATNFBXZBSG\n",
	"01JYC45F604AFAE8ATNFBXZBS\xff",
	"0123456789ABCDEFGHJKMNPQRS",
	"0TVWXYZ0000000000000000000",
	strings.Repeat("a", 64),
	strings.Repeat("0123456789abcdef", 4),
	strings.Repeat("0123456789ABCDEF", 4),
	strings.Repeat("a", 63),
	strings.Repeat("a", 65),
	strings.Repeat("a", 63) + "g",
	strings.Repeat("a", 63) + "\n",
	strings.Repeat("a", 64) + "\n",
}

func TestHandWrittenPatternsMatchRegexps(t *testing.T) {
	for _, s := range patternCases {
		if got, want := isULID(s), ulidPattern.MatchString(s); got != want {
			t.Errorf("isULID(%q) = %v, regexp says %v", s, got, want)
		}
		if got, want := isSHA256OrEmpty(s), sha256Pattern.MatchString(s); got != want {
			t.Errorf("isSHA256OrEmpty(%q) = %v, regexp says %v", s, got, want)
		}
	}
	// Every character in every position of an id, and of a digest.
	for c := range 256 {
		for _, pos := range []int{0, 1, 25} {
			b := []byte("01JYC45F604AFAE8ATNFBXZBSG")
			b[pos] = byte(c)
			if got, want := isULID(string(b)), ulidPattern.Match(b); got != want {
				t.Errorf("isULID(%q) = %v, regexp says %v", b, got, want)
			}
		}
		b := []byte(strings.Repeat("a", 64))
		b[63] = byte(c)
		if got, want := isSHA256OrEmpty(string(b)), sha256Pattern.Match(b); got != want {
			t.Errorf("isSHA256OrEmpty(%q) = %v, regexp says %v", b, got, want)
		}
	}
}

func FuzzHandWrittenPatterns(f *testing.F) {
	for _, s := range patternCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := isULID(s), ulidPattern.MatchString(s); got != want {
			t.Errorf("isULID(%q) = %v, regexp says %v", s, got, want)
		}
		if got, want := isSHA256OrEmpty(s), sha256Pattern.MatchString(s); got != want {
			t.Errorf("isSHA256OrEmpty(%q) = %v, regexp says %v", s, got, want)
		}
	})
}
