package file

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/aacworkflow/aacmcp/shared/audit"
)

// CompactStats says what Compact did.
type CompactStats struct {
	Partitions int // hours that got a new Parquet file
	Files      int // JSON files replaced
	Records    int // records moved into Parquet
	Skipped    int // JSON files left alone: still open by a writer, or damaged
}

// compactHook, when set by a test, is called after each step of a partition's
// compaction; an error stops Compact right there, as a crash would (no cleanup).
var compactHook func(step string) error

func hook(step string) error {
	if compactHook == nil {
		return nil
	}
	return compactHook(step)
}

// lockName is the per-partition lock file that keeps two compactions (the server's
// background one and `aacmcp audit compact`) out of each other's way.
const lockName = ".compact.lock"

// Compact turns the JSON files of every hour that ended at or before `before` into
// one Parquet file per hour and run, which is about ten times smaller and several
// times faster to query.
//
// Each step leaves the log whole, whatever happens next: the Parquet file is written
// under a .tmp name and fsynced, then renamed into place (readers ignore .tmp), and
// its metadata lists the JSON files it replaces, so from the rename on readers skip
// those files; only then are they removed. A crash leaves either the JSON files
// alone, or the Parquet file plus JSON files that every reader skips and the next
// run removes. Files a writer still holds (flock) are left for a later run, and so
// are files with damaged lines, which Parquet could not carry.
func Compact(dir string, before time.Time) (CompactStats, error) {
	log := slog.Default()
	var stats CompactStats
	parts, err := listPartitions(filepath.Join(dir, Subdir))
	if err != nil {
		return stats, err
	}
	for _, p := range parts {
		if p.hour.Add(time.Hour).After(before) {
			continue
		}
		if err := compactPartition(p, &stats, log); err != nil {
			return stats, err
		}
	}
	return stats, nil
}

func compactPartition(p partition, stats *CompactStats, log *slog.Logger) error {
	lock, err := os.OpenFile(filepath.Join(p.dir, lockName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("audit compact: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		log.Info("audit compact: partition busy, skipped", "dir", p.dir)
		return nil
	}
	// Listed again under the lock: another compaction may have finished meanwhile.
	if p, err = loadPartition(p.dir, p.hour); err != nil {
		return err
	}
	if err := hook("locked"); err != nil {
		return err
	}

	// Leftovers of a run that crashed: JSON files already in a Parquet file, and
	// Parquet files never renamed into place. Nobody else writes either (the lock).
	for _, j := range p.replaced {
		if err := os.Remove(j); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("audit compact: %w", err)
		}
	}
	if tmps, _ := filepath.Glob(filepath.Join(p.dir, "*"+parquetExt+tmpExt)); len(tmps) > 0 {
		for _, t := range tmps {
			if err := os.Remove(t); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("audit compact: %w", err)
			}
		}
	}

	// Take every JSON file no writer holds and no digest lists (Seal: read under the
	// lock, so a digest writer's barrier waits for this run). Their locks are kept
	// until the files are gone, which also keeps Follow-style readers consistent.
	seal := readSeal(filepath.Dir(filepath.Dir(p.dir)))
	var taken []string
	var recs []audit.Record
	for _, path := range p.json {
		if sealed(path, seal) {
			continue
		}
		fileRecs, release, ok, err := takeFile(path)
		if err != nil {
			return err
		}
		if !ok {
			stats.Skipped++
			continue
		}
		defer release()
		taken = append(taken, path)
		recs = append(recs, fileRecs...)
	}
	if len(taken) == 0 {
		return nil
	}
	if len(recs) == 0 {
		// Only empty files (a writer that died before its first record).
		return removeAll(p.dir, taken)
	}
	slices.SortFunc(recs, func(a, b audit.Record) int {
		return cmp.Or(strings.Compare(a.Timestamp, b.Timestamp), strings.Compare(a.EventID, b.EventID))
	})
	names := make([]string, len(taken))
	for i, t := range taken {
		names[i] = filepath.Base(t)
	}

	final := filepath.Join(p.dir, "compacted-"+audit.NewEventID()+parquetExt)
	tmp := final + tmpExt
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("audit compact: %w", err)
	}
	if err := writeParquet(f, recs, names); err != nil {
		f.Close()
		return fmt.Errorf("audit compact: write %s: %w", tmp, err)
	}
	if err := hook("written"); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("audit compact: fsync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("audit compact: %w", err)
	}
	if err := hook("synced"); err != nil {
		return err
	}
	// The commit point: from here on the Parquet file holds these records and
	// readers skip the JSON files it lists.
	if err := os.Rename(tmp, final); err != nil {
		return fmt.Errorf("audit compact: %w", err)
	}
	if err := hook("renamed"); err != nil {
		return err
	}
	if err := syncDir(p.dir); err != nil {
		return err
	}
	if err := removeAll(p.dir, taken); err != nil {
		return err
	}
	stats.Partitions++
	stats.Files += len(taken)
	stats.Records += len(recs)
	log.Info("audit compact: hour compacted", "dir", p.dir, "files", len(taken), "records", len(recs))
	return nil
}

// takeFile locks path and reads its records. ok is false (and nothing is held) when a
// writer still holds the file or a line in it is damaged.
func takeFile(path string) (recs []audit.Record, release func(), ok bool, err error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, false, nil
	}
	if err != nil {
		return nil, nil, false, fmt.Errorf("audit compact: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, nil, false, nil
	}
	damaged := false
	err = scanFile(path, 0, func(e Entry) error {
		if e.Err != nil {
			damaged = true
			slog.Warn("audit compact: damaged line, file left as JSON", "path", path, "offset", e.Offset, "err", e.Err.Err)
			return nil
		}
		recs = append(recs, e.Record)
		return nil
	})
	if err != nil || damaged {
		f.Close()
		return nil, nil, false, err
	}
	return recs, func() { f.Close() }, true, nil
}

func removeAll(dir string, paths []string) error {
	for i, p := range paths {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("audit compact: %w", err)
		}
		if i == 0 {
			if err := hook("removed-first"); err != nil {
				return err
			}
		}
	}
	return syncDir(dir)
}
