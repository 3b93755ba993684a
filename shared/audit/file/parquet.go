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

// parquetRow is audit.Record with Parquet column names (the JSON names, so the
// table's columns are the same in both formats). It has exactly Record's fields, so
// the two convert into each other; a field added to one and not the other stops the
// build.
type parquetRow struct {
	EventID            string   `parquet:"event_id"`
	EventVersion       string   `parquet:"event_version"`
	Timestamp          string   `parquet:"timestamp"`
	Tool               string   `parquet:"tool"`
	Outcome            string   `parquet:"outcome"`
	Reason             string   `parquet:"reason"`
	ScopesProvided     []string `parquet:"scopes_provided,list"`
	ScopesRequired     []string `parquet:"scopes_required,list"`
	WorkspaceID        string   `parquet:"workspace_id"`
	UserID             string   `parquet:"user_id"`
	TokenID            string   `parquet:"token_id"`
	ReadOnly           bool     `parquet:"read_only"`
	Destructive        bool     `parquet:"destructive"`
	ConfirmPresent     bool     `parquet:"confirm_present"`
	ResourceID         string   `parquet:"resource_id"`
	IdempotencyKeyHMAC string   `parquet:"idempotency_key_hmac"`
	IdempotentReplay   bool     `parquet:"idempotent_replay"`
	RequestID          string   `parquet:"request_id"`
	JSONRPCID          string   `parquet:"jsonrpc_id"`
	ClientName         string   `parquet:"client_name"`
	ClientVersion      string   `parquet:"client_version"`
	ProtocolVersion    string   `parquet:"protocol_version"`
	UserAgent          string   `parquet:"user_agent"`
	SourceIP           string   `parquet:"source_ip"`
	ArgsHMAC           string   `parquet:"args_hmac"`
	DurationMS         int64    `parquet:"duration_ms"`
	Transport          string   `parquet:"transport"`
	ClientID           string   `parquet:"client_id"`
	EventType          string   `parquet:"event_type"`
	Action             string   `parquet:"action"`
	// A file compacted by a writer before 1.3 has no confirmation column: it
	// reads "", what those records meant.
	Confirmation string `parquet:"confirmation"`
	// The 1.0 and 1.1 digests (audit.Record says why they are kept).
	ArgsSHA256     string `parquet:"args_sha256"`
	IdempotencyKey string `parquet:"idempotency_key"`
}

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
	pw := parquet.NewGenericWriter[parquetRow](w,
		parquet.Compression(&parquet.Zstd),
		parquet.KeyValueMetadata(manifestKey, string(m)),
		parquet.CreatedBy("aacmcp", "audit-compaction", audit.EventVersion),
	)
	rows := make([]parquetRow, len(recs))
	for i, r := range recs {
		rows[i] = parquetRow(r)
	}
	if _, err := pw.Write(rows); err != nil {
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
	r := parquet.NewGenericReader[parquetRow](f)
	defer r.Close()
	buf := make([]parquetRow, 256)
	var row int64
	for {
		n, err := r.Read(buf)
		for _, pr := range buf[:n] {
			// A file compacted by a 1.0 writer has no client_id, event_type or
			// action columns: the reader leaves them "", and Normalize makes the
			// record the tool call it was.
			rec := audit.Normalize(audit.Record(pr))
			if err := fn(Entry{Path: path, Offset: row, Record: rec}); err != nil {
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
