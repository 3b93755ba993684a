// Package file is the local audit sink and its readers.
//
// Records are JSON lines under <dir>/audit/dt=YYYY-MM-DD/hour=HH/, the layout Firehose
// gives the S3 bucket in production, so the same queries (and the same DuckDB view)
// run on both. The partition is taken from the record's own timestamp, as Firehose's
// dynamic partitioning does in production, so a late record is filed with its hour.
//
// Each process writes its own files (the name holds an id unique to the sink), so no
// two writers ever share a file, and a line cut short by a crash stays the last line of
// its file instead of being merged with the next record.
package file

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Subdir is the folder under the data directory that holds the partitions.
const Subdir = "audit"

const (
	jsonExt    = ".json"
	parquetExt = ".parquet"
	tmpExt     = ".tmp"  // a Parquet file being written by Compact
	openExt    = ".open" // a JSON file being created by a Sink
)

// partitionDir is <root>/dt=YYYY-MM-DD/hour=HH for the hour starting at h.
func partitionDir(root string, h time.Time) string {
	h = h.UTC()
	return filepath.Join(root, "dt="+h.Format(time.DateOnly), fmt.Sprintf("hour=%02d", h.Hour()))
}

// parsePartition reads the hour a partition folder stands for from its two path
// elements; ok is false for anything that is not a partition folder.
func parsePartition(dtName, hourName string) (time.Time, bool) {
	d, ok := strings.CutPrefix(dtName, "dt=")
	if !ok {
		return time.Time{}, false
	}
	h, ok := strings.CutPrefix(hourName, "hour=")
	if !ok || len(h) != 2 {
		return time.Time{}, false
	}
	t, err := time.Parse(time.DateOnly+"T15", d+"T"+h)
	if err != nil {
		return time.Time{}, false
	}
	return t, true
}

// partition is one hour folder and the files in it.
type partition struct {
	hour     time.Time
	dir      string
	json     []string // live JSON files: absolute paths, sorted
	replaced []string // JSON files a completed Parquet file already holds
	parquet  []string // completed Parquet files (never .tmp), sorted
}

// listPartitions returns every hour folder under root in time order. A missing root
// is an empty log, not an error: nothing has been audited yet.
func listPartitions(root string) ([]partition, error) {
	days, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("audit: list %s: %w", root, err)
	}
	var parts []partition
	for _, day := range days {
		if !day.IsDir() {
			continue
		}
		hours, err := os.ReadDir(filepath.Join(root, day.Name()))
		if err != nil {
			return nil, fmt.Errorf("audit: list %s: %w", day.Name(), err)
		}
		for _, hour := range hours {
			t, ok := parsePartition(day.Name(), hour.Name())
			if !hour.IsDir() || !ok {
				continue
			}
			p, err := loadPartition(filepath.Join(root, day.Name(), hour.Name()), t)
			if err != nil {
				return nil, err
			}
			parts = append(parts, p)
		}
	}
	slices.SortFunc(parts, func(a, b partition) int { return a.hour.Compare(b.hour) })
	return parts, nil
}

// Snapshot is the set of files that hold the audit log at one moment: each record
// is in exactly one of them.
type Snapshot struct {
	JSON    []string // JSON-lines files, absolute paths
	Parquet []string // compacted hours, absolute paths
}

// Live lists the files of the audit log under <dir>/audit for a reader such as the
// DuckDB view.
func Live(dir string) (Snapshot, error) {
	parts, err := listPartitions(filepath.Join(dir, Subdir))
	if err != nil {
		return Snapshot{}, err
	}
	var s Snapshot
	for _, p := range parts {
		s.JSON = append(s.JSON, p.json...)
		s.Parquet = append(s.Parquet, p.parquet...)
	}
	return s, nil
}

// loadPartition lists one hour folder.
func loadPartition(dir string, hour time.Time) (partition, error) {
	p := partition{hour: hour, dir: dir}
	files, err := os.ReadDir(dir)
	if err != nil {
		return p, fmt.Errorf("audit: list %s: %w", dir, err)
	}
	for _, f := range files {
		if !f.Type().IsRegular() {
			continue
		}
		switch filepath.Ext(f.Name()) {
		case jsonExt:
			p.json = append(p.json, filepath.Join(dir, f.Name()))
		case parquetExt:
			p.parquet = append(p.parquet, filepath.Join(dir, f.Name()))
		}
	}
	if err := p.applyManifests(); err != nil {
		return p, err
	}
	return p, nil
}

// applyManifests moves the JSON files that a completed Parquet file lists from json
// to replaced, so that no record is read twice.
func (p *partition) applyManifests() error {
	if len(p.parquet) == 0 {
		return nil
	}
	done := make(map[string]bool)
	for _, pq := range p.parquet {
		names, err := readManifest(pq)
		if err != nil {
			return err
		}
		for _, n := range names {
			done[n] = true
		}
	}
	live := p.json[:0:0]
	for _, j := range p.json {
		if done[filepath.Base(j)] {
			p.replaced = append(p.replaced, j)
		} else {
			live = append(live, j)
		}
	}
	p.json = live
	return nil
}
