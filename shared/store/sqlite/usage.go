package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"time"

	"github.com/aacworkflow/aacmcp/shared/internal/cpuslot"
	"github.com/aacworkflow/aacmcp/shared/retry"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// Usage counting is off the request path. Every tool call counts usage, and a write
// transaction per call costs more than the rest of a read call together: it waits for
// the single write connection, and each commit makes every reader connection drop its
// page cache. So UpdateUsage only queues the increment in memory; a background flusher
// commits what is queued in one transaction per usageFlushEvery (sooner when
// usageFlushBatch are waiting).
//
// What this changes, and what keeps "nothing lost":
//   - An increment is committed up to usageFlushEvery after UpdateUsage returns.
//     Readers of usage_daily in this process (ListUsage) flush first, so they still
//     read their writes; another process (the CLI beside `serve`) may lag by that
//     interval.
//   - A failed flush keeps its increments queued and is retried with backoff; it
//     is logged, never dropped.
//   - A kill -9 loses the queue. The audit log is its journal: each counted call's
//     record (its event id is the increment's) is written before the call is
//     answered, and every flush moves a durable watermark (usage_watermark) to the
//     earliest event time it might not have committed, minus usageReplaySlack. On
//     start, `serve` replays the records from the watermark on (package
//     shared/usagereplay) through RecoverUsage, whose usage_events markers make
//     the replay exact.
//   - Memory is bounded by backpressure: a caller that finds usageFlushBatch
//     increments queued waits for a flush (or for its context to end; its increment
//     stays queued either way). The queue holds at most usageFlushBatch increments
//     plus one per caller waiting so.
//
// One process counts usage per database (serve holds the data folder's lock): the
// watermark describes that process's queue.
const (
	// usageFlushEvery is how long an increment may wait for its commit. 200 ms
	// keeps commits (and reader page-cache invalidations) to five a second at any
	// load, while a dashboard in another process is at most a fifth of a second
	// behind. Shorter buys nothing a user can see; much longer grows the queue and
	// the work a crash leaves to the replay.
	usageFlushEvery = 200 * time.Millisecond
	// usageFlushBatch queued increments trigger a flush at once, and are the
	// queue's bound (about 150 bytes each). One transaction of this many upserts
	// takes a few milliseconds.
	usageFlushBatch = 4096
	// usageRetryMax caps the backoff between retries of a failing flush.
	usageRetryMax = 5 * time.Second
	// usageReplaySlack is subtracted from the watermark. It covers the moment
	// between a record's timestamp and its increment entering the queue (a stalled
	// goroutine) and small steps of the wall clock; the replay is exact whatever
	// its size, so it errs large.
	usageReplaySlack = 5 * time.Minute
)

// usageQueue holds the increments accepted by UpdateUsage and not yet committed.
type usageQueue struct {
	mu      sync.Mutex
	pending []pendingUsage
	closed  bool
	flushed chan struct{} // closed (and replaced) by each successful flush
	// inflight is the batch a flush has taken from pending and not finished with;
	// flushes is usage_watermark.flushes as of the last flush this process
	// committed (-1: unknown). ListUsage uses both to add what the counters lack.
	inflight []pendingUsage
	flushes  int64
	// uncounted holds event ids of queued or in-flight increments that ListUsage
	// found missing from usage_events, so that the next one need not look them up
	// again: each dashboard call probed every queued id of its workspace, and
	// ListUsage was 6.7% of serve's CPU in a profiled soak, for 4.3% of the calls
	// (docs/decisions.md). Only a commit of usage_events (a
	// flush or RecoverUsage; serve is their one writer) can make such an id counted:
	// a flush deletes the ids it committed, a failed flush or a recovery forgets them
	// all, and each of those moves epoch, so a lookup that raced one is not kept.
	// It holds ids of increments still queued only, so it is as bounded as the queue.
	uncounted map[string]struct{}
	epoch     int64
	// attempts numbers the flushes that took a batch; failedAt is the number of the
	// last one that failed.
	attempts, failedAt int64

	flushing chan struct{} // capacity 1: held by the one flush under way
	kick     chan struct{} // capacity 1: the queue went from empty to not empty
	full     chan struct{} // capacity 1: usageFlushBatch increments are queued
	stop     chan struct{} // closed by Close: the flusher exits
	done     chan struct{} // closed by the flusher on exit
	stopOnce sync.Once
}

type pendingUsage struct {
	u            store.UsageIncrement
	denied, errs int
}

// newPendingUsage validates u, as UpdateUsage always has, so that a bad increment
// is refused to its caller instead of failing a whole flush later.
func newPendingUsage(u store.UsageIncrement) (pendingUsage, error) {
	denied, errs, err := u.Counts()
	if err != nil {
		return pendingUsage{}, err
	}
	return pendingUsage{u: u, denied: int(denied), errs: int(errs)}, nil
}

