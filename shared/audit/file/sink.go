package file

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/audit"
)

// ErrClosed is returned by Write after Close.
var ErrClosed = errors.New("audit file sink: closed")

// Sink appends records to hourly JSON-lines files. It implements audit.Sink and is
// safe for concurrent use.
type Sink struct {
	root       string
	id         string
	now        func() time.Time
	closeAfter time.Duration
	fsync      bool
	log        *slog.Logger

	mu     sync.Mutex
	files  map[time.Time]*hourFile // by the start of the hour they hold
	seq    int
	closed bool
}

type hourFile struct {
	f         *os.File
	path      string
	lastWrite time.Time // by the sink's clock
}

// Option configures a Sink.
type Option func(*Sink)

// WithClock sets the clock that decides when an hour's file is closed. Partitions
// always come from the records' own timestamps, never from this clock.
func WithClock(now func() time.Time) Option { return func(s *Sink) { s.now = now } }

// WithCloseAfter sets how long a file stays open after its hour has ended and it was
// last written, for records that complete late (calls in flight across the hour
// change finish in any order). Default one minute.
func WithCloseAfter(d time.Duration) Option { return func(s *Sink) { s.closeAfter = d } }

// WithFsync makes every Write call fsync(2) before it returns.
//
// It is off by default: the promise the server makes is that a record it answered for
// survives the process being killed, and write(2) already gives that (the bytes are in
// the kernel's page cache, which outlives the process). fsync adds survival of a power
// loss or kernel crash, at the cost of a disk flush (milliseconds) on every tool call;
// a production deployment gets that durability from Kinesis instead.
func WithFsync() Option { return func(s *Sink) { s.fsync = true } }

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(s *Sink) { s.log = l } }

// New returns a sink writing under <dir>/audit. The folder is created (0700: records
// name users and tokens) if it does not exist.
func New(dir string, opts ...Option) (*Sink, error) {
	s := &Sink{
		root:       filepath.Join(dir, Subdir),
		id:         audit.NewEventID(),
		now:        time.Now,
		closeAfter: time.Minute,
		log:        slog.Default(),
		files:      make(map[time.Time]*hourFile),
	}
	for _, o := range opts {
		o(s)
	}
	if err := os.MkdirAll(s.root, 0o700); err != nil {
		return nil, fmt.Errorf("audit file sink: %w", err)
	}
	return s, nil
}

// Write appends r as one line to the file of r's hour. It returns once the line has
// been handed to the kernel with a single write(2) (and fsynced, with WithFsync).
func (s *Sink) Write(_ context.Context, r audit.Record) error {
	if err := r.Validate(); err != nil {
		return apperr.Internal(err)
	}
	line, err := audit.MarshalLine(r)
	if err != nil {
		return apperr.Internal(err)
	}
	hour, err := r.Hour()
	if err != nil {
		return apperr.Internal(err)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return apperr.Internal(ErrClosed)
	}
	// Retire idle files of past hours before looking up this one. A record for a
	// retired hour gets a new file: the old one may be compacted away by now.
	now := s.now()
	s.closeExpired(now)
	hf := s.files[hour]
	if hf == nil {
		if hf, err = s.open(hour); err != nil {
			return apperr.Internal(err)
		}
		s.files[hour] = hf
	}
	// The mutex makes this the only writer of the file, and one Write of the whole
	// line is one write(2) on a regular file, so lines never interleave and nothing
	// waits in a user-space buffer when the process dies.
	if _, err := hf.f.Write(line); err != nil {
		// A failed or short write may have left a partial line. Never append after
		// it: drop the file, and the next record starts a new one.
		s.retire(hour, hf)
		return apperr.Internal(fmt.Errorf("audit file sink: write %s: %w", hf.path, err))
	}
	if s.fsync {
		if err := hf.f.Sync(); err != nil {
			s.retire(hour, hf)
			return apperr.Internal(fmt.Errorf("audit file sink: fsync %s: %w", hf.path, err))
		}
	}
	hf.lastWrite = now
	return nil
}

// Close closes every open file. Write fails afterwards.
func (s *Sink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var errs []error
	for h, hf := range s.files {
		errs = append(errs, hf.f.Close())
		delete(s.files, h)
	}
	return errors.Join(errs...)
}

// open creates a new file for hour. The name is unique to this sink, and O_EXCL
// guarantees the file is new, so it can never continue another writer's torn line.
//
// The file is flock'ed for as long as it is open: compaction skips locked files, and
// the kernel drops the lock if the process dies. It is created under a name readers
// ignore (".open") and renamed to .json only once locked, so compaction can never
// take (and delete) a file between its creation and its lock.
func (s *Sink) open(hour time.Time) (*hourFile, error) {
	dir := partitionDir(s.root, hour)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("audit file sink: %w", err)
	}
	for {
		s.seq++
		path := filepath.Join(dir, fmt.Sprintf("aacmcp-%s-%04d%s", s.id, s.seq, jsonExt))
		if _, err := os.Lstat(path); err == nil {
			continue
		}
		pending := path + openExt
		f, err := os.OpenFile(pending, os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("audit file sink: %w", err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			_ = f.Close()
			_ = os.Remove(pending)
			return nil, fmt.Errorf("audit file sink: lock %s: %w", pending, err)
		}
		if err := os.Rename(pending, path); err != nil {
			_ = f.Close()
			_ = os.Remove(pending)
			return nil, fmt.Errorf("audit file sink: %w", err)
		}
		if s.fsync {
			// The new directory entry must survive a power loss too.
			if err := syncDir(dir); err != nil {
				_ = f.Close()
				return nil, err
			}
		}
		s.log.Debug("audit file opened", "path", path)
		return &hourFile{f: f, path: path}, nil
	}
}

// closeExpired closes the files of hours that ended, and were last written, more
// than closeAfter ago. A file written late (records replayed after an outage) stays
// open while records keep coming, instead of one file per record.
func (s *Sink) closeExpired(now time.Time) {
	for h, hf := range s.files {
		idleSince := h.Add(time.Hour)
		if hf.lastWrite.After(idleSince) {
			idleSince = hf.lastWrite
		}
		if !now.Before(idleSince.Add(s.closeAfter)) {
			s.retire(h, hf)
		}
	}
}

func (s *Sink) retire(hour time.Time, hf *hourFile) {
	delete(s.files, hour)
	if err := hf.f.Close(); err != nil {
		s.log.Warn("audit file close failed", "path", hf.path, "err", err)
	}
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("audit: open %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("audit: fsync %s: %w", dir, err)
	}
	return nil
}
