package file

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/audit/audittest"
)

// TestReadsVersion10Files: the hours a 1.0 writer left behind (JSON lines without
// client_id, event_type and action, and Parquet files without those columns) read as
// the tool calls they were, next to 1.1 records, before and after compaction.
func TestReadsVersion10Files(t *testing.T) {
	dir := t.TempDir()
	h := time.Date(2025, 6, 22, 10, 0, 0, 0, time.UTC)
	var legacyJSON, legacyParquet []audit.Record
	for i := range 3 {
		legacyJSON = append(legacyJSON, audittest.Record(h.Add(time.Duration(i)*time.Minute), audittest.Tool("delete_issue")))
		legacyParquet = append(legacyParquet, audittest.Record(h.Add(time.Hour+time.Duration(i)*time.Minute)))
	}
	part := func(hour time.Time) string {
		d := partitionDir(filepath.Join(dir, Subdir), hour)
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		return d
	}
	var lines []byte
	for _, r := range legacyJSON {
		lines = append(lines, audittest.LegacyLine(r)...)
	}
	if strings.Contains(string(lines), "event_type") {
		t.Fatalf("fixture is not a 1.0 line: %s", lines)
	}
	if err := os.WriteFile(filepath.Join(part(h), "legacy-writer.json"), lines, 0o600); err != nil {
		t.Fatal(err)
	}
	audittest.WriteLegacyParquet(t, filepath.Join(part(h.Add(time.Hour)), "compacted-"+audit.NewEventIDAt(h)+parquetExt), legacyParquet)

	// A 1.1 writer adds an OAuth client's call to the hour that holds the 1.0 Parquet file.
	current := audittest.Record(h.Add(time.Hour+30*time.Minute), audittest.Client("https://c.example/meta"))
	s := newSink(t, dir)
	mustWrite(t, s, current)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	check := func(stage string) {
		t.Helper()
		recs, lerrs, err := ReadAll(dir)
		if err != nil || len(lerrs) > 0 {
			t.Fatalf("%s: ReadAll: %v %v", stage, err, lerrs)
		}
		if len(recs) != 7 {
			t.Fatalf("%s: %d records, want 7", stage, len(recs))
		}
		for _, r := range recs {
			if err := r.Validate(); err != nil {
				t.Errorf("%s: %s: %v", stage, r.EventID, err)
			}
			if r.EventType != audit.EventToolCall || r.Action != "" {
				t.Errorf("%s: %s: event_type %q action %q", stage, r.EventID, r.EventType, r.Action)
			}
			switch {
			case r.EventID == current.EventID:
				if r.EventVersion != audit.EventVersion || r.ClientID != current.ClientID {
					t.Errorf("%s: 1.1 record read as version %q client %q", stage, r.EventVersion, r.ClientID)
				}
			case r.EventVersion != audit.EventVersion10 || r.ClientID != "":
				t.Errorf("%s: 1.0 record %s read as version %q client %q", stage, r.EventID, r.EventVersion, r.ClientID)
			}
		}
		var ids []string
		for _, r := range recs {
			ids = append(ids, r.EventID)
		}
		for _, r := range slices.Concat(legacyJSON, legacyParquet, []audit.Record{current}) {
			if !slices.Contains(ids, r.EventID) {
				t.Errorf("%s: record %s missing", stage, r.EventID)
			}
		}
	}
	check("as left by the 1.0 writer")
	stats, err := Compact(dir, h.Add(3*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if stats.Partitions != 2 || stats.Records != 4 {
		t.Fatalf("compaction %+v, want both hours' JSON (3 + 1 records)", stats)
	}
	check("after compaction")
}
