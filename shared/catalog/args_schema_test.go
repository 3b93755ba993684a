package catalog

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestInputSchemaMatchesArgs checks, for every tool, that the hand-written input schema
// and the struct the handler decodes into describe the same object: each property is a
// field of a compatible JSON type, each field a property, and each required property a
// field. Without it a property added to one and not the other is only found when a
// client sends it.
func TestInputSchemaMatchesArgs(t *testing.T) {
	for _, tool := range New(Deps{}).Tools() {
		t.Run(tool.Name, func(t *testing.T) {
			if tool.Args == nil {
				t.Fatal("Args is nil: the handler's argument struct must be declared")
			}
			typ := reflect.TypeOf(tool.Args)
			if typ.Kind() != reflect.Struct {
				t.Fatalf("Args is a %s, want a struct", typ.Kind())
			}
			var s struct {
				Properties map[string]struct {
					Type any `json:"type"`
				} `json:"properties"`
				Required []string `json:"required"`
			}
			if err := json.Unmarshal(tool.InputSchema, &s); err != nil {
				t.Fatal(err)
			}
			fields := jsonFields(typ)
			for name, p := range s.Properties {
				f, ok := fields[name]
				if !ok {
					t.Errorf("schema property %q has no field in %s", name, typ)
					continue
				}
				if want := schemaTypes(p.Type); len(want) > 0 && !slices.Contains(want, jsonKind(f)) {
					t.Errorf("property %q: schema type %v, field %s decodes %q", name, want, f, jsonKind(f))
				}
			}
			for name := range fields {
				if _, ok := s.Properties[name]; !ok {
					t.Errorf("field %q of %s is not a schema property (additionalProperties is false, so no client can send it)", name, typ)
				}
			}
			for _, name := range s.Required {
				if _, ok := fields[name]; !ok {
					t.Errorf("required property %q has no field in %s", name, typ)
				}
			}
		})
	}
}

func jsonFields(typ reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for f := range typ.Fields() {
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

func schemaTypes(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, e := range v {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// jsonKind is the JSON Schema type a Go type decodes.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Map, reflect.Struct:
		return "object"
	}
	return t.Kind().String()
}

// specTool is one row of testdata/spec-tools.json, the spec's own table kept once as
// an independent oracle; test/*.mjs read the same file.
type specTool struct {
	Name        string   `json:"name"`
	ReadOnly    bool     `json:"readOnly"`
	Destructive bool     `json:"destructive"`
	Idempotent  bool     `json:"idempotent"`
	OpenWorld   bool     `json:"openWorld"`
	Scopes      []string `json:"scopes"`
	Confirm     bool     `json:"confirm"`
}

func TestCatalogMatchesSpecTable(t *testing.T) {
	raw, err := os.ReadFile("testdata/spec-tools.json")
	if err != nil {
		t.Fatal(err)
	}
	var spec struct {
		Tools []specTool `json:"tools"`
	}
	if err := json.Unmarshal(raw, &spec); err != nil {
		t.Fatal(err)
	}
	if len(spec.Tools) == 0 {
		t.Fatal("spec-tools.json lists no tools")
	}
	c := New(Deps{})
	// The spec's tools come in the spec's order (docs/architecture.md section 11); a
	// tool the spec does not list may stand anywhere, and only the catalog's own tests
	// check it (docs/adding-a-tool.md).
	var order, specOrder []string
	for _, st := range spec.Tools {
		specOrder = append(specOrder, st.Name)
	}
	for _, tool := range c.Tools() {
		if slices.Contains(specOrder, tool.Name) {
			order = append(order, tool.Name)
		}
	}
	if !slices.Equal(order, specOrder) {
		t.Errorf("catalog order of the spec's tools = %v, want %v", order, specOrder)
	}
	for _, st := range spec.Tools {
		tool, ok := c.Lookup(st.Name)
		if !ok {
			t.Errorf("%s: in the spec's table, not in the catalog", st.Name)
			continue
		}
		a := tool.Annotations
		got := specTool{st.Name, a.ReadOnly, a.Destructive, a.Idempotent, a.OpenWorld, tool.Scopes, tool.RequiresConfirm()}
		if !reflect.DeepEqual(got, st) {
			t.Errorf("%s: catalog %+v, spec %+v", st.Name, got, st)
		}
	}
}

// TestRegistryRanks: every tool registers once, under a rank of its own, so the order
// of tools/list does not depend on which file's init ran first.
func TestRegistryRanks(t *testing.T) {
	ranks := map[int]string{}
	for _, r := range registry {
		name := r.build(Deps{}).Name
		if other, ok := ranks[r.rank]; ok {
			t.Errorf("%s and %s share rank %d", other, name, r.rank)
		}
		ranks[r.rank] = name
	}
	if len(registry) != len(New(Deps{}).Tools()) {
		t.Errorf("%d registrations, %d tools", len(registry), len(New(Deps{}).Tools()))
	}
}
