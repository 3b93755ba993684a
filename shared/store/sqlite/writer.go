package sqlite

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/aacworkflow/aacmcp/shared/internal/cpuslot"
)

// Group commit. SQLite admits one writer at a time, so every write transaction is
// queued to one goroutine that owns the write connection. It takes all the
// transactions waiting at that moment (up to maxBatch) into one BEGIN IMMEDIATE ...
// COMMIT, each inside its own savepoint: a transaction whose function fails undoes
// only its own writes, and the others commit together. Every caller is answered
// after the COMMIT, so an answer still means "durable" (WAL, synchronous=NORMAL).
//
// Why not a lock that each caller takes in turn, as before: under load (make soak,
// 200 clients, two thirds of the calls write) the lock was handed to a goroutine
// that then waited to be scheduled, and it stayed owned and idle for 37% of the
// writer's time; one commit per transaction also wrote the same pages to the WAL
// again and again. docs/decisions.md ("SQLite: group commit") has the measurement.
//
// A transaction's statements run with its caller's context values but never its
// cancellation: SQLite answers an interrupted INSERT, UPDATE or DELETE inside an
// explicit transaction by rolling the whole transaction back, which would undo the
// batch's other transactions too. A caller whose context ends while its transaction
// is still queued gets the context's error and the transaction never runs; once it
// has started, the caller waits for its outcome (a few hundred microseconds).
type writer struct {
	jobs     chan *job
	quit     chan struct{} // closed by stopWriter
	done     chan struct{} // closed when the loop has ended
	stopOnce sync.Once
	err      error // closing the connection; written before done is closed
}

// job is one write transaction queued to the writer.
type job struct {
	ctx   context.Context
	fn    func(q) error
	state atomic.Int32
	done  chan error // capacity 1: the writer never waits for the caller
}

const (
	jobQueued int32 = iota
	jobRunning
	jobAbandoned
)

// maxBatch bounds one group commit, so that the first transaction of a batch
// waits for at most maxBatch-1 others before its COMMIT.
const maxBatch = 64

var errClosed = errors.New("sqlite: store is closed")

func (s *Store) startWriter() {
	s.w.jobs = make(chan *job, 4*maxBatch)
	s.w.quit = make(chan struct{})
	s.w.done = make(chan struct{})
	go s.writeLoop()
}

// stopWriter runs what is already queued, closes the write connection and ends the
// loop. first is false for every call after the first (which does the work).
func (s *Store) stopWriter() (first bool, err error) {
	s.w.stopOnce.Do(func() {
		first = true
		close(s.w.quit)
		<-s.w.done
	})
	return first, s.w.err
}

// tx runs fn in a write transaction and returns once it is committed or undone.
func (s *Store) tx(ctx context.Context, fn func(q) error) error {
	if err := ctx.Err(); err != nil {
		return s.fail(err)
	}
	j := &job{ctx: ctx, fn: fn, done: make(chan error, 1)}
	// The wait is the writer's, not this goroutine's: its CPU slot can serve a
	// call that runs meanwhile.
	defer cpuslot.Park(ctx)()
	select {
	case s.w.jobs <- j:
	case <-ctx.Done():
		return s.fail(ctx.Err())
	case <-s.w.quit:
		return errClosed
	}
	select {
	case err := <-j.done:
		return err
	case <-ctx.Done():
		if j.state.CompareAndSwap(jobQueued, jobAbandoned) {
			return s.fail(ctx.Err())
		}
		return <-j.done
	case <-s.w.done:
		// The loop answers every job it takes before it ends; one sent after its
		// last look at the queue never runs.
		select {
		case err := <-j.done:
			return err
		default:
			return errClosed
		}
	}
}

func (s *Store) writeLoop() {
	defer close(s.w.done)
	batch := make([]*job, 0, maxBatch)
	for {
		select {
		case j := <-s.w.jobs:
			batch = append(batch[:0], j)
		case <-s.w.quit:
			for s.drain(&batch) {
				s.runBatch(batch)
			}
			s.w.err = s.closeConn()
			return
		}
		// Let the goroutines runnable now run before the batch is closed: under
		// aacmcp serve's CPU slots (shared/internal/cpuslot) they are the few calls
		// running, about to queue their own writes, and they join this commit
		// instead of waiting for the next. In make soak that made group commits
		// five times larger and cost about 6% less CPU per call (docs/decisions.md,
		// "Oldest call first in serve"). With no other goroutine runnable it returns at once.
		runtime.Gosched()
		s.fill(&batch)
		s.runBatch(batch)
		clear(batch)
	}
}

// fill adds to *batch the jobs queued now, without waiting for more.
func (s *Store) fill(batch *[]*job) {
	for len(*batch) < maxBatch {
		select {
		case j := <-s.w.jobs:
			*batch = append(*batch, j)
		default:
			return
		}
	}
}

