package usagereplay_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/audit/audittest"
	"github.com/aacworkflow/aacmcp/shared/audit/file"
	"github.com/aacworkflow/aacmcp/shared/catalog"
	"github.com/aacworkflow/aacmcp/shared/store"
	"github.com/aacworkflow/aacmcp/shared/store/sqlite"
	"github.com/aacworkflow/aacmcp/shared/usagereplay"
)

// TestReplay writes an audit log across three hours (two compacted to Parquet, one
// still JSON lines, with a torn last line) around a watermark, and checks that the
// replay counts exactly the records at or after the watermark that count usage,
// skips those counted already, and changes nothing when run again.
func TestReplay(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	now := time.Date(2026, 3, 1, 12, 30, 0, 0, time.UTC)
	at := func(hhmm string) time.Time {
		tm, err := time.Parse("2006-01-02T15:04", "2026-03-01T"+hhmm)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	// The store's clock is fixed: the watermark of a new database is now - 5 min.
	st, err := sqlite.Open(ctx, filepath.Join(dir, "aacmcp.db"), sqlite.WithClock(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	counted := audittest.Record(at("12:27"), audittest.Who("ws1", "tok1"))
	recs := []audit.Record{
		audittest.Record(at("11:10"), audittest.Who("ws1", "tok1")), // before the watermark's hour
		audittest.Record(at("12:20"), audittest.Who("ws1", "tok1")), // in its hour, before it
		audittest.Record(at("12:26"), audittest.Who("ws1", "tok1")), // lost: replayed
		audittest.Record(at("12:40"), audittest.Who("ws1", "tok1"), audittest.Tool("list_issues"), audittest.Denied("insufficient_scope")),
		audittest.Record(at("13:05"), audittest.Who("ws2", "tok2"), audittest.Tool("create_issue"), audittest.Failed("conflict")),
		audittest.Record(at("12:50"), audittest.Who("ws1", "tok1"), func(r *audit.Record) { r.Tool = "no_such_tool" }), // unknown tool: not counted
		audittest.Record(at("12:51"), audittest.Who("", "")),                                                           // rejected token: not counted
		counted, // counted before the crash: its marker drops the replay
	}
	sink, err := file.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := sink.Write(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := file.Compact(dir, at("13:00")); err != nil {
		t.Fatal(err)
	}
	for _, hour := range []string{"11", "12"} {
		if m, _ := filepath.Glob(filepath.Join(dir, "audit", "dt=2026-03-01", "hour="+hour, "*.parquet")); len(m) != 1 {
			t.Fatalf("hour %s: want one Parquet file, got %v", hour, m)
		}
	}
	// A record cut short by the kill, at the end of the live hour's file.
	live, _ := filepath.Glob(filepath.Join(dir, "audit", "dt=2026-03-01", "hour=13", "*.json"))
	if len(live) != 1 {
		t.Fatalf("hour 13: want one JSON file, got %v", live)
	}
	f, err := os.OpenFile(live[0], os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"event_id":"01J`); err != nil {
		t.Fatal(err)
	}
	f.Close()

	if err := st.UpdateUsage(ctx, store.UsageIncrement{WorkspaceID: "ws1", Date: "2026-03-01", Tool: counted.Tool,
		Outcome: counted.Outcome, EventID: counted.EventID}); err != nil {
		t.Fatal(err)
	}
	if err := st.FlushUsage(ctx); err != nil {
		t.Fatal(err)
	}

	cat := catalog.New(catalog.Deps{})
	known := func(tool string) bool { _, ok := cat.Lookup(tool); return ok }
	wantUsage := map[string][]store.UsageRow{
		"ws1": {
			{Date: "2026-03-01", Tool: "get_issue", Calls: 2},
			{Date: "2026-03-01", Tool: "list_issues", Calls: 1, Denied: 1},
		},
		"ws2": {{Date: "2026-03-01", Tool: "create_issue", Calls: 1, Errors: 1}},
	}
	runs := []struct {
		name string
		want usagereplay.Stats
	}{
		{name: "first", want: usagereplay.Stats{From: at("12:25"), Records: 6, Counted: 4, Recovered: 3, Damaged: 1}},
		{name: "again", want: usagereplay.Stats{From: at("12:25"), Records: 6, Counted: 4, Recovered: 0, Damaged: 1}},
	}
	for _, run := range runs {
		t.Run(run.name, func(t *testing.T) {
			got, err := usagereplay.Replay(ctx, dir, st, known)
			if err != nil {
				t.Fatal(err)
			}
			if !got.From.Equal(run.want.From) {
				t.Errorf("From = %v, want %v", got.From, run.want.From)
			}
			got.From = run.want.From
			if got != run.want {
				t.Errorf("stats = %+v, want %+v", got, run.want)
			}
			for ws, want := range wantUsage {
				rows, err := st.ListUsage(ctx, ws, "2026-03-01", "2026-03-01")
				if err != nil {
					t.Fatal(err)
				}
				if len(rows) != len(want) {
					t.Fatalf("%s: usage = %+v, want %+v", ws, rows, want)
				}
				for i := range want {
					if rows[i] != want[i] {
						t.Errorf("%s: usage[%d] = %+v, want %+v", ws, i, rows[i], want[i])
					}
				}
			}
		})
	}
}
