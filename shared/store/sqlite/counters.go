package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/aacworkflow/aacmcp/shared/store"
)

const dateLayout = "2006-01-02"

func validDate(d string) bool {
	_, err := time.Parse(dateLayout, d)
	return err == nil
}

// ListUsage implements store.Reader: one range scan of the primary key, plus the
// increments still queued in this process, so that a caller reads its own calls.
//
// The queued increments are added in memory rather than committed first: a commit
// here made every dashboard call a write transaction behind the single writer, and
// each one waited for the flush before it, which was the whole slowest 1% of the
// soak (docs/decisions.md, "SQLite: usage reads do not commit"). The counters are read with the number of flushes they
// include (usage_watermark.flushes, in the same statement), which says whether the
// flush under way, if any, is in them; a flush committed since the copy is seen the
// same way and the copy is taken again. A queued event that the counters already
// count (a retry the flush will drop) is left out, as the flush will do; it is read
// in the same statement too, for the events not already found uncounted by an
// earlier call (usageQueue.uncounted). Only when the flush count is unknown, or flushes keep
// committing under three copies in a row, is the queue committed and the range
// read again, as before.
func (s *Store) ListUsage(ctx context.Context, ws, from, to string) ([]store.UsageRow, error) {
	if !validDate(from) || !validDate(to) {
		return nil, store.Invalid("dates must be YYYY-MM-DD")
	}
	if from > to {
		return nil, store.Invalid("from must not be after to")
	}
	for range 3 {
		v, ok := s.viewUsage(ws, from, to)
		if !ok {
			break
		}
		rows, flushes, counted, err := s.readUsage(ctx, ws, from, to, v.unknown)
		if err != nil {
			return nil, err
		}
		switch flushes {
		case v.flushes: // the flush under way (if any) is not in rows
			s.noteUncounted(v, counted)
			return mergeUsage(mergeUsage(rows, sumUsage(v.queued, counted)), sumUsage(v.inflight, counted)), nil
		case v.flushes + 1: // it is
			if len(v.inflight) == 0 || s.failedSince(v.attempt) {
				// Another flush committed since the copy (or the one under way failed
				// and a later one committed its batch): copy again.
				continue
			}
			return mergeUsage(rows, sumUsage(v.queued, counted)), nil
		}
		// flushes committed since the copy: copy again
	}
	// Read your writes: increments this process has accepted are committed first.
	if err := s.FlushUsage(ctx); err != nil {
		return nil, s.fail(err)
	}
	rows, _, _, err := s.readUsage(ctx, ws, from, to, nil)
	return rows, err
}

