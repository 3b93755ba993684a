package auditschema

import (
	"errors"
	"os"
	"reflect"
	"slices"
	"testing"
)

func TestColumnsFollowTheRecord(t *testing.T) {
	cols, err := Columns()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]string{}
	for _, c := range cols {
		byName[c.Name] = c.Type
	}
	for name, typ := range map[string]string{
		"event_id": TypeString, "timestamp": TypeString, "scopes_provided": TypeArrayString,
		"scopes_required": TypeArrayString, "read_only": TypeBoolean, "duration_ms": TypeBigint,
		"transport": TypeString,
	} {
		if byName[name] != typ {
			t.Errorf("column %s = %q, want %q", name, byName[name], typ)
		}
	}
	if cols[0].Name != "event_id" {
		t.Errorf("first column %s: the order must be the struct's", cols[0].Name)
	}
	// Event version 1.1 appended its columns after the 1.0 ones; 1.2 put its HMACs
	// where the plain digests were and moved those (kept for 1.0 and 1.1 records)
	// to the end; 1.3 appended confirmation after action. Athena reads Parquet and
	// JSON columns by name, so old files read their digests into the moved columns
	// and NULL into the new ones.
	var last []Column
	if len(cols) >= 6 {
		last = cols[len(cols)-6:]
	}
	if want := []Column{{"client_id", TypeString}, {"event_type", TypeString}, {"action", TypeString},
		{"confirmation", TypeString}, {"args_sha256", TypeString}, {"idempotency_key", TypeString}}; !slices.Equal(last, want) {
		t.Errorf("last columns %v, want %v", last, want)
	}
	for _, c := range []string{"args_hmac", "idempotency_key_hmac"} {
		if byName[c] != TypeString {
			t.Errorf("no %s column", c)
		}
	}
}

func TestColumnsOfRejects(t *testing.T) {
	type noTag struct{ A string }
	type upper struct {
		A string `json:"Abc"`
	}
	// Built at run time: vet rightly rejects a literal struct with a duplicated tag.
	dup := reflect.StructOf([]reflect.StructField{
		{Name: "A", Type: reflect.TypeFor[string](), Tag: `json:"a"`},
		{Name: "B", Type: reflect.TypeFor[string](), Tag: `json:"a"`},
	})
	type float struct {
		A float64 `json:"a"`
	}
	type ints struct {
		A []int `json:"a"`
	}
	type skipped struct {
		A string `json:"-"`
		b string
		C bool `json:"c,omitempty"`
	}
	_ = skipped{b: "unexported fields are not columns"}.b
	tests := []struct {
		name    string
		typ     reflect.Type
		want    []Column
		wantErr bool
	}{
		{"not a struct", reflect.TypeFor[string](), nil, true},
		{"no json name", reflect.TypeFor[noTag](), nil, true},
		{"upper case", reflect.TypeFor[upper](), nil, true},
		{"duplicate", dup, nil, true},
		{"float", reflect.TypeFor[float](), nil, true},
		{"array of int", reflect.TypeFor[ints](), nil, true},
		{"skips - and unexported, honours options", reflect.TypeFor[skipped](), []Column{{"c", TypeBoolean}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ColumnsOf(tt.typ)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ColumnsOf() error = %v, wantErr %v", err, tt.wantErr)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("ColumnsOf() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestFromJSONSchema(t *testing.T) {
	tests := []struct {
		name    string
		schema  string
		want    []Column
		wantErr bool
	}{
		{"types", `{"type":"object","properties":{
			"z":{"type":"string"},"a":{"type":["boolean","null"]},"n":{"type":"integer"},
			"s":{"type":"array","items":{"type":"string"}}}}`,
			[]Column{{"a", TypeBoolean}, {"n", TypeBigint}, {"s", TypeArrayString}, {"z", TypeString}}, false},
		{"not JSON", `{`, nil, true},
		{"no properties", `{"type":"object"}`, nil, true},
		{"number", `{"properties":{"x":{"type":"number"}}}`, nil, true},
		{"two types", `{"properties":{"x":{"type":["string","integer"]}}}`, nil, true},
		{"array without items", `{"properties":{"x":{"type":"array"}}}`, nil, true},
		{"array of objects", `{"properties":{"x":{"type":"array","items":{"type":"object"}}}}`, nil, true},
		{"null property", `{"properties":{"x":null}}`, nil, true},
		{"type from const and enum", `{"properties":{"v":{"const":"1.0"},"o":{"enum":["a",null,"b"]},"n":{"enum":[1,2]},"b":{"const":true}}}`,
			[]Column{{"b", TypeBoolean}, {"n", TypeBigint}, {"o", TypeString}, {"v", TypeString}}, false},
		{"mixed enum", `{"properties":{"x":{"enum":["a",1]}}}`, nil, true},
		{"fractional const", `{"properties":{"x":{"const":1.5}}}`, nil, true},
		{"only null", `{"properties":{"x":{"enum":[null]}}}`, nil, true},
		{"no type", `{"properties":{"x":{"description":"free"}}}`, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FromJSONSchema([]byte(tt.schema))
			if (err != nil) != tt.wantErr {
				t.Fatalf("FromJSONSchema() error = %v, wantErr %v", err, tt.wantErr)
			}
			if err != nil && !errors.Is(err, ErrSchema) {
				t.Errorf("error %v does not wrap ErrSchema", err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("FromJSONSchema() = %v, want %v", got, tt.want)
			}
		})
	}
}

// recordSchemaPath is the audit record's JSON Schema, written with the audit package.
const recordSchemaPath = "../../events/audit/record.schema.json"

// TestColumnsMatchRecordSchema holds the Glue columns (from the Go struct) and the JSON
// Schema that validates real records to the same names and types.
func TestColumnsMatchRecordSchema(t *testing.T) {
	data, err := os.ReadFile(recordSchemaPath)
	if err != nil {
		t.Fatalf("reading the audit record schema: %v", err)
	}
	fromSchema, err := FromJSONSchema(data)
	if err != nil {
		t.Fatal(err)
	}
	fromGo, err := Columns()
	if err != nil {
		t.Fatal(err)
	}
	SortByName(fromGo)
	if !slices.Equal(fromGo, fromSchema) {
		t.Errorf("Glue columns from audit.Record:\n%v\ncolumns from %s:\n%v", fromGo, recordSchemaPath, fromSchema)
	}
}

func FuzzFromJSONSchema(f *testing.F) {
	f.Add([]byte(`{"properties":{"a":{"type":"string"},"b":{"type":["integer","null"]}}}`))
	f.Add([]byte(`{"properties":{"s":{"type":"array","items":{"type":"string"}}}}`))
	f.Add([]byte(`{"properties":{"x":{"type":[]}}}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"properties":{"e":{"enum":["a",null]},"c":{"const":7}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		cols, err := FromJSONSchema(data)
		if err != nil {
			return
		}
		if len(cols) == 0 {
			t.Fatal("success without columns")
		}
		for i, c := range cols {
			if !slices.Contains([]string{TypeString, TypeBoolean, TypeBigint, TypeArrayString}, c.Type) {
				t.Fatalf("column %v has an unknown type", c)
			}
			if i > 0 && cols[i-1].Name > c.Name {
				t.Fatal("columns not sorted")
			}
		}
	})
}
