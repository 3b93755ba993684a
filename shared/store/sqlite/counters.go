package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/store"
)

const dateLayout = "2006-01-02"

func validDate(d string) bool {
	_, err := time.Parse(dateLayout, d)
	return err == nil
}

// UpdateUsage implements store.Writer. An EventID already counted (within a day) is
// dropped, so a retried call does not count twice.
//
// Every tool call counts usage, so under concurrent calls the increments queue for
// the single write connection. They are committed in groups: the first caller to
// find no commit under way leads, takes every increment queued by then (its own
// included) into one transaction, answers each caller, and hands the lead to the
// first caller queued behind it. Each caller still returns only once its own
// increment is committed; a group that fails is retried one increment at a time, so
// one bad increment cannot fail the others.
func (s *Store) UpdateUsage(ctx context.Context, u store.UsageIncrement) error {
	if u.WorkspaceID == "" {
		return apperr.New(apperr.InvalidArguments, "usage needs a workspace")
	}
	if !validDate(u.Date) {
		return apperr.New(apperr.InvalidArguments, "usage date must be YYYY-MM-DD")
	}
	r := &usageReq{u: u, done: make(chan error, 1), lead: make(chan struct{}, 1)}
	switch apperr.Outcome(u.Outcome) {
	case apperr.OutcomeSuccess:
	case apperr.OutcomeDenied:
		r.denied = 1
	case apperr.OutcomeError:
		r.errs = 1
	default:
		return apperr.New(apperr.InvalidArguments, "usage outcome must be success, denied or error")
	}
	g := &s.usage
	g.mu.Lock()
	g.queue = append(g.queue, r)
	leader := !g.busy
	g.busy = true
	g.mu.Unlock()
	if !leader {
		// Not abandoned on ctx: a caller may be handed the lead, which must be taken.
		select {
		case err := <-r.done:
			return err
		case <-r.lead:
		}
	}
	g.mu.Lock()
	batch := g.queue
	g.queue = nil
	g.mu.Unlock()

	// One caller giving up must not fail the increments of the others.
	wctx := context.WithoutCancel(ctx)
	err := s.write(wctx, func(x q) error { return applyUsage(x, s.now(), batch) })
	for _, b := range batch {
		if err != nil && len(batch) > 1 {
			b.done <- s.write(wctx, func(x q) error { return applyUsage(x, s.now(), []*usageReq{b}) })
		} else {
			b.done <- err
		}
	}

	g.mu.Lock()
	if len(g.queue) > 0 {
		g.queue[0].lead <- struct{}{}
	} else {
		g.busy = false
	}
	g.mu.Unlock()
	return <-r.done
}

// usageGroup is the queue of UpdateUsage calls waiting for a group commit.
type usageGroup struct {
	mu    sync.Mutex
	queue []*usageReq
	busy  bool // a leader is committing; queued callers wait for it
}

type usageReq struct {
	u            store.UsageIncrement
	denied, errs int
	done         chan error    // the outcome of this increment
	lead         chan struct{} // this caller now leads the next group
}

