package file

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/internal/cpuslot"
)

// ErrClosed is returned by Write after Close.
var ErrClosed = errors.New("audit file sink: closed")

// Sink appends records to hourly JSON-lines files. It implements audit.Sink and is
// safe for concurrent use.
//
// Concurrent writes are grouped like a database group commit: a Write that finds no
// write under way leads. It takes every line queued by then, hands each hour's lines
// to the kernel with one write(2) (and one fsync with WithFsync), answers every caller
// of the group, and passes the lead to the first Write queued meanwhile. Under load a
// record costs a share of one system call instead of one of its own, and no caller
// waits for more than the group in front of it and its own.
type Sink struct {
	root       string
	id         string
	now        func() time.Time
	closeAfter time.Duration
	fsync      bool
	log        *slog.Logger
	// writeFile is (*os.File).Write; tests replace it to inject failures.
	writeFile func(f *os.File, b []byte) (int, error)

	mu      sync.Mutex
	queue   []*request // lines waiting for the next group, in arrival order
	writing bool       // a leader owns the files: it is writing a group
	idle    sync.Cond  // on mu; signalled when writing turns false
	closed  bool

	// Used only by the leader (writing == true). files and seq change only with mu
	// held as well, so Close (which waits for writing to turn false) and tests may
	// read them under mu; the rest is the leader's scratch space, kept to save
	// allocations.
	files map[time.Time]*hourFile // by the start of the hour they hold
	seq   int
	spare []*request  // the queue slice of the last group, reused
	hours []hourGroup // the group being written, by hour
	buf   []byte      // the lines of one hour of the group being written
}

type hourFile struct {
	f         *os.File
	path      string
	lastWrite time.Time // by the sink's clock
}

// request is one Write waiting for its line to reach the file.
type request struct {
	hour time.Time
	line []byte
	// done receives exactly one answer. Buffered, so the leader never blocks on a
	// caller.
	done chan answer
}

// requests recycles requests with their line buffers and channels, which would
// otherwise cost about a kilobyte and three allocations per record.
var requests = sync.Pool{New: func() any { return &request{done: make(chan answer, 1)} }}

// maxKeptLine bounds the line buffer a pooled request keeps.
const maxKeptLine = 16 << 10

func newRequest(hour time.Time, r audit.Record) *request {
	req := requests.Get().(*request)
	req.hour, req.line = hour, audit.AppendLine(req.line[:0], r)
	return req
}

// free returns req to the pool. Only its Write may call it, after receiving its
// answer: the leader's last use of a request is sending that answer, and the channel
// is empty again once it is received.
func (req *request) free() {
	if cap(req.line) > maxKeptLine {
		req.line = nil
	}
	requests.Put(req)
}

// answer tells a queued Write either how its group went or that it leads next.
type answer struct {
	err  error
	lead bool
}

// hourGroup is the part of a group bound for one hour's file.
type hourGroup struct {
	hour time.Time
	hf   *hourFile
	reqs []*request
	err  error
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

// WithFsync makes every Write call fsync(2) before it returns (one fsync covers every
// record of a group).
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
		writeFile:  (*os.File).Write,
	}
	s.idle.L = &s.mu
	for _, o := range opts {
		o(s)
	}
	if err := os.MkdirAll(s.root, 0o700); err != nil {
		return nil, fmt.Errorf("audit file sink: %w", err)
	}
	return s, nil
}

// Write appends r as one line to the file of r's hour. It returns once the line has
// been handed to the kernel (and fsynced, with WithFsync), whole and after every line
// queued before it for the same file; or with an error if the write(2) or fsync that
// carried it failed, in which case the line may or may not be in the file.
//
// ctx's cancellation is not consulted: once queued, the line may be written at any
// moment, and a caller told "not written" while it was would be misled.
func (s *Sink) Write(ctx context.Context, r audit.Record) error {
	if err := r.Validate(); err != nil {
		return apperr.Internal(err)
	}
	hour, err := r.Hour()
	if err != nil {
		return apperr.Internal(err)
	}
	req := newRequest(hour, r)
	defer req.free()
	// Waiting for the group's write(2) needs no core: the caller's CPU slot (which
	// ctx carries) can serve another call meanwhile.
	defer cpuslot.Park(ctx)()

	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return apperr.Internal(ErrClosed)
	}
	s.queue = append(s.queue, req)
	if s.writing {
		s.mu.Unlock()
		a := <-req.done
		if !a.lead {
			return a.err
		}
		s.mu.Lock()
	}
	// This call leads: it is the first of the queue, and the lines queued up to now
	// form its group.
	s.writing = true
	group := s.queue
	s.queue = s.spare[:0]
	s.commit(group)
	// Hand the lead to the first Write that queued during the group, or stand down.
	if len(s.queue) > 0 {
		s.queue[0].done <- answer{lead: true}
	} else {
		s.writing = false
		s.idle.Broadcast()
	}
	clear(group)
	s.spare = group[:0]
	s.mu.Unlock()
	return (<-req.done).err
}

