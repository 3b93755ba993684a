package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/audit/audittest"
)

// TestAuditCompact: closed hours become Parquet, the open hour stays JSON, and the
// query view counts every record exactly once before and after.
func TestAuditCompact(t *testing.T) {
	data := t.TempDir()
	now := time.Now().UTC()
	old := now.Add(-3 * time.Hour)
	writeRecords(t, data, audittest.Record(old), audittest.Record(old), audittest.Record(old.Add(time.Hour)), audittest.Record(now))

	count := func() any {
		rows := decodeJSON[[]map[string]any](t, mustRun(t, "audit", "query", "--data", data, "--sql", "SELECT count(*) AS n FROM audit_log", "--json"))
		return rows[0]["n"]
	}
	if n := count(); n != float64(4) {
		t.Fatalf("before compaction: %v records, want 4", n)
	}

	st := decodeJSON[map[string]int](t, mustRun(t, "audit", "compact", "--data", data, "--json"))
	if st["partitions"] != 2 || st["records"] != 3 {
		t.Errorf("compact = %v, want 2 closed hours holding 3 records", st)
	}
	if n := count(); n != float64(4) {
		t.Errorf("after compaction: %v records, want 4 (none lost, none doubled)", n)
	}
	var parquet, jsonFiles int
	_ = filepath.WalkDir(filepath.Join(data, "audit"), func(p string, d os.DirEntry, err error) error {
		switch {
		case err != nil || d.IsDir():
		case strings.HasSuffix(p, ".parquet"):
			parquet++
		case strings.HasSuffix(p, ".json"):
			jsonFiles++
		}
		return err
	})
	if parquet != 2 || jsonFiles != 1 {
		t.Errorf("after compaction: %d parquet and %d json files, want 2 and 1 (the open hour)", parquet, jsonFiles)
	}

	// A second run finds nothing left to do.
	if st := decodeJSON[map[string]int](t, mustRun(t, "audit", "compact", "--data", data, "--json")); st["files"] != 0 {
		t.Errorf("second compact = %v, want nothing", st)
	}
	if r := run(t, nil, "audit", "compact", "--data", data, "--min-age", "-1m"); r.code != ExitUsage {
		t.Errorf("negative --min-age: exit %d, want %d", r.code, ExitUsage)
	}
}