// drain replaces *batch with the jobs still queued and reports whether there were any.
func (s *Store) drain(batch *[]*job) bool {
	*batch = (*batch)[:0]
	s.fill(batch)
	return len(*batch) > 0
}

// runBatch runs the jobs in one transaction and answers each of them.
func (s *Store) runBatch(batch []*job) {
	ctx := context.Background() // the batch's own statements serve every caller
	results := make([]error, len(batch))
	started := make([]bool, len(batch))
	answer := func() {
		for i, j := range batch {
			if started[i] {
				j.done <- results[i]
			}
		}
	}
	if err := s.begin(ctx); err != nil {
		for i, j := range batch {
			if started[i] = j.state.CompareAndSwap(jobQueued, jobRunning); started[i] {
				results[i] = s.fail(err)
			}
		}
		answer()
		return
	}
	ran := false
	for i, j := range batch {
		if started[i] = j.state.CompareAndSwap(jobQueued, jobRunning); !started[i] {
			continue
		}
		lost, err := s.runJob(j)
		results[i] = err
		if !lost {
			ran = ran || err == nil
			continue
		}
		// SQLite ended the transaction itself (an I/O error, a full disk): the
		// writes of every job before this one are gone with it.
		s.rollback(ctx)
		for k := 0; k < i; k++ {
			if started[k] && results[k] == nil {
				results[k] = fmt.Errorf("sqlite: transaction undone by a failure in the same commit: %w", err)
			}
		}
		answer()
		s.runBatch(batch[i+1:])
		return
	}
	var err error
	if ran {
		s.maybePurge(q{ctx: ctx, c: s.wstmts})
	}
	if _, err = s.wconn.ExecContext(ctx, "COMMIT"); err != nil {
		s.rollback(ctx)
		for i := range batch {
			if started[i] {
				results[i] = s.fail(err)
			}
		}
	} else {
		s.kickCheckpoint()
	}
	answer()
}

// begin opens the write connection if needed and starts a transaction on it.
func (s *Store) begin(ctx context.Context) error {
	if s.wconn == nil {
		conn, err := s.wdb.Conn(ctx)
		if err != nil {
			return err
		}
		s.wconn, s.wstmts = conn, newStmtCache(conn)
	}
	_, err := s.wconn.ExecContext(ctx, "BEGIN IMMEDIATE")
	return err
}

// runJob runs one job inside its own savepoint. lost reports that the enclosing
// transaction is no longer usable (a savepoint statement failed).
func (s *Store) runJob(j *job) (lost bool, err error) {
	sp := q{ctx: context.Background(), c: s.wstmts}
	if _, err := sp.exec("SAVEPOINT job"); err != nil {
		return true, s.fail(err)
	}
	ferr := s.call(j)
	if ferr == nil {
		if _, err := sp.exec("RELEASE job"); err != nil {
			return true, s.fail(err)
		}
		return false, nil
	}
	if _, err := sp.exec("ROLLBACK TO job"); err != nil {
		return true, s.fail(ferr)
	}
	if _, err := sp.exec("RELEASE job"); err != nil {
		return true, s.fail(ferr)
	}
	return false, s.fail(ferr)
}

// rollback ends a failed transaction. If that fails too (SQLite may already have
// rolled back), the connection's state is unknown: it is discarded, and the next
// batch opens a fresh one.
func (s *Store) rollback(ctx context.Context) {
	ctx = context.WithoutCancel(ctx)
	_, err := s.wconn.ExecContext(ctx, "ROLLBACK")
	if err == nil {
		return
	}
	s.log.WarnContext(ctx, "sqlite: rollback failed; reopening the write connection", "err", err)
	_ = s.wstmts.close()
	// Returning ErrBadConn from Raw makes database/sql close the driver connection
	// instead of returning it to the pool.
	_ = s.wconn.Raw(func(any) error { return driver.ErrBadConn })
	_ = s.wconn.Close()
	s.wconn, s.wstmts = nil, nil
}

// call runs the job's function. A panic in it fails that job alone, as an error
// the guard answers as internal_error: it runs on the writer goroutine, where an
// unrecovered panic would stop every write of the process, not just this call.
func (s *Store) call(j *job) (err error) {
	defer func() {
		if r := recover(); r != nil {
			s.log.ErrorContext(j.ctx, "sqlite: panic in a write transaction", "panic", r, "stack", string(debug.Stack()))
			err = fmt.Errorf("sqlite: panic in a write transaction: %v", r)
		}
	}()
	return j.fn(q{ctx: context.WithoutCancel(j.ctx), c: s.wstmts})
}

// closeConn closes the write connection and the statements prepared on it.
func (s *Store) closeConn() error {
	if s.wconn == nil {
		return nil
	}
	err := errors.Join(s.wstmts.close(), s.wconn.Close())
	s.wconn, s.wstmts = nil, nil
	return err
}