// startUsage makes sure the watermark row exists and starts the flusher. A new
// database (or one written by a version that committed every increment before
// answering) has nothing to replay before now, less the slack.
func (s *Store) startUsage(ctx context.Context) error {
	u := &s.usage
	err := s.writeUncached(ctx, func(x q) error {
		if _, err := x.exec(`INSERT OR IGNORE INTO usage_watermark (id, replay_from) VALUES (1, ?)`,
			nanos(s.now().Add(-usageReplaySlack))); err != nil {
			return err
		}
		return x.queryRow(`SELECT flushes FROM usage_watermark WHERE id = 1`).Scan(&u.flushes)
	})
	if err != nil {
		return err
	}
	u.flushed = make(chan struct{})
	u.flushing = make(chan struct{}, 1)
	u.kick = make(chan struct{}, 1)
	u.full = make(chan struct{}, 1)
	u.stop = make(chan struct{})
	u.done = make(chan struct{})
	go s.flushUsageLoop()
	return nil
}

// stopUsage stops the flusher and commits what is queued. Increments that cannot
// be committed stay in the audit log, past the watermark, for the next start's
// replay; the error says so.
func (s *Store) stopUsage() error {
	u := &s.usage
	var err error
	u.stopOnce.Do(func() {
		u.mu.Lock()
		u.closed = true
		u.mu.Unlock()
		close(u.stop)
		<-u.done
		if err = s.FlushUsage(context.Background()); err != nil {
			s.log.Error("sqlite: usage increments not committed at close; the next start replays them from the audit log",
				"increments", s.queuedUsage(), "err", err)
		}
	})
	return err
}

func (s *Store) queuedUsage() int {
	s.usage.mu.Lock()
	defer s.usage.mu.Unlock()
	return len(s.usage.pending)
}

