package lambdatest

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
)

// Update rewrites golden files instead of comparing (go test ... -update).
var Update = flag.Bool("update", false, "rewrite the golden files")

// Fixed ids of the fixture stay readable in goldens; other ids and times are
// replaced by placeholders because they change on every run.
var (
	uuidRE = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	ulidRE = regexp.MustCompile(`\b[0-7][0-9A-HJKMNP-TV-Z]{25}\b`)
	timeRE = regexp.MustCompile(`\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})`)
	durRE  = regexp.MustCompile(`"duration_ms":\s*\d+`)
	// The authorizer's expires_at (Unix seconds) is the expiry of a token the
	// fixture creates relative to now.
	unixRE = regexp.MustCompile(`"expires_at":\s*"\d+"`)
)

var fixedIDs = map[string]bool{
	IssueMain: true, IssueDelete: true, CommentKeep: true, CommentDelete: true,
}

// Normalize replaces run-dependent values in s.
func Normalize(s string) string {
	keep := func(replacement string) func(string) string {
		return func(m string) string {
			if fixedIDs[m] || isEventRequestID(m) {
				return m
			}
			return replacement
		}
	}
	s = timeRE.ReplaceAllString(s, "<TIME>")
	s = uuidRE.ReplaceAllStringFunc(s, keep("<UUID>"))
	s = ulidRE.ReplaceAllStringFunc(s, keep("<ULID>"))
	s = durRE.ReplaceAllString(s, `"duration_ms":"<N>"`)
	s = unixRE.ReplaceAllString(s, `"expires_at": "<UNIX>"`)
	return s
}

// Request ids of the sample events (c0ffee00-..., a0a0a0a0-...) are fixed.
func isEventRequestID(s string) bool {
	return len(s) == 36 && (s[:8] == "c0ffee00" || s[:8] == "a0a0a0a0")
}

// Golden compares got (any JSON-encodable value) with the golden file, after
// normalisation, or rewrites the file with -update.
func Golden(t testing.TB, path string, got any) {
	t.Helper()
	b, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	norm := []byte(Normalize(string(b)) + "\n")
	if *Update {
		if err := os.WriteFile(path, norm, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to create it)", err)
	}
	if !bytes.Equal(want, norm) {
		t.Errorf("%s differs from the golden file (rerun with -update if the change is intended):\n%s", path, diff(string(want), string(norm)))
	}
}

// diff shows the block of lines where want and got differ: common leading and
// trailing lines are dropped, the rest is bounded for readable failures.
func diff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	pre := 0
	for pre < len(wl) && pre < len(gl) && wl[pre] == gl[pre] {
		pre++
	}
	suf := 0
	for suf < len(wl)-pre && suf < len(gl)-pre && wl[len(wl)-1-suf] == gl[len(gl)-1-suf] {
		suf++
	}
	var out strings.Builder
	fmt.Fprintf(&out, "from line %d:\n", pre+1)
	const maxLines = 30
	for i, l := range wl[pre : len(wl)-suf] {
		if i == maxLines {
			out.WriteString("- ...\n")
			break
		}
		fmt.Fprintf(&out, "- %s\n", l)
	}
	for i, l := range gl[pre : len(gl)-suf] {
		if i == maxLines {
			out.WriteString("+ ...\n")
			break
		}
		fmt.Fprintf(&out, "+ %s\n", l)
	}
	return out.String()
}
