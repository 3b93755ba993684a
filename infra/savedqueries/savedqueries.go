// Package savedqueries reads the admin queries in events/queries/*.sql. Each file becomes
// one Athena saved (named) query in the stack, and the local `aacmcp audit query` runs the
// same files against the JSON audit files, so admins use one set of queries in both places.
package savedqueries

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"
)

// Limits of AWS::Athena::NamedQuery, checked at synth time so that a bad file fails
// `cdk synth` instead of a deployment half-way through.
const (
	MaxNameLen        = 128
	MaxDescriptionLen = 1024
	MaxQueryBytes     = 262144
)

// Ext is the extension of a query file.
const Ext = ".sql"

// Query is one saved query.
type Query struct {
	// Name is the file's base name without the extension.
	Name string
	// Description is the text of the file's first line when it is a "-- " comment.
	Description string
	// SQL is the whole file, comments included: Athena shows it as written.
	SQL string
}

// ErrInvalid reports a query file that cannot become a named query.
var ErrInvalid = errors.New("savedqueries: invalid query file")

// Load reads every *.sql file directly in dir, sorted by name. A missing directory
// holds no queries; any other read error is returned.
func Load(dir string) ([]Query, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("savedqueries: %w", err)
	}
	var out []Query
	for _, e := range entries {
		if e.IsDir() || filepath.Ext(e.Name()) != Ext {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("savedqueries: %w", err)
		}
		q, err := Parse(strings.TrimSuffix(e.Name(), Ext), data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
		out = append(out, q)
	}
	slices.SortFunc(out, func(a, b Query) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Parse builds a Query from a file's base name and content.
func Parse(name string, data []byte) (Query, error) {
	if name == "" || len(name) > MaxNameLen || !utf8.ValidString(name) {
		return Query{}, fmt.Errorf("%w: name must be 1-%d bytes of UTF-8", ErrInvalid, MaxNameLen)
	}
	if !utf8.Valid(data) {
		return Query{}, fmt.Errorf("%w: not UTF-8", ErrInvalid)
	}
	if len(data) > MaxQueryBytes {
		return Query{}, fmt.Errorf("%w: larger than %d bytes", ErrInvalid, MaxQueryBytes)
	}
	sql := strings.TrimSpace(strings.ReplaceAll(string(data), "\r\n", "\n"))
	if !hasStatement(sql) {
		return Query{}, fmt.Errorf("%w: no SQL outside comments", ErrInvalid)
	}
	first, _, _ := strings.Cut(sql, "\n")
	var desc string
	if rest, ok := strings.CutPrefix(first, "--"); ok {
		desc = strings.TrimSpace(rest)
	}
	if len(desc) > MaxDescriptionLen {
		return Query{}, fmt.Errorf("%w: description longer than %d bytes", ErrInvalid, MaxDescriptionLen)
	}
	return Query{Name: name, Description: desc, SQL: sql + "\n"}, nil
}

// hasStatement reports whether any line is more than a line comment or blank.
func hasStatement(sql string) bool {
	for line := range strings.Lines(sql) {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "--") {
			return true
		}
	}
	return false
}