// UpdateUsage implements store.Writer. It validates u and queues it; the flusher
// commits it within usageFlushEvery (see the comment at the top of this file). An
// EventID already counted (within a day) is dropped when committed, so a retried
// call does not count twice. It waits only when the queue is full.
func (s *Store) UpdateUsage(ctx context.Context, inc store.UsageIncrement) error {
	p, err := newPendingUsage(inc)
	if err != nil {
		return err
	}
	u := &s.usage
	u.mu.Lock()
	if u.closed {
		u.mu.Unlock()
		return errors.New("sqlite: store is closed")
	}
	u.pending = append(u.pending, p)
	n := len(u.pending)
	flushed := u.flushed
	u.mu.Unlock()
	if n == 1 {
		signal(u.kick)
	}
	if n < usageFlushBatch {
		return nil
	}
	signal(u.full)
	// Backpressure. The increment is queued already and stays so whether or not
	// this caller waits to the end: giving up only stops slowing it down. The
	// flusher needs no CPU slot of this call's, so the call gives it up meanwhile.
	defer cpuslot.Park(ctx)()
	select {
	case <-flushed:
	case <-ctx.Done():
	}
	return nil
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// flushUsageLoop commits the queue a while after it becomes non-empty, at once when
// it is full, and retries a failed flush with backoff until Close.
func (s *Store) flushUsageLoop() {
	u := &s.usage
	defer close(u.done)
	backoff := retry.Policy{Base: usageFlushEvery, Max: usageRetryMax}
	failures := 0 // in a row
	for {
		if s.queuedUsage() == 0 {
			select {
			case <-u.stop:
				return
			case <-u.kick:
			}
		}
		full := u.full
		if failures > 0 {
			full = nil // retrying: a full queue must not turn the backoff into a spin
		}
		t := time.NewTimer(backoff.Delay(failures + 1))
		select {
		case <-u.stop:
			t.Stop()
			return
		case <-full:
		case <-t.C:
		}
		t.Stop()
		if err := s.FlushUsage(context.Background()); err != nil {
			failures++
			s.log.Warn("sqlite: usage flush failed; increments kept for a retry",
				"increments", s.queuedUsage(), "retry_in", backoff.Delay(failures+1), "err", err)
			continue
		}
		failures = 0
	}
}

// FlushUsage commits every increment queued before it was called, and moves the
// watermark, in one transaction. On failure the increments stay queued.
func (s *Store) FlushUsage(ctx context.Context) error {
	u := &s.usage
	// The flush under way may be a call's that is parked in its transaction and
	// needs a CPU slot to finish: waiting for it holding one could leave every slot
	// held by a call waiting here (docs/architecture.md, "Oldest call first").
	defer cpuslot.Park(ctx)()
	// One flush at a time: a flush that waits here for another returns only after
	// that one's increments are committed (or queued again ahead of its own).
	select {
	case u.flushing <- struct{}{}:
	case <-ctx.Done():
		return s.fail(ctx.Err())
	}
	defer func() { <-u.flushing }()

	u.mu.Lock()
	batch := u.pending
	u.pending = nil
	// Everything that entered the queue before taken is in batch: whatever comes
	// later has a later event time, up to the slack.
	taken := s.now()
	u.inflight = batch
	if len(batch) > 0 {
		u.attempts++
	}
	u.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	var flushes int64
	err := s.writeUncached(ctx, func(x q) error {
		if _, err := applyUsage(x, taken, batch); err != nil {
			return err
		}
		return x.queryRow(`UPDATE usage_watermark SET replay_from = ?, flushes = flushes + 1 WHERE id = 1 RETURNING flushes`,
			nanos(taken.Add(-usageReplaySlack))).Scan(&flushes)
	})
	u.mu.Lock()
	defer u.mu.Unlock()
	u.inflight = nil
	u.epoch++
	if err != nil {
		// Ahead of what came meanwhile, so the oldest is committed first.
		u.pending = append(batch, u.pending...)
		u.flushes = -1 // a COMMIT that failed may still have committed
		u.failedAt = u.attempts
		clear(u.uncounted)
		return err
	}
	for _, p := range batch {
		delete(u.uncounted, p.u.EventID) // counted now, and so is a retry still queued
	}
	u.flushes = flushes
	close(u.flushed)
	u.flushed = make(chan struct{})
	return nil
}

// SealUsage commits every queued increment and moves the watermark to now, for a
// clean stop: the one process counting usage calls it once no call can count any
// more (serve, after its HTTP server shut down with every request finished), so
// that its next start has nothing of this run to replay. That precondition is the
// caller's: an increment queued after the seal is still committed by Close, but a
// crash before that would lose it with no replay to bring it back.
func (s *Store) SealUsage(ctx context.Context) error {
	if err := s.FlushUsage(ctx); err != nil {
		return err
	}
	return s.writeUncached(ctx, func(x q) error {
		_, err := x.exec(`UPDATE usage_watermark SET replay_from = ? WHERE id = 1`, nanos(s.now()))
		return err
	})
}

// ArmUsageReplay lowers the watermark to now minus usageReplaySlack where it is
// later: called when the replay at start is done. A sealed watermark is the last
// run's now; until this run's first flush moves it, the records this run writes
// must all be at or after it, whatever the clock did while the server was down.
func (s *Store) ArmUsageReplay(ctx context.Context) error {
	return s.writeUncached(ctx, func(x q) error {
		_, err := x.exec(`UPDATE usage_watermark SET replay_from = min(replay_from, ?) WHERE id = 1`,
			nanos(s.now().Add(-usageReplaySlack)))
		return err
	})
}

// RecoverUsage commits increments rebuilt from the audit log after a crash, through
// the same path as a flush: an increment whose event was counted already is dropped.
// It returns how many were counted now. The watermark is left alone: the next flush
// moves it (ArmUsageReplay makes sure it is not ahead of this run meanwhile).
func (s *Store) RecoverUsage(ctx context.Context, incs []store.UsageIncrement) (int, error) {
	batch := make([]pendingUsage, 0, min(len(incs), usageFlushBatch))
	recovered := 0
	commit := func() error {
		var n int
		err := s.writeUncached(ctx, func(x q) error {
			var err error
			n, err = applyUsage(x, s.now(), batch)
			return err
		})
		if err == nil {
			recovered += n
		}
		batch = batch[:0]
		s.forgetUncounted() // whatever the outcome: a failed COMMIT may have committed
		return err
	}
	for _, inc := range incs {
		p, err := newPendingUsage(inc)
		if err != nil {
			return recovered, err
		}
		batch = append(batch, p)
		if len(batch) == usageFlushBatch {
			if err := commit(); err != nil {
				return recovered, err
			}
		}
	}
	if len(batch) > 0 {
		if err := commit(); err != nil {
			return recovered, err
		}
	}
	return recovered, nil
}

// UsageReplayFrom returns the durable watermark: audit records from this time on
// may lack their usage increment, and are replayed on start.
func (s *Store) UsageReplayFrom(ctx context.Context) (time.Time, error) {
	var n int64
	err := s.read(ctx).queryRow(`SELECT replay_from FROM usage_watermark WHERE id = 1`).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, errors.New("sqlite: usage watermark missing")
	}
	if err != nil {
		return time.Time{}, s.fail(err)
	}
	return fromNanos(n), nil
}

