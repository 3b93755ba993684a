package file

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/audit/audittest"
)

var errCrash = errors.New("simulated crash")

// compactFixture writes records for two closed hours through three sinks (three
// files per hour), plus one hour still open by a live sink, and returns every record
// written and the live sink.
func compactFixture(t *testing.T, dir string) ([]audit.Record, *Sink) {
	t.Helper()
	h := time.Date(2025, 6, 22, 10, 0, 0, 0, time.UTC)
	var all []audit.Record
	for w := range 3 {
		s := newSink(t, dir)
		for i := range 20 {
			for _, hour := range []time.Time{h, h.Add(time.Hour)} {
				r := audittest.Record(hour.Add(time.Duration(w*100+i)*time.Second), func(r *audit.Record) {
					r.ScopesProvided = []string{"issues:read", "issues:write"}
					if i%3 == 0 {
						r.ScopesRequired = []string{}
					}
				})
				mustWrite(t, s, r)
				all = append(all, r)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// A writer still holding a file of hour 11 (late records): never compacted.
	live := newSink(t, dir)
	late := audittest.Record(h.Add(time.Hour + 59*time.Minute))
	mustWrite(t, live, late)
	all = append(all, late)
	return all, live
}

// checkExactlyOnce fails unless dir holds each record of want exactly once, with
// every field intact.
func checkExactlyOnce(t *testing.T, dir string, want []audit.Record) {
	t.Helper()
	got, bad, err := ReadAll(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) != 0 {
		t.Fatalf("damaged lines: %v", bad)
	}
	byID := make(map[string]audit.Record, len(want))
	for _, r := range want {
		byID[r.EventID] = r
	}
	seen := make(map[string]bool, len(got))
	for _, r := range got {
		if seen[r.EventID] {
			t.Fatalf("record %s read twice", r.EventID)
		}
		seen[r.EventID] = true
		w, ok := byID[r.EventID]
		if !ok {
			t.Fatalf("unknown record %s", r.EventID)
		}
		if !reflect.DeepEqual(r, w) {
			t.Fatalf("record changed:\n got %+v\nwant %+v", r, w)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("read %d records, want %d", len(got), len(want))
	}
	// The snapshot the query view uses agrees: no JSON file it lists is also held by
	// a Parquet file it lists.
	snap, err := Live(dir)
	if err != nil {
		t.Fatal(err)
	}
	replaced := map[string]bool{}
	for _, pq := range snap.Parquet {
		names, err := readManifest(pq)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			replaced[filepath.Join(filepath.Dir(pq), n)] = true
		}
	}
	for _, j := range snap.JSON {
		if replaced[j] {
			t.Fatalf("%s is both live JSON and in a Parquet manifest", j)
		}
	}
}

func TestCompact(t *testing.T) {
	dir := t.TempDir()
	all, live := compactFixture(t, dir)
	h10 := time.Date(2025, 6, 22, 10, 0, 0, 0, time.UTC)

	// Only hours that ended by `before` are touched.
	stats, err := Compact(dir, h10.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if stats.Partitions != 1 || stats.Files != 3 || stats.Records != 60 || stats.Skipped != 0 {
		t.Fatalf("first run %+v", stats)
	}
	checkExactlyOnce(t, dir, all)
	if n := len(jsonFiles(t, dir, h10)); n != 0 {
		t.Fatalf("hour 10 still has %d JSON files", n)
	}
	if n := len(jsonFiles(t, dir, h10.Add(time.Hour))); n != 4 {
		t.Fatalf("hour 11 has %d JSON files, want 4 (not yet closed)", n)
	}

	stats, err = Compact(dir, h10.Add(3*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if stats.Partitions != 1 || stats.Files != 3 || stats.Skipped != 1 {
		t.Fatalf("second run %+v (the live writer's file must be skipped)", stats)
	}
	checkExactlyOnce(t, dir, all)

	// The live writer keeps appending to its file; once closed, it is compacted too.
	more := audittest.Record(h10.Add(time.Hour + 59*time.Minute + 30*time.Second))
	mustWrite(t, live, more)
	all = append(all, more)
	checkExactlyOnce(t, dir, all)
	if err := live.Close(); err != nil {
		t.Fatal(err)
	}
	stats, err = Compact(dir, h10.Add(3*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if stats.Files != 1 || stats.Records != 2 {
		t.Fatalf("third run %+v", stats)
	}
	checkExactlyOnce(t, dir, all)
	for _, h := range []time.Time{h10, h10.Add(time.Hour)} {
		if n := len(jsonFiles(t, dir, h)); n != 0 {
			t.Fatalf("hour %s has %d JSON files left", h, n)
		}
	}
	// Nothing left to do: a run changes nothing.
	if stats, err := Compact(dir, h10.Add(3*time.Hour)); err != nil || stats != (CompactStats{}) {
		t.Fatalf("idle run %+v, %v", stats, err)
	}
}

// TestCompactCrashAtEveryStep stops the compaction after each step, as a crash would,
// and checks that no record is lost or doubled at that point, and that the next run
// finishes the job.
func TestCompactCrashAtEveryStep(t *testing.T) {
	steps := []string{"locked", "written", "synced", "renamed", "removed-first"}
	for _, step := range steps {
		t.Run(step, func(t *testing.T) {
			dir := t.TempDir()
			all, live := compactFixture(t, dir)
			if err := live.Close(); err != nil {
				t.Fatal(err)
			}
			h10 := time.Date(2025, 6, 22, 10, 0, 0, 0, time.UTC)
			compactHook = func(s string) error {
				if s == step {
					return errCrash
				}
				return nil
			}
			_, err := Compact(dir, h10.Add(time.Hour))
			compactHook = nil
			if !errors.Is(err, errCrash) {
				t.Fatalf("Compact = %v, want the simulated crash at %s", err, step)
			}
			checkExactlyOnce(t, dir, all)

			stats, err := Compact(dir, h10.Add(3*time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			checkExactlyOnce(t, dir, all)
			if stats.Skipped != 0 {
				t.Errorf("recovery run skipped %d files", stats.Skipped)
			}
			for _, h := range []time.Time{h10, h10.Add(time.Hour)} {
				pdir := partitionDir(filepath.Join(dir, Subdir), h)
				entries, err := os.ReadDir(pdir)
				if err != nil {
					t.Fatal(err)
				}
				var names []string
				for _, e := range entries {
					names = append(names, e.Name())
				}
				for _, n := range names {
					if strings.HasSuffix(n, jsonExt) || strings.HasSuffix(n, tmpExt) {
						t.Errorf("hour %s: %s left after recovery (files %v)", h.Format("15"), n, names)
					}
				}
				if i := slices.IndexFunc(names, func(n string) bool { return strings.HasSuffix(n, parquetExt) }); i < 0 {
					t.Errorf("hour %s: no Parquet file after recovery (files %v)", h.Format("15"), names)
				}
			}
		})
	}
}

func TestCompactLeavesDamagedFiles(t *testing.T) {
	dir := t.TempDir()
	h := time.Date(2025, 6, 22, 10, 0, 0, 0, time.UTC)
	s := newSink(t, dir)
	good := []audit.Record{audittest.Record(h), audittest.Record(h.Add(time.Minute))}
	for _, r := range good {
		mustWrite(t, s, r)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	line, _ := audit.MarshalLine(audittest.Record(h))
	crashed := filepath.Join(partitionDir(filepath.Join(dir, Subdir), h), "crashed.json")
	if err := os.WriteFile(crashed, append(append([]byte{}, line...), line[:40]...), 0o600); err != nil {
		t.Fatal(err)
	}
	whole, _ := audit.UnmarshalLine(line)
	stats, err := Compact(dir, h.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if stats.Files != 1 || stats.Skipped != 1 {
		t.Fatalf("stats %+v", stats)
	}
	if _, err := os.Stat(crashed); err != nil {
		t.Fatalf("damaged file removed: %v", err)
	}
	recs, bad, err := ReadAll(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 || len(bad) != 1 || !errors.Is(bad[0], ErrTornLine) {
		t.Fatalf("after compaction: %d records, damage %v", len(recs), bad)
	}
	if !slices.ContainsFunc(recs, func(r audit.Record) bool { return r.EventID == whole.EventID }) {
		t.Fatal("the whole line of the damaged file was lost")
	}
}

func TestScanDuringCompaction(t *testing.T) {
	dir := t.TempDir()
	all, live := compactFixture(t, dir)
	if err := live.Close(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := Compact(dir, time.Date(2025, 6, 22, 12, 0, 0, 0, time.UTC))
		done <- err
	}()
	// Readers racing the compaction always see every record exactly once.
	for {
		checkExactlyOnce(t, dir, all)
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			checkExactlyOnce(t, dir, all)
			return
		case <-ctx.Done():
			return
		default:
		}
	}
}