// readUsage reads, in one statement (one snapshot), the counters of ws between
// from and to, how many usage flushes they include, and which of events they
// already count (usage_events: a retry's first copy was committed).
func (s *Store) readUsage(ctx context.Context, ws, from, to string, events []string) ([]store.UsageRow, int64, map[string]bool, error) {
	ids := []byte("[]")
	if len(events) > 0 {
		var err error
		if ids, err = json.Marshal(events); err != nil {
			return nil, 0, nil, err
		}
	}
	rows, err := s.read(ctx).query(`SELECT 0, date, tool, calls, denied, errors FROM usage_daily
		WHERE workspace_id = ? AND date BETWEEN ? AND ?
		UNION ALL SELECT 1, '', '', flushes, 0, 0 FROM usage_watermark WHERE id = 1
		UNION ALL SELECT 2, event_id, '', 0, 0, 0 FROM usage_events WHERE event_id IN (SELECT value FROM json_each(?))
		ORDER BY 1, 2, 3`, ws, from, to, string(ids))
	if err != nil {
		return nil, 0, nil, s.fail(err)
	}
	defer rows.Close()
	out := []store.UsageRow{}
	var flushes int64 = -1
	var counted map[string]bool
	for rows.Next() {
		var marker int
		var r store.UsageRow
		if err := rows.Scan(&marker, &r.Date, &r.Tool, &r.Calls, &r.Denied, &r.Errors); err != nil {
			return nil, 0, nil, s.fail(err)
		}
		switch marker {
		case 1:
			flushes = r.Calls
		case 2:
			if counted == nil {
				counted = map[string]bool{}
			}
			counted[r.Date] = true
		default:
			out = append(out, r)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, 0, nil, s.fail(err)
	}
	return out, flushes, counted, nil
}

// mergeUsage adds queued (per date and tool) to rows, keeping rows' order (date,
// then tool).
func mergeUsage(rows []store.UsageRow, queued map[[2]string]store.UsageRow) []store.UsageRow {
	if len(queued) == 0 {
		return rows
	}
	for i, r := range rows {
		k := [2]string{r.Date, r.Tool}
		if q, ok := queued[k]; ok {
			rows[i].Calls += q.Calls
			rows[i].Denied += q.Denied
			rows[i].Errors += q.Errors
			delete(queued, k)
		}
	}
	for _, q := range queued {
		rows = append(rows, q)
	}
	slices.SortFunc(rows, func(a, b store.UsageRow) int {
		return cmp.Or(strings.Compare(a.Date, b.Date), strings.Compare(a.Tool, b.Tool))
	})
	return rows
}

// UpdateRateCounter implements store.Writer.
func (s *Store) UpdateRateCounter(ctx context.Context, ws, key string, windowStart time.Time, window time.Duration) (int64, error) {
	if window <= 0 {
		return 0, store.Invalid("rate window must be positive")
	}
	var n int64
	err := s.writeUncached(ctx, func(x q) error {
		return x.queryRow(`INSERT INTO rate_counters (workspace_id, key, window_start, count, expires_at) VALUES (?, ?, ?, 1, ?)
			ON CONFLICT (workspace_id, key, window_start) DO UPDATE SET count = count + 1
			RETURNING count`, ws, key, nanos(windowStart), nanos(windowStart.Add(window))).Scan(&n)
	})
	return n, err
}

// GetIdempotency implements store.Reader; an expired record is not_found.
func (s *Store) GetIdempotency(ctx context.Context, k store.IdempotencyKey) (store.IdempotencyRecord, error) {
	if err := k.Check(); err != nil {
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
// claim, nor does the record rec.Supersedes names while it is stored unchanged: both
// are removed in the claim's own write transaction, so of two takeovers of the same
// record the second finds the first one's claim and fails with conflict. Zero
// CreatedAt and ExpiresAt default to now and now+IdempotencyTTL.
func (s *Store) CreateIdempotency(ctx context.Context, rec store.IdempotencyRecord) error {
	if err := rec.IdempotencyKey.Check(); err != nil {
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
	// Without a superseded record the second alternative matches no row: a stored
	// state is never empty.
	var supState string
	var supCreated int64
	if p := rec.Supersedes; p != nil && p.State != "" {
		supState, supCreated = p.State, nanos(p.CreatedAt)
	}
	if held, err := s.keyHeld(ctx, k, supState, supCreated); err != nil || held {
		return err
	}
	return s.writeUncached(ctx, func(x q) error {
		if _, err := x.exec(`DELETE FROM idempotency
			WHERE workspace_id = ? AND user_id = ? AND tool = ? AND key_hash = ?
			AND (expires_at <= ? OR (state = ? AND created_at = ?))`,
			k.WorkspaceID, k.UserID, k.Tool, k.KeyHash, nanos(s.now()), supState, supCreated); err != nil {
			return err
		}
		_, err := x.exec(`INSERT INTO idempotency (workspace_id, user_id, tool, key_hash, state, args_digest, result,
			resource_id, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			k.WorkspaceID, k.UserID, k.Tool, k.KeyHash, rec.State, rec.ArgsDigest, slices.Clip(rec.Result),
			rec.ResourceID, nanos(rec.CreatedAt), nanos(rec.ExpiresAt))
		if isUnique(err) {
			return store.Errorf(store.ErrConflict, "idempotency key already in use")
		}
		return err
	})
}

// keyHeld answers a claim of a key that a live record already holds from the read
// pool, without queueing a write: the retries and duplicates of a call, the
// claims that fail, are as many as half of all claims under load (make soak).
// A record only ever leaves the key (settled records stay until they expire),
// so a record seen live here is a conflict now; one that leaves right after is
// the case the caller's retry covers, as for a conflict found by the write.
// held is false when the key looks free or holds only the superseded record;
// the write transaction decides those.
func (s *Store) keyHeld(ctx context.Context, k store.IdempotencyKey, supState string, supCreated int64) (held bool, err error) {
	var state string
	var created int64
	err = s.read(ctx).queryRow(`SELECT state, created_at FROM idempotency
		WHERE workspace_id = ? AND user_id = ? AND tool = ? AND key_hash = ? AND expires_at > ?`,
		k.WorkspaceID, k.UserID, k.Tool, k.KeyHash, nanos(s.now())).Scan(&state, &created)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, s.fail(err)
	case state == supState && created == supCreated:
		return false, nil
	}
	return true, store.Errorf(store.ErrConflict, "idempotency key already in use")
}

// UpdateIdempotency implements store.Writer. A zero ExpiresAt keeps the stored expiry;
// an empty State means completed. The condition and the check that tells conflict
// from not_found run in one write transaction, so nothing settles in between.
func (s *Store) UpdateIdempotency(ctx context.Context, rec store.IdempotencyRecord) error {
	if err := store.CheckClaim(rec.IdempotencyKey, rec.CreatedAt); err != nil {
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
	now := nanos(s.now())
	return s.writeUncached(ctx, func(x q) error {
		res, err := x.exec(`UPDATE idempotency SET state = ?, args_digest = ?, result = ?, resource_id = ?,
			expires_at = COALESCE(?, expires_at)
			WHERE workspace_id = ? AND user_id = ? AND tool = ? AND key_hash = ? AND expires_at > ?
			AND state = ? AND created_at = ?`,
			rec.State, rec.ArgsDigest, slices.Clip(rec.Result), rec.ResourceID, expires,
			k.WorkspaceID, k.UserID, k.Tool, k.KeyHash, now, store.IdemPending, nanos(rec.CreatedAt))
		return claimWritten(x, res, err, k, now, notFound("idempotency record"))
	})
}

// DeleteIdempotency implements store.Writer. Releasing a key that holds nothing live
// is not an error: the claim is gone either way. An expired record of another call is
// left for the purge, like any expired record.
func (s *Store) DeleteIdempotency(ctx context.Context, k store.IdempotencyKey, createdAt time.Time) error {
	if err := store.CheckClaim(k, createdAt); err != nil {
		return err
	}
	now := nanos(s.now())
	return s.writeUncached(ctx, func(x q) error {
		res, err := x.exec(`DELETE FROM idempotency WHERE workspace_id = ? AND user_id = ? AND tool = ? AND key_hash = ?
			AND state = ? AND created_at = ?`,
			k.WorkspaceID, k.UserID, k.Tool, k.KeyHash, store.IdemPending, nanos(createdAt))
		return claimWritten(x, res, err, k, now, nil)
	})
}

// claimWritten is the outcome of a write conditioned on the key holding the caller's
// claim: done if it changed the row; otherwise conflict when another live record
// holds the key, else absent (what "nothing there" means to the caller).
func claimWritten(x q, res sql.Result, err error, k store.IdempotencyKey, now int64, absent error) error {
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return err
	}
	held, err := liveIdem(x, k, now)
	if err != nil {
		return err
	}
	if held {
		return errNotOurClaim()
	}
	return absent
}

// liveIdem reports whether the key holds a record that has not expired.
func liveIdem(x q, k store.IdempotencyKey, now int64) (bool, error) {
	var one int
	err := x.queryRow(`SELECT 1 FROM idempotency
		WHERE workspace_id = ? AND user_id = ? AND tool = ? AND key_hash = ? AND expires_at > ?`,
		k.WorkspaceID, k.UserID, k.Tool, k.KeyHash, now).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

func errNotOurClaim() error {
	return store.Errorf(store.ErrConflict, "idempotency key no longer holds this call's claim")
}
