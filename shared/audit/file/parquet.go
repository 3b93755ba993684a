package file

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/parquet-go/parquet-go"

	"github.com/aacworkflow/aacmcp/shared/audit"
)

// rowSchema is the schema of a compacted file: audit.Record's fields, their columns
// named by its parquet tags (the JSON names, so the table's columns are the same in
// both formats). The root keeps the name it had when the schema was a struct of this
// package's own, so that a file compacted now is byte for byte what it was then;
// readers go by the column names and never look at it.
//
// A column a file lacks reads as the field's zero value: "" for the confirmation of a
// file compacted before 1.3, and for the client_id, event_type and action of a 1.0
// file, which Normalize then makes the tool call it was.
var rowSchema = parquet.NewSchema("parquetRow", parquet.SchemaOf(audit.Record{}))

// manifestKey is the Parquet key-value metadata entry that lists, as a JSON array of
// base names, the JSON files of the same partition whose records the Parquet file
// holds. Readers skip those files: the rename that publishes the Parquet file is the
// single atomic step that moves the records from one format to the other.
const manifestKey = "aacmcp.replaces"

// readManifest returns the JSON file names a compacted Parquet file replaces.
func readManifest(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	pf, err := parquet.OpenFile(f, fi.Size(), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return nil, fmt.Errorf("audit: open %s: %w", path, err)
	}
	v, ok := pf.Lookup(manifestKey)
	if !ok {
		return nil, nil
	}
	var names []string
	if err := json.Unmarshal([]byte(v), &names); err != nil {
		return nil, fmt.Errorf("audit: %s: bad %s metadata: %w", path, manifestKey, err)
	}
	return names, nil
}

// writeParquet writes recs with the manifest to w.
func writeParquet(w io.Writer, recs []audit.Record, replaces []string) error {
	m, err := json.Marshal(replaces)
	if err != nil {
		return err
	}
	pw := parquet.NewGenericWriter[audit.Record](w, rowSchema,
		parquet.Compression(&parquet.Zstd),
		parquet.KeyValueMetadata(manifestKey, string(m)),
		parquet.CreatedBy("aacmcp", "audit-compaction", audit.EventVersion),
	)
	if _, err := pw.Write(recs); err != nil {
		return err
	}
	return pw.Close()
}

// scanParquet calls fn with every record of a compacted file; Entry.Offset is the row
// number.
func scanParquet(path string, fn func(Entry) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	defer f.Close()
	r := parquet.NewGenericReader[audit.Record](f, rowSchema)
	defer r.Close()
	buf := make([]audit.Record, 256)
	var row int64
	for {
		n, err := r.Read(buf)
		for _, rec := range buf[:n] {
			if err := fn(Entry{Path: path, Offset: row, Record: audit.Normalize(rec)}); err != nil {
				return err
			}
			row++
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("audit: read %s: %w", filepath.Base(path), err)
		}
	}
}
