package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
)

// Page sizes of every list (the catalog validates the same bounds).
const (
	DefaultPageLimit = 25
	MaxPageLimit     = 100
)

// PageLimit clamps a requested page size to 1..MaxPageLimit; 0 means the default.
func PageLimit(n int) int {
	switch {
	case n == 0:
		return DefaultPageLimit
	case n < 1:
		return 1
	case n > MaxPageLimit:
		return MaxPageLimit
	}
	return n
}

// maxCursorLen bounds the work spent on a cursor: real ones are far shorter, and a
// client-supplied string is decoded before anything else checks it.
const maxCursorLen = 1024

const cursorVersion = 1

// cursorWire is the JSON inside a cursor. F ties the cursor to the query that issued it
// (workspace, list and filter), so a cursor replayed against another query is refused
// instead of silently returning the wrong slice; P is the backend's position.
type cursorWire struct {
	V int             `json:"v"`
	F string          `json:"f"`
	P json.RawMessage `json:"p"`
}

// Fingerprint is a short digest identifying a query: pass the workspace, the list's
// name and every filter value. Parts are length-delimited by JSON encoding, so
// ("a","bc") and ("ab","c") differ.
func Fingerprint(parts ...string) string {
	b, err := json.Marshal(parts)
	if err != nil { // a []string always marshals; keep the digest well-defined anyway
		b = []byte{}
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// Fingerprint identifies the issue query of ws with this filter (limit excluded: a
// client may change the page size between pages).
func (f IssueFilter) Fingerprint(ws string) string {
	return Fingerprint(ws, "issues", f.Status, f.Assignee, f.Label, f.Query)
}

// EncodeCursor returns the opaque cursor for position pos (any JSON-encodable value)
// of the query identified by fingerprint.
func EncodeCursor(fingerprint string, pos any) (string, error) {
	p, err := json.Marshal(pos)
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(cursorWire{V: cursorVersion, F: fingerprint, P: p})
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// DecodeCursor decodes cursor into pos. Any failure is invalid_arguments (never
// internal): a cursor is client input. A cursor issued for another query (other
// workspace, list or filter) is refused with its own message.
func DecodeCursor(cursor, fingerprint string, pos any) error {
	if len(cursor) > maxCursorLen {
		return BadCursor()
	}
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return BadCursor()
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var w cursorWire
	if err := dec.Decode(&w); err != nil || dec.More() {
		return BadCursor()
	}
	if w.V != cursorVersion || len(w.P) == 0 {
		return BadCursor()
	}
	if w.F != fingerprint {
		return Invalid("cursor belongs to a different query; start again without a cursor")
	}
	pd := json.NewDecoder(bytes.NewReader(w.P))
	pd.DisallowUnknownFields()
	if err := pd.Decode(pos); err != nil {
		return BadCursor()
	}
	return nil
}

// BadCursor is the malformed-cursor error; a backend returns it too when a decoded
// position is unusable, so every bad cursor reads the same.
func BadCursor() error {
	return Invalid("cursor is malformed; use next_cursor from a previous page")
}

// IssuePos is the position a ListIssues cursor holds in the embedded backends (memory,
// SQLite): the last issue returned, whose updated_at (unix nanos) and id order the
// list, both descending.
type IssuePos struct {
	U int64  `json:"u"` // updated_at, unix nanos
	I string `json:"i"` // id
}

// Before reports whether is sorts after p in the list order (updated_at, then id,
// both descending), i.e. belongs on a later page.
func (p IssuePos) Before(is Issue) bool {
	u := is.UpdatedAt.UnixNano()
	return u < p.U || (u == p.U && is.ID < p.I)
}

// NextIssueCursor is the cursor of the page after issues (a non-empty page in list
// order) for the query of fingerprint fp: it resumes after the page's last issue.
func NextIssueCursor(fp string, issues []Issue) (string, error) {
	last := issues[len(issues)-1]
	return EncodeCursor(fp, IssuePos{U: last.UpdatedAt.UnixNano(), I: last.ID})
}

// DecodeIssuePos returns the position cursor names for the query of fingerprint fp,
// nil for the first page (no cursor); a cursor without an id is malformed.
func DecodeIssuePos(cursor, fp string) (*IssuePos, error) {
	if cursor == "" {
		return nil, nil
	}
	pos := new(IssuePos)
	if err := DecodeCursor(cursor, fp, pos); err != nil {
		return nil, err
	}
	if pos.I == "" {
		return nil, BadCursor()
	}
	return pos, nil
}
