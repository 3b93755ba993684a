// Package ocsftest validates OCSF events against the required attributes of the
// classes aacmcp writes (shared/audit/ocsf/testdata/ocsf-1.3.0-required.schema.json).
package ocsftest

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Schema compiles the schema file.
func Schema(t testing.TB) *jsonschema.Schema {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	f, err := os.Open(filepath.Join(filepath.Dir(here), "..", "testdata", "ocsf-1.3.0-required.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource("mem://ocsf.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("mem://ocsf.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Validate checks one JSON line, as a reader of the export would see it, and
// returns the decoded event.
func Validate(t testing.TB, s *jsonschema.Schema, line []byte) (map[string]any, error) {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(line))
	if err != nil {
		t.Fatalf("not JSON: %v: %s", err, line)
	}
	m, _ := v.(map[string]any)
	return m, s.Validate(v)
}
