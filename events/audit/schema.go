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

// Properties returns the names of the schema's properties in column order: the
// order in which "properties" lists them, which is the order of audit.Record's
// fields. They are the columns of the audit table. (The "required" list no longer
// names every column: the fields 1.1 added are required of 1.1 records only.)
func Properties() ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(Schema))
	if err := enterObject(dec); err != nil {
		return nil, err
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("audit schema: %w", err)
		}
		if key != "properties" {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil, fmt.Errorf("audit schema: %w", err)
			}
			continue
		}
		if err := enterObject(dec); err != nil {
			return nil, err
		}
		var names []string
		for dec.More() {
			name, err := dec.Token()
			if err != nil {
				return nil, fmt.Errorf("audit schema: %w", err)
			}
			names = append(names, name.(string)) // an object key is always a string
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil, fmt.Errorf("audit schema: %w", err)
			}
		}
		return names, nil
	}
	return nil, fmt.Errorf("audit schema: no properties")
}

func enterObject(dec *json.Decoder) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("audit schema: %w", err)
	}
	if tok != json.Delim('{') {
		return fmt.Errorf("audit schema: %v where an object was expected", tok)
	}
	return nil
}
