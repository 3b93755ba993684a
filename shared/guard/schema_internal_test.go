package guard

import (
	"encoding/json"
	"io"
	"log/slog"
	"testing"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/catalog"
)

// TestSchemasCompileOnFirstUse: New compiles nothing (cold starts stay short);
// a tool's schema compiles at its first validation, and only that one.
func TestSchemasCompileOnFirstUse(t *testing.T) {
	g := New(Config{Catalog: catalog.New(catalog.Deps{}), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	for name, ts := range g.schemas {
		if ts.sch != nil || ts.err != nil {
			t.Fatalf("%s compiled by New", name)
		}
	}
	tool, _ := g.cat.Lookup("get_issue")
	if e := g.validate(tool, parseArgs(json.RawMessage(`{"issue_id":"AAC-1"}`), false)); e != nil {
		t.Fatalf("validate get_issue: %v", e)
	}
	for name, ts := range g.schemas {
		if compiled := ts.sch != nil; compiled != (name == "get_issue") {
			t.Errorf("%s compiled = %v after one get_issue call", name, compiled)
		}
	}
	if errs := g.SchemaErrors(); len(errs) != 0 {
		t.Fatalf("SchemaErrors = %v", errs)
	}
	for name, ts := range g.schemas {
		if ts.sch == nil {
			t.Errorf("%s not compiled by SchemaErrors", name)
		}
	}
}

// TestBrokenSchema: a schema that does not compile is reported by SchemaErrors and
// makes its tool answer internal_error, before the arguments are looked at.
func TestBrokenSchema(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	g := &Guard{log: log, schemas: map[string]*toolSchema{
		"broken": {name: "broken", raw: json.RawMessage(`{"type": 5}`), log: log},
	}}
	errs := g.SchemaErrors()
	if errs["broken"] == nil {
		t.Fatalf("SchemaErrors = %v, want the broken schema", errs)
	}
	for _, args := range []string{`{}`, `[1]`} {
		e := g.validate(catalog.Tool{Name: "broken"}, parseArgs(json.RawMessage(args), false))
		if e == nil || e.Code != apperr.InternalError {
			t.Errorf("validate(%s) = %v, want internal_error", args, e)
		}
	}
	if e := g.validate(catalog.Tool{Name: "unknown"}, parseArgs(json.RawMessage(`{}`), false)); e == nil || e.Code != apperr.InternalError {
		t.Errorf("validate of a tool without a schema = %v, want internal_error", e)
	}
}
