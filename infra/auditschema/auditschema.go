// Package auditschema derives the Glue (Hive) columns of the audit table from the Go
// audit record, and reads the same columns out of the record's JSON Schema so that a
// test can hold the two in step.
//
// The Go struct shared/audit.Record is the source of truth: its JSON tags are the wire
// names, the Parquet column names Firehose writes, and the Athena column names admins
// query. Deriving the columns by reflection means a new field cannot reach the stream
// without reaching the table (Firehose's format conversion silently drops fields the
// table does not declare).
package auditschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/aacworkflow/aacmcp/shared/audit"
)

// Hive type names used by the Glue table.
const (
	TypeString      = "string"
	TypeBoolean     = "boolean"
	TypeBigint      = "bigint"
	TypeArrayString = "array<string>"
)

// Column is one column of the audit table.
type Column struct {
	Name string
	Type string // one of the Type* constants
}

// Columns returns the audit table's columns in audit.Record's field order.
func Columns() ([]Column, error) {
	return ColumnsOf(reflect.TypeFor[audit.Record]())
}

// ColumnsOf maps the exported, JSON-tagged fields of a struct type to columns. Field
// kinds without a faithful Hive mapping are an error rather than a guess: a column of
// the wrong type makes Firehose route every record to the error prefix.
func ColumnsOf(t reflect.Type) ([]Column, error) {
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("auditschema: %s is not a struct", t)
	}
	var cols []Column
	seen := map[string]bool{}
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			return nil, fmt.Errorf("auditschema: field %s has no json name", f.Name)
		}
		if name != strings.ToLower(name) {
			// Glue lower-cases column names; a mixed-case JSON name would not match
			// its column under a case-sensitive reader.
			return nil, fmt.Errorf("auditschema: json name %q of field %s is not lower case", name, f.Name)
		}
		if seen[name] {
			return nil, fmt.Errorf("auditschema: json name %q used twice", name)
		}
		seen[name] = true
		typ, err := hiveType(f.Type)
		if err != nil {
			return nil, fmt.Errorf("auditschema: field %s: %w", f.Name, err)
		}
		cols = append(cols, Column{Name: name, Type: typ})
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("auditschema: %s has no columns", t)
	}
	return cols, nil
}

func hiveType(t reflect.Type) (string, error) {
	switch t.Kind() {
	case reflect.String:
		return TypeString, nil
	case reflect.Bool:
		return TypeBoolean, nil
	case reflect.Int64, reflect.Int, reflect.Int32:
		// bigint for every integer: it is what the JSON Schema's "integer" maps to.
		return TypeBigint, nil
	case reflect.Slice:
		if t.Elem().Kind() == reflect.String {
			return TypeArrayString, nil
		}
	}
	return "", fmt.Errorf("no Hive mapping for Go type %s", t)
}

// ErrSchema reports a JSON Schema this package cannot map to columns.
var ErrSchema = errors.New("auditschema: unsupported JSON Schema")

// schemaNode is the part of a JSON Schema that decides a column type.
type schemaNode struct {
	Type       json.RawMessage        `json:"type"`
	Const      json.RawMessage        `json:"const"`
	Enum       []json.RawMessage      `json:"enum"`
	Items      *schemaNode            `json:"items"`
	Properties map[string]*schemaNode `json:"properties"`
}

// FromJSONSchema reads the columns a JSON Schema object describes, sorted by name
// (JSON object members have no order). Each property must have a single JSON type,
// optionally together with "null", given by "type" or implied by "const" or "enum";
// arrays must be arrays of strings.
func FromJSONSchema(data []byte) ([]Column, error) {
	var root schemaNode
	if err := json.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSchema, err)
	}
	if len(root.Properties) == 0 {
		return nil, fmt.Errorf("%w: no properties", ErrSchema)
	}
	cols := make([]Column, 0, len(root.Properties))
	for name, node := range root.Properties {
		if node == nil {
			return nil, fmt.Errorf("%w: property %q is null", ErrSchema, name)
		}
		typ, err := node.hiveType()
		if err != nil {
			return nil, fmt.Errorf("property %q: %w", name, err)
		}
		cols = append(cols, Column{Name: name, Type: typ})
	}
	SortByName(cols)
	return cols, nil
}

func (n *schemaNode) jsonType() (string, error) {
	if len(n.Type) == 0 {
		return n.impliedType()
	}
	var one string
	if err := json.Unmarshal(n.Type, &one); err == nil {
		return one, nil
	}
	var many []string
	if err := json.Unmarshal(n.Type, &many); err != nil {
		return "", fmt.Errorf("%w: type is neither a string nor a list of strings", ErrSchema)
	}
	many = slices.DeleteFunc(many, func(s string) bool { return s == "null" })
	if len(many) != 1 {
		return "", fmt.Errorf("%w: type must name exactly one non-null type", ErrSchema)
	}
	return many[0], nil
}

// impliedType is the JSON type shared by the const or every non-null enum value.
func (n *schemaNode) impliedType() (string, error) {
	values := n.Enum
	if len(n.Const) > 0 {
		values = append(values, n.Const)
	}
	var typ string
	for _, v := range values {
		t := valueType(v)
		if t == "null" {
			continue
		}
		if t == "" || (typ != "" && t != typ) {
			return "", fmt.Errorf("%w: const or enum values of mixed or unsupported types", ErrSchema)
		}
		typ = t
	}
	if typ == "" {
		return "", fmt.Errorf("%w: no type", ErrSchema)
	}
	return typ, nil
}

// valueType is the JSON Schema type of one JSON value ("" for objects, arrays and
// non-integral numbers, which no column here holds).
func valueType(v json.RawMessage) string {
	var x any
	d := json.NewDecoder(bytes.NewReader(v))
	d.UseNumber()
	if err := d.Decode(&x); err != nil {
		return ""
	}
	switch x := x.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "boolean"
	case json.Number:
		if _, err := x.Int64(); err == nil {
			return "integer"
		}
	}
	return ""
}

func (n *schemaNode) hiveType() (string, error) {
	t, err := n.jsonType()
	if err != nil {
		return "", err
	}
	switch t {
	case "string":
		return TypeString, nil
	case "boolean":
		return TypeBoolean, nil
	case "integer":
		return TypeBigint, nil
	case "array":
		if n.Items == nil {
			return "", fmt.Errorf("%w: array without items", ErrSchema)
		}
		it, err := n.Items.jsonType()
		if err != nil {
			return "", err
		}
		if it == "string" {
			return TypeArrayString, nil
		}
		return "", fmt.Errorf("%w: array of %s", ErrSchema, it)
	}
	return "", fmt.Errorf("%w: type %q", ErrSchema, t)
}

// SortByName sorts columns by name, for order-insensitive comparison.
func SortByName(cols []Column) {
	slices.SortFunc(cols, func(a, b Column) int { return strings.Compare(a.Name, b.Name) })
}