// applyUsage counts the increments whose event was not counted before, one upsert
// per workspace, day and tool, and returns how many it counted. now sets the
// markers' expiry.
func applyUsage(x q, now time.Time, reqs []pendingUsage) (int, error) {
	type key struct{ ws, date, tool string }
	type sum struct{ calls, denied, errs int }
	sums := map[key]*sum{}
	var order []key
	counted := 0
	for _, r := range reqs {
		u := r.u
		if u.EventID != "" {
			res, err := x.exec(`INSERT OR IGNORE INTO usage_events (event_id, expires_at) VALUES (?, ?)`,
				u.EventID, nanos(now.Add(usageEventTTL)))
			if err != nil {
				return 0, err
			}
			n, err := res.RowsAffected()
			if err != nil {
				return 0, err
			}
			if n == 0 {
				continue // counted before
			}
		}
		k := key{u.WorkspaceID, u.Date, u.Tool}
		sm := sums[k]
		if sm == nil {
			sm = &sum{}
			sums[k] = sm
			order = append(order, k)
		}
		sm.calls++
		sm.denied += r.denied
		sm.errs += r.errs
		counted++
	}
	for _, k := range order {
		sm := sums[k]
		if _, err := x.exec(`INSERT INTO usage_daily (workspace_id, date, tool, calls, denied, errors) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (workspace_id, date, tool) DO UPDATE SET
				calls = calls + excluded.calls, denied = denied + excluded.denied, errors = errors + excluded.errors`,
			k.ws, k.date, k.tool, sm.calls, sm.denied, sm.errs); err != nil {
			return 0, err
		}
	}
	return counted, nil
}

// usageView is what ListUsage holds in memory beside the counters: copies of the
// increments queued and of those in the flush under way (if any) for one workspace
// and range, each event once, with the flush count that tells which of them the
// counters include.
type usageView struct {
	queued, inflight []pendingUsage
	flushes          int64 // the counters' flushes value if inflight is not committed
	attempt          int64 // the flush attempt inflight belongs to
	// unknown are the event ids among queued and inflight not known to be uncounted
	// (usageQueue.uncounted), which ListUsage looks up; epoch is usageQueue.epoch
	// when the copy was taken.
	unknown []string
	epoch   int64
}

// viewUsage copies what the counters may lack; ok is false when this process does
// not know the counters' flush count (after a failed flush). The lock is held only
// to copy: every call queues its increment under it.
func (s *Store) viewUsage(ws, from, to string) (v usageView, ok bool) {
	u := &s.usage
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.flushes < 0 {
		return v, false
	}
	seen := map[string]bool{}
	pick := func(batch []pendingUsage) []pendingUsage {
		var out []pendingUsage
		for _, p := range batch {
			if p.u.WorkspaceID != ws || p.u.Date < from || p.u.Date > to {
				continue
			}
			if id := p.u.EventID; id != "" {
				if seen[id] {
					continue // a retried increment: the flush counts it once
				}
				seen[id] = true
			}
			out = append(out, p)
		}
		return out
	}
	v.inflight = pick(u.inflight)
	v.queued = pick(u.pending)
	v.flushes = u.flushes
	v.attempt = u.attempts
	v.epoch = u.epoch
	for _, b := range [][]pendingUsage{v.inflight, v.queued} {
		for _, p := range b {
			if _, known := u.uncounted[p.u.EventID]; !known && p.u.EventID != "" {
				v.unknown = append(v.unknown, p.u.EventID)
			}
		}
	}
	return v, true
}

// noteUncounted remembers the ids of v.unknown that a lookup made in the snapshot of
// v's flush count found missing from usage_events (not in counted), unless a commit
// of usage_events has ended since v was copied: then the lookup may predate it.
func (s *Store) noteUncounted(v usageView, counted map[string]bool) {
	u := &s.usage
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.epoch != v.epoch {
		return
	}
	if u.uncounted == nil {
		u.uncounted = map[string]struct{}{}
	}
	for _, id := range v.unknown {
		if !counted[id] {
			u.uncounted[id] = struct{}{}
		}
	}
}

// forgetUncounted drops every remembered lookup: called after a commit of
// usage_events that did not come from the queue's own flush.
func (s *Store) forgetUncounted() {
	u := &s.usage
	u.mu.Lock()
	defer u.mu.Unlock()
	u.epoch++
	clear(u.uncounted)
}

// sumUsage adds up batch per day and tool, leaving out the events in counted:
// retries whose first copy a flush already committed, which the flush of this copy
// will drop.
func sumUsage(batch []pendingUsage, counted map[string]bool) map[[2]string]store.UsageRow {
	rows := map[[2]string]store.UsageRow{}
	for _, p := range batch {
		if counted[p.u.EventID] {
			continue
		}
		k := [2]string{p.u.Date, p.u.Tool}
		r := rows[k]
		r.Date, r.Tool = p.u.Date, p.u.Tool
		r.Calls++
		r.Denied += int64(p.denied)
		r.Errors += int64(p.errs)
		rows[k] = r
	}
	return rows
}

// failedSince reports whether a flush failed since attempt began (its batch then
// went back to the queue, and a later flush may have committed it with more).
func (s *Store) failedSince(attempt int64) bool {
	u := &s.usage
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.failedAt >= attempt
}
