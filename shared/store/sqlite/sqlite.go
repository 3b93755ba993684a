// Package sqlite is the embedded backend of store.Queries and auth.TokenStore: one
// SQLite file (pure-Go driver, WAL) holds tenants, issues, usage, idempotency records
// and tokens.
//
// Throughput comes from splitting connections: all writes go through one connection
// (SQLite admits one writer at a time anyway; queueing in Go is cheaper than spinning
// on SQLITE_BUSY), owned by one goroutine that commits the transactions queued
// together (writer.go), with BEGIN IMMEDIATE, so a transaction that reads then writes
// never fails to upgrade its lock; reads use a pool of query-only connections that WAL
// lets run beside the writer, and checkpoints run on a connection of their own
// (checkpoint.go). Statements are prepared once per connection and reused.
// busy_timeout covers other processes on the same file (the CLI beside `serve`).
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// Store implements store.Queries and auth.TokenStore. Safe for concurrent use.
type Store struct {
	wdb *sql.DB // owns the write connection
	rdb *sql.DB // query-only pool

	// The write connection is held for the store's lifetime so that statements
	// prepared on it survive across transactions. Only the writer goroutine
	// (writer.go) uses it: callers queue their transactions there.
	w      writer
	ckpt   checkpointer
	wconn  *sql.Conn // the writer goroutine's; nil until first use or after a failed rollback
	wstmts *stmtCache
	rstmts *stmtCache

	now       func() time.Time
	log       *slog.Logger
	lastPurge atomic.Int64 // unix nanos of the last purge of expired rows

	usage usageQueue // usage increments accepted and not yet committed (usage.go)
	cache *readCache // nil unless WithReadCache (readcache.go)
}

var (
	_ store.Queries   = (*Store)(nil)
	_ auth.TokenStore = (*Store)(nil)
)

// Retention of rows that only answer repeats.
const (
	// TombstoneTTL is how long a delete's result is remembered (docs/architecture.md section 2: >= 24 h).
	TombstoneTTL = 25 * time.Hour
	// IdempotencyTTL is the default lifetime of an idempotency record.
	IdempotencyTTL = 24 * time.Hour
	// usageEventTTL is how long a counted event id is remembered to drop retries.
	usageEventTTL = 24 * time.Hour
	// purgeEvery bounds how often a write transaction also purges expired rows.
	purgeEvery = time.Minute
	// busyTimeout is how long a statement waits for another process's lock.
	busyTimeout = 5 * time.Second
)

// Option configures Open.
type Option func(*Store)

// WithClock replaces time.Now (tests of expiry).
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(s *Store) { s.log = l } }

// Open opens (creating if needed) the database file at path and brings its schema up
// to date. path must name a file: two pools cannot share an in-memory database.
func Open(ctx context.Context, path string, opts ...Option) (*Store, error) {
	if path == "" || path == ":memory:" || strings.HasPrefix(path, "file:") {
		return nil, fmt.Errorf("sqlite: path must be a file path, got %q", path)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	if strings.ContainsAny(abs, "?#") {
		// The driver splits its DSN at '?'; refuse rather than open another file.
		return nil, fmt.Errorf("sqlite: path %q must not contain '?' or '#'", abs)
	}
	s := &Store{now: time.Now, log: slog.Default()}
	for _, o := range opts {
		o(s)
	}

	common := url.Values{}
	common.Set("_busy_timeout", fmt.Sprint(busyTimeout.Milliseconds()))
	common.Set("_foreign_keys", "1")
	// NORMAL is durable across process crashes in WAL mode; only an OS crash or power
	// loss can drop the last commits. That is the right trade for a local server.
	common.Set("_synchronous", "NORMAL")

	wq := cloneValues(common)
	wq.Set("_journal_mode", "WAL")
	wq.Set("_txlock", "immediate")
	// The checkpointer (checkpoint.go) copies the WAL into the database file; a
	// commit on the write connection never does, so its fsyncs stall no writer.
	wq.Add("_pragma", "wal_autocheckpoint(0)")
	// Each transaction of a group commit runs in a savepoint (writer.go), whose undo
	// pages SQLite keeps in a sub-journal: a temporary file by default, two syscalls
	// per page changed. In memory, they cost none.
	wq.Add("_pragma", "temp_store(memory)")
	s.wdb, err = sql.Open("sqlite", abs+"?"+wq.Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", abs, err)
	}
	s.wdb.SetMaxOpenConns(1)
	s.wdb.SetMaxIdleConns(1)
	s.wdb.SetConnMaxIdleTime(0)
	s.wdb.SetConnMaxLifetime(0)
	s.lastPurge.Store(s.now().UnixNano())
	s.startWriter()
	ok := false
	defer func() {
		if !ok {
			s.stopWriter()
			s.stopCheckpointer()
			s.wdb.Close()
			if s.rdb != nil {
				s.rdb.Close()
			}
		}
	}()

	if err := s.migrate(ctx); err != nil {
		return nil, err
	}
	if err := s.startCheckpointer(abs, common); err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", abs, err)
	}

	rq := cloneValues(common)
	rq.Set("_query_only", "1")
	s.rdb, err = sql.Open("sqlite", abs+"?"+rq.Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", abs, err)
	}
	readers := max(4, runtime.GOMAXPROCS(0))
	s.rdb.SetMaxOpenConns(readers)
	s.rdb.SetMaxIdleConns(readers)
	s.rdb.SetConnMaxLifetime(0)
	if err := s.rdb.PingContext(ctx); err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", abs, err)
	}

	s.rstmts = newStmtCache(s.rdb)
	if err := s.startUsage(ctx); err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", abs, err)
	}
	ok = true
	return s, nil
}

