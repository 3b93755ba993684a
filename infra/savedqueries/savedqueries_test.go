package savedqueries

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name, file, data string
		want             Query
		wantErr          bool
	}{
		{
			name: "description from the first comment line", file: "denied_by_reason",
			data: "-- Denied calls per reason, last 24 hours\nSELECT reason, count(*) FROM audit_log GROUP BY 1;\n",
			want: Query{Name: "denied_by_reason", Description: "Denied calls per reason, last 24 hours",
				SQL: "-- Denied calls per reason, last 24 hours\nSELECT reason, count(*) FROM audit_log GROUP BY 1;\n"},
		},
		{
			name: "no comment, no description; CRLF normalized", file: "calls",
			data: "SELECT 1\r\nFROM t\r\n",
			want: Query{Name: "calls", SQL: "SELECT 1\nFROM t\n"},
		},
		{
			name: "only the first line describes", file: "q",
			data: "\n\n--   first  \n-- second\nSELECT 1",
			want: Query{Name: "q", Description: "first", SQL: "--   first  \n-- second\nSELECT 1\n"},
		},
		{name: "only comments", file: "empty", data: "-- nothing here\n-- at all\n", wantErr: true},
		{name: "empty", file: "empty", data: "", wantErr: true},
		{name: "empty name", file: "", data: "SELECT 1", wantErr: true},
		{name: "long name", file: strings.Repeat("n", MaxNameLen+1), data: "SELECT 1", wantErr: true},
		{name: "not UTF-8", file: "bin", data: "SELECT '\xff'", wantErr: true},
		{name: "too large", file: "big", data: "SELECT '" + strings.Repeat("x", MaxQueryBytes) + "'", wantErr: true},
		{name: "description too long", file: "d", data: "-- " + strings.Repeat("d", MaxDescriptionLen+1) + "\nSELECT 1", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.file, []byte(tt.data))
			if tt.wantErr {
				if !errors.Is(err, ErrInvalid) {
					t.Fatalf("Parse() error = %v, want ErrInvalid", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("Parse() = %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"b_second.sql": "-- second\nSELECT 2",
		"a_first.sql":  "-- first\nSELECT 1",
		"README.md":    "not a query",
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "nested.sql"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Name != "a_first" || got[1].Name != "b_second" || got[0].Description != "first" {
		t.Errorf("Load() = %+v", got)
	}

	if got, err := Load(filepath.Join(dir, "missing")); err != nil || got != nil {
		t.Errorf("Load(missing) = %v, %v; want no queries and no error", got, err)
	}

	if err := os.WriteFile(filepath.Join(dir, "c_bad.sql"), []byte("-- only a comment"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "c_bad.sql") {
		t.Errorf("Load() with a bad file: error = %v, want ErrInvalid naming the file", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add("calls", []byte("-- Calls per tool\nSELECT tool, count(*) FROM audit_log GROUP BY 1"))
	f.Add("x", []byte("--\n"))
	f.Add("", []byte("SELECT 1"))
	f.Add("q", []byte("\r\n-- d\r\nSELECT '\xff'"))
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		q, err := Parse(name, data)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		if q.Name != name || q.SQL == "" || !hasStatement(q.SQL) || len(q.Description) > MaxDescriptionLen || strings.Contains(q.Description, "\n") {
			t.Fatalf("Parse(%q) = %+v breaks an invariant", name, q)
		}
	})
}
