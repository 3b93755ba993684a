package file

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// Summary describes the records of one audit object, for a digest.
type Summary struct {
	Records int64  // records that decode
	Damaged int64  // lines that do not (JSON only)
	First   string // smallest record timestamp, "" when there is no record
	Last    string // largest record timestamp
}

// Summarize says what one audit object holds, for its digest: JSON lines when name
// ends in .json, Parquet otherwise (Firehose's objects in S3 carry no extension).
func Summarize(name string, data []byte) (Summary, error) {
	return SummarizeReader(name, bytes.NewReader(data))
}

// MaxParquetTail is how much of a Parquet object's end SummarizeReader keeps: the
// footer and its length must fit. A footer is a few KB per row group; one larger than
// this is reported as an error, and the object is still listed by its hash.
const MaxParquetTail = 4 << 20

// SummarizeReader is Summarize over a stream, read once to its end and never held
// whole: a JSON object line by line, a Parquet one keeping only its first bytes and
// its last MaxParquetTail (the magic and the footer). Firehose objects reach 128 MiB,
// and the digest writer hashes the same bytes as they pass (io.TeeReader). It reads r
// to EOF even when the content does not decode, so a hash taken on the way is whole.
func SummarizeReader(name string, r io.Reader) (Summary, error) {
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
		lr := newLineReader(r, 0)
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
	var ends headTail
	n, err := io.Copy(&ends, r)
	if err != nil {
		return s, fmt.Errorf("audit: read %s: %w", name, err)
	}
	return s, summarizeParquet(name, &ends, n, &s)
}

// headTail keeps the first bytes written to it and the last MaxParquetTail: an
// appended slice while the object is smaller, then a ring of that size allocated once.
type headTail struct {
	head [4]byte
	nh   int
	tail []byte
	ring bool // tail is a ring; pos is where the next byte goes (and the oldest is)
	pos  int
}

func (h *headTail) Write(p []byte) (int, error) {
	n := len(p)
	h.nh += copy(h.head[h.nh:], p)
	if !h.ring {
		if len(h.tail)+len(p) <= MaxParquetTail {
			h.tail = append(h.tail, p...)
			return n, nil
		}
		r := make([]byte, MaxParquetTail)
		h.pos = copy(r, h.tail) % MaxParquetTail
		h.tail, h.ring = r, true
	}
	if len(p) > MaxParquetTail {
		p = p[len(p)-MaxParquetTail:]
	}
	for len(p) > 0 {
		c := copy(h.tail[h.pos:], p)
		p = p[c:]
		h.pos = (h.pos + c) % MaxParquetTail
	}
	return n, nil
}

// trimmed is the kept tail in order.
func (h *headTail) trimmed() []byte {
	if !h.ring {
		return h.tail
	}
	return append(h.tail[h.pos:len(h.tail):len(h.tail)], h.tail[:h.pos]...)
}

// endsReaderAt serves reads of an object of size n from its kept head and tail; a
// read of the middle is an error (parquet-go reads only the magic and the footer when
// it opens a file).
type endsReaderAt struct {
	head, tail []byte
	n          int64
}

func (e endsReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("audit: negative offset")
	}
	if end := off + int64(len(p)); end <= int64(len(e.head)) {
		return copy(p, e.head[off:end]), nil
	}
	start := e.n - int64(len(e.tail))
	if off < start {
		return 0, fmt.Errorf("audit: read at %d, outside the Parquet footer", off)
	}
	k := copy(p, e.tail[off-start:])
	if k < len(p) {
		return k, io.EOF
	}
	return k, nil
}

// summarizeParquet reads a Parquet object's row count and timestamp range from its
// footer alone: the row groups' counts and the timestamp column's min/max statistics
// (compaction's parquet-go writes them; Firehose's Hive serializer is expected to,
// unverified here; without them First and Last stay ""). No page is decoded. A bucket object is outside input, and parquet-go
// trusts the lengths it reads (it panics on some, allocates others as stated), so
// the footer's encoding is checked first and a panic is turned into an error.
func summarizeParquet(name string, ends *headTail, size int64, s *Summary) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("audit: %s: damaged Parquet: %v", name, r)
		}
	}()
	data := ends.trimmed()
	n := len(data)
	if size < 12 || string(ends.head[:ends.nh]) != "PAR1" || string(data[n-4:]) != "PAR1" {
		return fmt.Errorf("audit: %s is not Parquet", name)
	}
	footer := int(binary.LittleEndian.Uint32(data[n-8 : n-4]))
	if int64(footer) > size-12 {
		return fmt.Errorf("audit: %s: Parquet footer longer than the file", name)
	}
	if footer > n-8 {
		return fmt.Errorf("audit: %s: Parquet footer over %d bytes", name, MaxParquetTail)
	}
	if err := checkFooter(data[n-8-footer : n-8]); err != nil {
		return fmt.Errorf("audit: %s: %w", name, err)
	}
	pf, err := parquet.OpenFile(endsReaderAt{head: ends.head[:ends.nh], tail: data, n: size}, size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return fmt.Errorf("audit: %s is not Parquet: %w", name, err)
	}
	s.Records = pf.NumRows()
	col, ok := pf.Schema().Lookup("timestamp")
	if !ok {
		return nil
	}
	for _, rg := range pf.Metadata().RowGroups {
		if col.ColumnIndex >= len(rg.Columns) {
			continue
		}
		st := rg.Columns[col.ColumnIndex].MetaData.Statistics
		lo, hi := string(st.MinValue), string(st.MaxValue)
		if lo == "" && hi == "" {
			lo, hi = string(st.Min), string(st.Max) // the deprecated fields older writers fill
		}
		if lo != "" && (s.First == "" || lo < s.First) {
			s.First = lo
		}
		if hi > s.Last {
			s.Last = hi
		}
	}
	return nil
}

// checkFooter refuses a footer parquet-go would trust into a huge allocation: one
// whose Thrift claims more than it holds, or whose schema tree claims more children
// than it lists (parquet-go builds the tree from the claims).
func checkFooter(footer []byte) error {
	if err := checkCompactStruct(footer); err != nil {
		return err
	}
	var md format.FileMetaData
	if err := thrift.Unmarshal(&thrift.CompactProtocol{}, footer, &md); err != nil {
		return fmt.Errorf("%w: %v", errFooter, err)
	}
	next := 0
	var node func(depth int) bool
	node = func(depth int) bool {
		if next >= len(md.Schema) || depth > maxThriftDepth {
			return false
		}
		k := md.Schema[next].NumChildren.V
		next++
		if k < 0 || int(k) > len(md.Schema)-next {
			return false
		}
		for range k {
			if !node(depth + 1) {
				return false
			}
		}
		return true
	}
	if !node(0) || next != len(md.Schema) {
		return fmt.Errorf("%w: schema tree", errFooter)
	}
	return nil
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