func cloneValues(v url.Values) url.Values {
	c := url.Values{}
	for k, vs := range v {
		c[k] = append([]string(nil), vs...)
	}
	return c
}

// Close commits the queued usage increments, then closes both pools and the
// statements prepared on them. It waits for the writer to finish the transactions
// already queued; later ones fail.
func (s *Store) Close() error {
	usageErr := s.stopUsage()
	first, werr := s.stopWriter()
	if !first {
		return nil
	}
	cerr := s.stopCheckpointer()
	return errors.Join(werr, usageErr, cerr, s.rstmts.close(), s.rdb.Close(), s.wdb.Close())
}

// preparer is *sql.DB (the read pool: database/sql re-prepares on each pooled
// connection as needed) or *sql.Conn (the write connection).
type preparer interface {
	PrepareContext(ctx context.Context, query string) (*sql.Stmt, error)
}

// stmtCache prepares each distinct query once. The query strings are constants or
// built from a bounded set of fragments, so the cache stays small. Callers never
// hold a pooled connection while calling get, so preparing cannot starve the pool.
type stmtCache struct {
	db preparer
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

func newStmtCache(db preparer) *stmtCache {
	return &stmtCache{db: db, m: make(map[string]*sql.Stmt)}
}

func (c *stmtCache) get(ctx context.Context, q string) (*sql.Stmt, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.m[q]; ok {
		return st, nil
	}
	st, err := c.db.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	c.m[q] = st
	return st, nil
}

func (c *stmtCache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for q, st := range c.m {
		errs = append(errs, st.Close())
		delete(c.m, q)
	}
	return errors.Join(errs...)
}

// q runs prepared statements either directly on a pool or inside a transaction.
type q struct {
	ctx context.Context
	c   *stmtCache
	tx  *sql.Tx // nil: autocommit on the pool
}

func (x q) stmt(query string) (*sql.Stmt, error) {
	if x.tx != nil {
		// The write pool has exactly one connection and this transaction holds it:
		// preparing on the pool (the cache) would wait for that connection forever.
		// Prepare on the transaction; database/sql closes the statement at its end.
		return x.tx.PrepareContext(x.ctx, query)
	}
	return x.c.get(x.ctx, query)
}

func (x q) exec(query string, args ...any) (sql.Result, error) {
	st, err := x.stmt(query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(x.ctx, args...)
}

// execOne runs a statement that must change a row; a change to none is not_found
// naming what.
func (x q) execOne(what, query string, args ...any) error {
	res, err := x.exec(query, args...)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return notFound(what)
	}
	return nil
}

func (x q) query(query string, args ...any) (*sql.Rows, error) {
	st, err := x.stmt(query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(x.ctx, args...)
}

// row is *sql.Row that can also carry a prepare error.
type row struct {
	r   *sql.Row
	err error
}

func (r row) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	return r.r.Scan(dest...)
}

func (x q) queryRow(query string, args ...any) row {
	st, err := x.stmt(query)
	if err != nil {
		return row{err: err}
	}
	return row{r: st.QueryRowContext(x.ctx, args...)}
}

// read returns a q on the read pool, outside any transaction.
func (s *Store) read(ctx context.Context) q { return q{ctx: ctx, c: s.rstmts} }

// write runs fn in a write transaction (BEGIN IMMEDIATE: the write lock is taken
// up front, so a transaction that reads then writes never fails to upgrade) and
// commits when fn succeeds. Expired rows are purged in the same transaction at most
// once per purgeEvery.
func (s *Store) write(ctx context.Context, fn func(q) error) error {
	if s.cache != nil {
		// Whatever the outcome: a COMMIT that reports an error may still have
		// committed, and a spare invalidation only costs a few reads.
		defer s.cache.invalidate()
	}
	return s.tx(ctx, fn)
}

// writeIssue is write for transactions on issues and what hangs off them (labels,
// comments, tombstones) that never touch members, neither directly nor by a
// cascade (the schema has no trigger, and no foreign key from members to an
// issue-side table). fn calls touch with the id of every issue whose row it changes
// (its comment count included), before it changes it; after the transaction, only
// what the read cache keeps of those issues goes stale, whatever the outcome: a
// COMMIT that reports an error may still have committed. A transaction that fails
// inside fn is rolled back (its savepoint, or the whole batch), so the issues it did
// not get to name are unchanged.
func (s *Store) writeIssue(ctx context.Context, ws string, fn func(x q, touch func(issueID string)) error) error {
	var touched []string
	err := s.tx(ctx, func(x q) error {
		return fn(x, func(id string) { touched = append(touched, id) })
	})
	if s.cache != nil {
		for _, id := range touched {
			s.cache.touchIssue(ws, id)
		}
	}
	return err
}

// writeUncached is write for transactions that touch only tables the read cache
// never holds (usage, rate counters, idempotency records, autopilot runs, the OAuth
// server's records): they run on every call or every token request, and
// invalidating the cache with each would empty it under any load.
func (s *Store) writeUncached(ctx context.Context, fn func(q) error) error {
	return s.tx(ctx, fn)
}

// fail passes storage errors (shared/store) through and marks everything else as a
// failure of this backend; what a client sees of either is the guard's decision.
func (s *Store) fail(err error) error {
	if store.IsStorage(err) {
		return err
	}
	return fmt.Errorf("sqlite: %w", err)
}

func sqliteCode(err error) int {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code()
	}
	return 0
}

