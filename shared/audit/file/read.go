package file

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/aacworkflow/aacmcp/shared/audit"
)

// MaxLineBytes bounds one line. Records are under 1 KB; anything far longer is damage,
// and is reported without being held in memory.
const MaxLineBytes = 1 << 20

// ErrTornLine marks the last line of a file that has no newline: a record cut short
// by a crash in the middle of a write. Its bytes are reported, never joined with the
// line that follows (no writer appends to such a file again).
var ErrTornLine = errors.New("audit: torn last line (no newline)")

// ErrLineTooLong marks a line longer than MaxLineBytes.
var ErrLineTooLong = errors.New("audit: line too long")

// LineError is a line that is not a record.
type LineError struct {
	Path   string
	Offset int64 // of the line's first byte
	Err    error // ErrTornLine, ErrLineTooLong, or why decoding failed
}

func (e *LineError) Error() string {
	return fmt.Sprintf("%s at byte %d: %v", e.Path, e.Offset, e.Err)
}

func (e *LineError) Unwrap() error { return e.Err }

// Entry is one line of an audit file: a Record, or Err when the line is not one.
type Entry struct {
	Path   string
	Offset int64
	Record audit.Record
	Err    *LineError
}

// Scan calls fn for every record under <dir>/audit, partition by partition in time
// order: compacted Parquet files first, then the JSON files (in name order) that no
// Parquet file has replaced, so each record is seen once. Damaged lines are passed
// to fn as entries with Err set; Scan stops at the first error fn returns and
// returns it.
func Scan(dir string, fn func(Entry) error) error {
	return scanSince(dir, time.Time{}, fn)
}

// scanSince is Scan over the partitions of the hours at or after first only.
func scanSince(dir string, first time.Time, fn func(Entry) error) error {
	parts, err := listPartitions(filepath.Join(dir, Subdir))
	if err != nil {
		return err
	}
	for _, p := range parts {
		if p.hour.Before(first) {
			continue
		}
		entries, err := readPartition(p)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if err := fn(e); err != nil {
				return err
			}
		}
	}
	return nil
}

// readPartition reads one hour. A compaction that runs meanwhile replaces JSON files
// by a Parquet file; when a listed file has vanished, the hour is listed and read
// again, so that its records are delivered once, from one consistent listing.
func readPartition(p partition) ([]Entry, error) {
	const attempts = 5
	for i := 1; ; i++ {
		var entries []Entry
		collect := func(e Entry) error { entries = append(entries, e); return nil }
		err := func() error {
			for _, path := range p.parquet {
				if err := scanParquet(path, collect); err != nil {
					return err
				}
			}
			for _, path := range p.json {
				if err := scanFile(path, 0, collect); err != nil {
					return err
				}
			}
			return nil
		}()
		if err == nil {
			return entries, nil
		}
		if !errors.Is(err, fs.ErrNotExist) || i == attempts {
			return nil, err
		}
		if p, err = loadPartition(p.dir, p.hour); err != nil {
			return nil, err
		}
	}
}

// ReadAll returns every record under <dir>/audit and, separately, every damaged line.
func ReadAll(dir string) ([]audit.Record, []*LineError, error) {
	var recs []audit.Record
	var bad []*LineError
	err := Scan(dir, func(e Entry) error {
		if e.Err != nil {
			bad = append(bad, e.Err)
		} else {
			recs = append(recs, e.Record)
		}
		return nil
	})
	return recs, bad, err
}

// scanFile reads path from byte offset from to its end.
func scanFile(path string, from int64, fn func(Entry) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	defer f.Close()
	if from > 0 {
		if _, err := f.Seek(from, io.SeekStart); err != nil {
			return fmt.Errorf("audit: %w", err)
		}
	}
	lr := newLineReader(f, from)
	for {
		off, line, lerr, err := lr.next(false)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("audit: read %s: %w", path, err)
		}
		if err := fn(entryOf(path, off, line, lerr)); err != nil {
			return err
		}
	}
}

func entryOf(path string, off int64, line []byte, lerr error) Entry {
	e := Entry{Path: path, Offset: off}
	if lerr == nil {
		var err error
		if e.Record, err = audit.UnmarshalLine(line); err != nil {
			lerr = err
		}
	}
	if lerr != nil {
		e.Err = &LineError{Path: path, Offset: off, Err: lerr}
	}
	return e
}

// lineReader splits a file into lines of at most MaxLineBytes without holding a
// longer one in memory.
type lineReader struct {
	br  *bufio.Reader
	off int64 // offset of the next unread byte
}

func newLineReader(r io.Reader, off int64) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, 64<<10), off: off}
}

// next returns the next line (without its newline) and its offset. lineErr is set for
// a line that is too long, or for a final line without a newline. With waitTail, a
// final line without a newline is not consumed: next returns io.EOF and leaves it for
// a later call, because a live writer may still be completing it (Follow).
func (lr *lineReader) next(waitTail bool) (off int64, line []byte, lineErr error, err error) {
	off = lr.off
	var buf []byte
	tooLong := false
	for {
		chunk, err := lr.br.ReadSlice('\n')
		switch {
		case err == nil:
			lr.off += int64(len(chunk))
			if tooLong || len(buf)+len(chunk)-1 > MaxLineBytes {
				return off, nil, ErrLineTooLong, nil
			}
			buf = append(buf, chunk[:len(chunk)-1]...)
			return off, buf, nil, nil
		case errors.Is(err, bufio.ErrBufferFull):
			lr.off += int64(len(chunk))
			if !tooLong && len(buf)+len(chunk) > MaxLineBytes {
				tooLong, buf = true, nil
			}
			if !tooLong {
				buf = append(buf, chunk...)
			}
		case errors.Is(err, io.EOF):
			if len(chunk) == 0 && len(buf) == 0 && !tooLong && lr.off == off {
				return off, nil, nil, io.EOF
			}
			if waitTail {
				// Rewind to the start of the unfinished line for the next poll.
				lr.off = off
				return off, nil, nil, io.EOF
			}
			lr.off += int64(len(chunk))
			if tooLong || len(buf)+len(chunk) > MaxLineBytes {
				return off, nil, ErrLineTooLong, nil
			}
			return off, append(buf, chunk...), ErrTornLine, nil
		default:
			return off, nil, nil, err
		}
	}
}
