package store

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/oklog/ulid/v2"
)

// NewIssueID returns a fresh issue id: a UUIDv7, whose time-ordered prefix keeps
// B-tree inserts local.
func NewIssueID() string {
	id, err := uuid.NewV7()
	if err != nil { // only when the system's random source fails
		return uuid.NewString()
	}
	return id.String()
}

// NewULID returns a fresh ULID (comments, autopilot runs). ulid.Make is safe for
// concurrent use and monotonic within a millisecond.
func NewULID() string { return ulid.Make().String() }

// ValidIssueID reports whether id is an issue id a caller may choose (a UUID).
func ValidIssueID(id string) bool {
	_, err := uuid.Parse(id)
	return err == nil && len(id) == 36
}

// workspaceKeyRE is the shape of a workspace's issue key prefix such as "AAC".
var workspaceKeyRE = regexp.MustCompile(`^[A-Z][A-Z0-9]{0,9}$`)

// ValidWorkspaceKey reports whether k can prefix issue keys: 1-10 upper-case letters
// or digits, starting with a letter (so "AAC-42" parses unambiguously).
func ValidWorkspaceKey(k string) bool { return workspaceKeyRE.MatchString(k) }

// IssueKey formats the key of the n-th issue of a workspace, e.g. "AAC-42".
func IssueKey(prefix string, n int64) string { return prefix + "-" + strconv.FormatInt(n, 10) }

// ParseIssueKey splits a key such as "aac-42" into its upper-cased prefix and number.
// ok is false for anything that is not a key (a UUID, say), so callers can treat the
// input as an id instead. Leading zeros and signs are refused: a key has one spelling
// apart from the prefix's case.
func ParseIssueKey(s string) (prefix string, n int64, ok bool) {
	p, num, found := strings.Cut(s, "-")
	if !found || len(p) == 0 || len(p) > 10 || len(num) == 0 || len(num) > 18 || num[0] == '0' {
		return "", 0, false
	}
	for _, c := range []byte(p) { // ASCII only: strings.ToUpper maps "ı" to "I"
		if c >= 0x80 {
			return "", 0, false
		}
	}
	p = strings.ToUpper(p)
	if !ValidWorkspaceKey(p) {
		return "", 0, false
	}
	for _, c := range []byte(num) {
		if c < '0' || c > '9' {
			return "", 0, false
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		return "", 0, false
	}
	return p, n, true
}
