package file

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/aacworkflow/aacmcp/shared/audit"
)

// TestParquetColumnsAreJSONNames: a compacted file's columns are Record's JSON names,
// in Record's order, so that the audit table reads JSON and Parquet files alike. A
// field given a json tag and no parquet tag would be a column named after the Go
// field.
func TestParquetColumnsAreJSONNames(t *testing.T) {
	var want []string
	for _, f := range reflect.VisibleFields(reflect.TypeFor[audit.Record]()) {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		want = append(want, name)
	}
	var got []string
	for _, f := range rowSchema.Fields() {
		got = append(got, f.Name())
	}
	if !slices.Equal(got, want) {
		t.Errorf("Parquet columns %v\nwant JSON names %v", got, want)
	}
}