// commit writes group, in queue order, and answers every request in it. It is called
// by the leader with mu held and returns with mu held; mu is released around the
// system calls so that other Writes can queue meanwhile.
func (s *Sink) commit(group []*request) {
	// Retire idle files of past hours before looking up the group's. A record for a
	// retired hour gets a new file: the old one may be compacted away by now.
	now := s.now()
	s.closeExpired(now)
	// Almost always one hour; two around the hour change, while late records of
	// the ended hour come in.
	hours := s.hours[:0]
	for _, req := range group {
		i := slices.IndexFunc(hours, func(g hourGroup) bool { return g.hour.Equal(req.hour) })
		if i < 0 {
			i = len(hours)
			if i < cap(hours) {
				hours = hours[:i+1] // keeps the reqs slice of an earlier group
			} else {
				hours = append(hours, hourGroup{})
			}
			hours[i].hour = req.hour
		}
		hours[i].reqs = append(hours[i].reqs, req)
	}
	for i := range hours {
		g := &hours[i]
		if g.hf = s.files[g.hour]; g.hf == nil {
			if g.hf, g.err = s.open(g.hour); g.err == nil {
				s.files[g.hour] = g.hf
			}
		}
	}

	s.mu.Unlock()
	for i := range hours {
		if g := &hours[i]; g.err == nil {
			g.err = s.writeGroup(g)
		}
	}
	s.mu.Lock()

	for i := range hours {
		g := &hours[i]
		switch {
		case g.err == nil:
			g.hf.lastWrite = now
		case g.hf != nil:
			// A failed or short write may have left a partial line. Never append
			// after it: drop the file, and the next record starts a new one.
			s.retire(g.hour, g.hf)
		}
		for _, req := range g.reqs {
			var err error
			if g.err != nil {
				// One value per caller: callers may wrap or annotate what they get.
				err = apperr.Internal(g.err)
			}
			req.done <- answer{err: err}
		}
		clear(g.reqs)
		*g = hourGroup{reqs: g.reqs[:0]}
	}
	s.hours = hours
	if cap(s.buf) > maxKeptBuffer {
		s.buf = nil
	}
}

// maxKeptBuffer bounds the group buffer kept between groups: a burst of thousands of
// concurrent calls should not pin its memory for the life of the process.
const maxKeptBuffer = 1 << 20

// writeGroup hands one hour's lines to the kernel with one write(2), and fsyncs them
// with WithFsync. Only the leader calls it, so it is the only writer of the file and
// lines can neither interleave nor tear one another; and nothing waits in a user-space
// buffer when the process dies, because the caller is answered only after write(2).
func (s *Sink) writeGroup(g *hourGroup) error {
	b := g.reqs[0].line
	if len(g.reqs) > 1 {
		s.buf = s.buf[:0]
		for _, req := range g.reqs {
			s.buf = append(s.buf, req.line...)
		}
		b = s.buf
	}
	if _, err := s.writeFile(g.hf.f, b); err != nil {
		return fmt.Errorf("audit file sink: write %s: %w", g.hf.path, err)
	}
	if s.fsync {
		if err := g.hf.f.Sync(); err != nil {
			return fmt.Errorf("audit file sink: fsync %s: %w", g.hf.path, err)
		}
	}
	return nil
}

// Close closes every open file, after the group under way and every Write queued
// before it. Write fails afterwards.
func (s *Sink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	for s.writing {
		s.idle.Wait()
	}
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

// CloseIdle closes the files of ended hours that are past their grace (WithCloseAfter)
// now, without waiting for the next Write to do it: the digest writer takes only
// closed files, and an idle server would otherwise hold the last hour's file open.
func (s *Sink) CloseIdle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.writing {
		s.idle.Wait()
	}
	if !s.closed {
		s.closeExpired(s.now())
	}
}
