// Package audit holds the JSON Schema of the audit record (record.schema.json) and
// real example records, and validates records against the schema.
//
// The schema is the contract with everything downstream of the sinks: the Glue
// table behind Athena, Firehose's Parquet conversion, and anyone reading the files.
// Tests here keep it equal to audit.Record's fields.
package audit

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/aacworkflow/aacmcp/shared/audit"
)

// Schema is record.schema.json.
//
//go:embed record.schema.json
var Schema []byte

const schemaURL = "record.schema.json"

var compiled = sync.OnceValues(func() (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(Schema))
	if err != nil {
		return nil, fmt.Errorf("audit schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, fmt.Errorf("audit schema: %w", err)
	}
	return c.Compile(schemaURL)
})

// Validate checks one JSON document (a record as written to a sink) against the
// schema.
func Validate(doc []byte) error {
	sch, err := compiled()
	if err != nil {
		return err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return fmt.Errorf("audit schema: not JSON: %w", err)
	}
	return sch.Validate(inst)
}

// ValidateRecord encodes r as the sinks do and validates it.
func ValidateRecord(r audit.Record) error {
	line, err := audit.MarshalLine(r)
	if err != nil {
		return err
	}
	return Validate(line)
}

// Properties returns the names of the schema's properties in column order (the
// order of the schema's "required" list, which names every property, in the order of
// audit.Record's fields). They are the columns of the audit table.
func Properties() ([]string, error) {
	var s struct {
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(Schema, &s); err != nil {
		return nil, fmt.Errorf("audit schema: %w", err)
	}
	return s.Required, nil
}