// applyUsage counts the increments of reqs whose event was not counted before, one
// upsert per workspace, day and tool.
func applyUsage(x q, now time.Time, reqs []*usageReq) error {
	type key struct{ ws, date, tool string }
	type sum struct{ calls, denied, errs int }
	sums := map[key]*sum{}
	var order []key
	for _, r := range reqs {
		u := r.u
		if u.EventID != "" {
			res, err := x.exec(`INSERT OR IGNORE INTO usage_events (event_id, expires_at) VALUES (?, ?)`,
				u.EventID, nanos(now.Add(usageEventTTL)))
			if err != nil {
				return err
			}
			n, err := res.RowsAffected()
			if err != nil {
				return err
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
	}
	for _, k := range order {
		sm := sums[k]
		if _, err := x.exec(`INSERT INTO usage_daily (workspace_id, date, tool, calls, denied, errors) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (workspace_id, date, tool) DO UPDATE SET
				calls = calls + excluded.calls, denied = denied + excluded.denied, errors = errors + excluded.errors`,
			k.ws, k.date, k.tool, sm.calls, sm.denied, sm.errs); err != nil {
			return err
		}
	}
	return nil
}

// ListUsage implements store.Reader: one range scan of the primary key.
func (s *Store) ListUsage(ctx context.Context, ws, from, to string) ([]store.UsageRow, error) {
	if !validDate(from) || !validDate(to) {
		return nil, apperr.New(apperr.InvalidArguments, "dates must be YYYY-MM-DD")
	}
	if from > to {
		return nil, apperr.New(apperr.InvalidArguments, "from must not be after to")
	}
	rows, err := s.read(ctx).query(`SELECT date, tool, calls, denied, errors FROM usage_daily
		WHERE workspace_id = ? AND date BETWEEN ? AND ? ORDER BY date, tool`, ws, from, to)
	if err != nil {
		return nil, s.fail(err)
	}
	defer rows.Close()
	out := []store.UsageRow{}
	for rows.Next() {
		var r store.UsageRow
		if err := rows.Scan(&r.Date, &r.Tool, &r.Calls, &r.Denied, &r.Errors); err != nil {
			return nil, s.fail(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail(err)
	}
	return out, nil
}

// UpdateRateCounter implements store.Writer.
func (s *Store) UpdateRateCounter(ctx context.Context, ws, key string, windowStart time.Time, window time.Duration) (int64, error) {
	if window <= 0 {
		return 0, apperr.New(apperr.InvalidArguments, "rate window must be positive")
	}
	var n int64
	err := s.write(ctx, func(x q) error {
		return x.queryRow(`INSERT INTO rate_counters (workspace_id, key, window_start, count, expires_at) VALUES (?, ?, ?, 1, ?)
			ON CONFLICT (workspace_id, key, window_start) DO UPDATE SET count = count + 1
			RETURNING count`, ws, key, nanos(windowStart), nanos(windowStart.Add(window))).Scan(&n)
	})
	return n, err
}

func validIdemKey(k store.IdempotencyKey) error {
	if k.WorkspaceID == "" || k.Tool == "" || k.KeyHash == "" {
		return apperr.New(apperr.InvalidArguments, "idempotency key needs workspace, tool and key hash")
	}
	return nil
}

// GetIdempotency implements store.Reader; an expired record is not_found.
func (s *Store) GetIdempotency(ctx context.Context, k store.IdempotencyKey) (store.IdempotencyRecord, error) {
	if err := validIdemKey(k); err != nil {
		return store.IdempotencyRecord{}, err
	}
	rec := store.IdempotencyRecord{IdempotencyKey: k}
	var created, expires int64
	err := s.read(ctx).queryRow(`SELECT state, args_digest, result, resource_id, created_at, expires_at FROM idempotency
		WHERE workspace_id = ? AND user_id = ? AND tool = ? AND key_hash = ? AND expires_at > ?`,
		k.WorkspaceID, k.UserID, k.Tool, k.KeyHash, nanos(s.now())).
		Scan(&rec.State, &rec.ArgsDigest, &rec.Result, &rec.ResourceID, &created, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return store.IdempotencyRecord{}, notFound("idempotency record")
	}
	if err != nil {
		return store.IdempotencyRecord{}, s.fail(err)
	}
	rec.CreatedAt, rec.ExpiresAt = fromNanos(created), fromNanos(expires)
	return rec, nil
}

// CreateIdempotency implements store.Writer. An expired record does not block a new
// claim. Zero CreatedAt and ExpiresAt default to now and now+IdempotencyTTL.
func (s *Store) CreateIdempotency(ctx context.Context, rec store.IdempotencyRecord) error {
	if err := validIdemKey(rec.IdempotencyKey); err != nil {
		return err
	}
	rec.CreatedAt = s.orNow(rec.CreatedAt)
	if rec.ExpiresAt.IsZero() {
		rec.ExpiresAt = rec.CreatedAt.Add(IdempotencyTTL)
	}
	if rec.State == "" {
		rec.State = store.IdemPending
	}
	k := rec.IdempotencyKey
	return s.write(ctx, func(x q) error {
		if _, err := x.exec(`DELETE FROM idempotency
			WHERE workspace_id = ? AND user_id = ? AND tool = ? AND key_hash = ? AND expires_at <= ?`,
			k.WorkspaceID, k.UserID, k.Tool, k.KeyHash, nanos(s.now())); err != nil {
			return err
		}
		_, err := x.exec(`INSERT INTO idempotency (workspace_id, user_id, tool, key_hash, state, args_digest, result,
			resource_id, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			k.WorkspaceID, k.UserID, k.Tool, k.KeyHash, rec.State, rec.ArgsDigest, slices.Clip(rec.Result),
			rec.ResourceID, nanos(rec.CreatedAt), nanos(rec.ExpiresAt))
		if isUnique(err) {
			return apperr.New(apperr.Conflict, "idempotency key already in use")
		}
		return err
	})
}

// UpdateIdempotency implements store.Writer. A zero ExpiresAt keeps the stored expiry;
// an empty State means completed.
func (s *Store) UpdateIdempotency(ctx context.Context, rec store.IdempotencyRecord) error {
	if err := validIdemKey(rec.IdempotencyKey); err != nil {
		return err
	}
	if rec.State == "" {
		rec.State = store.IdemCompleted
	}
	var expires any
	if !rec.ExpiresAt.IsZero() {
		expires = nanos(rec.ExpiresAt)
	}
	k := rec.IdempotencyKey
	return s.write(ctx, func(x q) error {
		return x.execOne("idempotency record", `UPDATE idempotency SET state = ?, args_digest = ?, result = ?, resource_id = ?,
			expires_at = COALESCE(?, expires_at)
			WHERE workspace_id = ? AND user_id = ? AND tool = ? AND key_hash = ? AND expires_at > ?`,
			rec.State, rec.ArgsDigest, slices.Clip(rec.Result), rec.ResourceID, expires,
			k.WorkspaceID, k.UserID, k.Tool, k.KeyHash, nanos(s.now()))
	})
}

// DeleteIdempotency implements store.Writer. Releasing a key that holds nothing is
// not an error: the claim is gone either way.
func (s *Store) DeleteIdempotency(ctx context.Context, k store.IdempotencyKey) error {
	if err := validIdemKey(k); err != nil {
		return err
	}
	return s.write(ctx, func(x q) error {
		_, err := x.exec(`DELETE FROM idempotency WHERE workspace_id = ? AND user_id = ? AND tool = ? AND key_hash = ?`,
			k.WorkspaceID, k.UserID, k.Tool, k.KeyHash)
		return err
	})
}
