package file

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/parquet-go/parquet-go"
)

// Summary describes the records of one audit object, for a digest.
type Summary struct {
	Records int64  // records that decode
	Damaged int64  // lines that do not (JSON only)
	First   string // smallest record timestamp, "" when there is no record
	Last    string // largest record timestamp
}

// Summarize reads one audit object: JSON lines when name ends in .json, Parquet
// otherwise (Firehose's objects in S3 carry no extension). It is the one decoder both
// the digest writer and the verifier use, locally and for S3.
func Summarize(name string, data []byte) (Summary, error) {
	var s Summary
	note := func(ts string) {
		s.Records++
		if s.First == "" || ts < s.First {
			s.First = ts
		}
		if ts > s.Last {
			s.Last = ts
		}
	}
	if strings.HasSuffix(name, jsonExt) {
		lr := newLineReader(bytes.NewReader(data), 0)
		for {
			off, line, lerr, err := lr.next(false)
			if errors.Is(err, io.EOF) {
				return s, nil
			}
			if err != nil {
				return s, fmt.Errorf("audit: read %s: %w", name, err)
			}
			e := entryOf(name, off, line, lerr)
			if e.Err != nil {
				s.Damaged++
				continue
			}
			note(e.Record.Timestamp)
		}
	}
	if _, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data))); err != nil {
		return s, fmt.Errorf("audit: %s is not Parquet: %w", name, err)
	}
	r := parquet.NewGenericReader[parquetRow](bytes.NewReader(data))
	defer r.Close()
	buf := make([]parquetRow, 256)
	for {
		n, err := r.Read(buf)
		for _, pr := range buf[:n] {
			note(pr.Timestamp)
		}
		if errors.Is(err, io.EOF) {
			return s, nil
		}
		if err != nil {
			return s, fmt.Errorf("audit: read %s: %w", name, err)
		}
	}
}

// sealName is the file under <dir>/audit that holds the seal time (RFC 3339).
const sealName = ".digest-seal"

// Seal tells compaction that every JSON file last written before t is in a digest
// now, so it must stay as it is: compacting it would remove an object the digest
// lists. It returns once no compaction that read an older seal is still running (it
// takes and releases each partition's compaction lock), so the caller may list the
// partitions next and rely on the listing.
func Seal(dir string, t time.Time) error {
	root := filepath.Join(dir, Subdir)
	if err := os.MkdirAll(root, 0o700); err != nil {
		return fmt.Errorf("audit seal: %w", err)
	}
	tmp := filepath.Join(root, sealName+tmpExt)
	if err := os.WriteFile(tmp, []byte(t.UTC().Format(time.RFC3339Nano)), 0o600); err != nil {
		return fmt.Errorf("audit seal: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(root, sealName)); err != nil {
		return fmt.Errorf("audit seal: %w", err)
	}
	parts, err := listPartitions(root)
	if err != nil {
		return err
	}
	for _, p := range parts {
		lock, err := os.OpenFile(filepath.Join(p.dir, lockName), os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return fmt.Errorf("audit seal: %w", err)
		}
		err = syscall.Flock(int(lock.Fd()), syscall.LOCK_EX)
		lock.Close() // closing releases the lock
		if err != nil {
			return fmt.Errorf("audit seal: lock %s: %w", p.dir, err)
		}
	}
	return nil
}

// readSeal returns the seal time, or the zero time when nothing is sealed.
func readSeal(root string) time.Time {
	b, err := os.ReadFile(filepath.Join(root, sealName))
	if err != nil {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(string(b)))
	if err != nil {
		return time.Time{}
	}
	return t
}

// sealed reports whether a JSON file is covered by a digest (last written before
// the seal).
func sealed(path string, seal time.Time) bool {
	if seal.IsZero() {
		return false
	}
	fi, err := os.Stat(path)
	return err == nil && fi.ModTime().Before(seal)
}
