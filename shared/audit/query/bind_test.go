package query_test

import (
	"strings"
	"testing"

	"github.com/aacworkflow/aacmcp/shared/audit/query"
)

func TestBind(t *testing.T) {
	tests := []struct {
		sql    string
		params []string
		want   string
		ok     bool
	}{
		{"SELECT ?, ?", []string{"'a'", "2"}, "SELECT 'a', 2", true},
		{"SELECT '?', \"?\", ? -- ?\n/* ? */", []string{"1"}, "SELECT '?', \"?\", 1 -- ?\n/* ? */", true},
		{"SELECT 'it''s ?', ?", []string{"1"}, "SELECT 'it''s ?', 1", true},
		{"SELECT ?", nil, "", false},
		{"SELECT 1", []string{"1"}, "", false},
		{"SELECT ? /* open", []string{"1"}, "", false},
		{"SELECT 1 -- no newline ?", nil, "SELECT 1 -- no newline ?", true},
	}
	for _, tt := range tests {
		got, err := query.Bind(tt.sql, tt.params)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("Bind(%q, %q) = %q, %v", tt.sql, tt.params, got, err)
		}
	}
}

// FuzzBind: the stand-in binds the SQL that Athena API callers send. Putting "?"
// back into every placeholder gives the text unchanged, and exactly one number of
// parameters (or none, for an unterminated comment) is accepted.
func FuzzBind(f *testing.F) {
	for _, s := range []string{"SELECT ?", "SELECT '?' -- ?\n, ?", `"a?b" /* ? */ ?`, "'unterminated ?", "/* ?"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		accepted := 0
		for k := 0; k <= strings.Count(sql, "?"); k++ {
			params := make([]string, k)
			for i := range params {
				params[i] = "?"
			}
			out, err := query.Bind(sql, params)
			if err != nil {
				continue
			}
			accepted++
			if out != sql {
				t.Fatalf("Bind(%q, %d x ?) = %q", sql, k, out)
			}
		}
		if accepted > 1 {
			t.Fatalf("%d parameter counts accepted for %q", accepted, sql)
		}
	})
}