// isUnique reports a primary-key or unique violation.
func isUnique(err error) bool {
	c := sqliteCode(err)
	return c == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY || c == sqlite3.SQLITE_CONSTRAINT_UNIQUE
}

func isForeignKey(err error) bool { return sqliteCode(err) == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY }

// maybePurge deletes expired tombstones, idempotency records, usage event ids, rate
// counters and OAuth records. Lookups already ignore expired rows; this only bounds
// the file's size, so a failure is logged and the caller's transaction still commits.
func (s *Store) maybePurge(x q) {
	now := s.now().UnixNano()
	last := s.lastPurge.Load()
	if now-last < int64(purgeEvery) || !s.lastPurge.CompareAndSwap(last, now) {
		return
	}
	for _, p := range []struct {
		query string
		args  []any
	}{
		{`DELETE FROM tombstones WHERE expires_at <= ?`, []any{now}},
		{`DELETE FROM idempotency WHERE expires_at <= ?`, []any{now}},
		// A usage event marker is also what makes the replay of the audit log after
		// a crash exact (usage.go): the markers of events from the watermark on are
		// kept, however old, until a flush moves the watermark past them. Each of
		// those markers expires at least usageEventTTL after the watermark.
		{`DELETE FROM usage_events WHERE expires_at <= ?
			AND expires_at < (SELECT replay_from FROM usage_watermark WHERE id = 1) + ?`, []any{now, int64(usageEventTTL)}},
		{`DELETE FROM rate_counters WHERE expires_at <= ?`, []any{now}},
		{`DELETE FROM oauth_pending WHERE expires_at <= ?`, []any{now}},
		{`DELETE FROM oauth_codes WHERE expires_at <= ?`, []any{now}},
		{`DELETE FROM oauth_assertions WHERE expires_at <= ?`, []any{now}},
		// Rotated refresh hashes go with their grant (ON DELETE CASCADE).
		{`DELETE FROM oauth_grants WHERE expires_at <= ?`, []any{now}},
		{`DELETE FROM oauth_clients WHERE last_used_at <= ?`, []any{now - int64(store.OAuthClientLapse)}},
	} {
		// A savepoint would be needed to undo a half-done purge; each statement is
		// atomic on its own and none depends on another, so none is.
		if _, err := x.exec(p.query, p.args...); err != nil {
			s.log.WarnContext(x.ctx, "sqlite: purge of expired rows failed", "err", err)
			return
		}
	}
}

func nanos(t time.Time) int64 { return t.UnixNano() }

func fromNanos(n int64) time.Time { return time.Unix(0, n).UTC() }

// A nullable time column (used_at, revoked_at) holds NULL for a nil time, its
// nanoseconds otherwise.
func nullNanos(t *time.Time) any {
	if t == nil {
		return nil
	}
	return nanos(*t)
}

func fromNullNanos(n sql.NullInt64) *time.Time {
	if !n.Valid {
		return nil
	}
	t := fromNanos(n.Int64)
	return &t
}

// orNow returns t, or the store's clock when t is zero (callers may leave times unset).
func (s *Store) orNow(t time.Time) time.Time {
	if t.IsZero() {
		return s.now().UTC()
	}
	return t.UTC()
}

func notFound(what string) error { return store.NotFound(what) }
