package sqlite

import (
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/store"
)

// TestOAuthMigrationKeepsRows opens a file written by the schema before 0003: its
// members and tokens gain an empty e-mail, client and grant, and read as before.
func TestOAuthMigrationKeepsRows(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "db.sqlite")
	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE schema_migrations (
		version INTEGER NOT NULL PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.version >= 3 {
			break
		}
		if _, err := db.ExecContext(ctx, m.sql); err != nil {
			t.Fatalf("%s: %v", m.name, err)
		}
		if _, err := db.ExecContext(ctx, `INSERT INTO schema_migrations VALUES (?, ?, 0)`, m.version, m.name); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []string{
		`INSERT INTO workspaces (id, key, name, created_at) VALUES ('ws', 'AAC', 'ws', 1)`,
		`INSERT INTO members (workspace_id, user_id, role, created_at) VALUES ('ws', 'alice', 'admin', 1)`,
		`INSERT INTO tokens (hash, token_id, name, workspace_id, user_id, scopes, created_at, expires_at)
			VALUES ('h', 'tok_1', 'old', 'ws', 'alice', '["issues:read"]', 1, 9000000000000000000)`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	s := openAt(t, path)
	if v, err := s.SchemaVersion(ctx); err != nil || v < 3 {
		t.Fatalf("schema version %d (%v), want at least 3", v, err)
	}
	m, err := s.GetMember(ctx, "ws", "alice")
	if err != nil || m.Role != store.RoleAdmin || m.Email != "" {
		t.Errorf("member after the migration = %+v %v", m, err)
	}
	tok, err := s.GetTokenByHash(ctx, "h")
	if err != nil || tok.TokenID != "tok_1" || tok.ClientID != "" || tok.GrantID != "" {
		t.Errorf("token after the migration = %+v %v", tok, err)
	}
	if list, err := s.ListMembersByEmail(ctx, ""); err != nil || len(list) != 0 {
		t.Errorf(`ListMembersByEmail("") after the migration = %+v %v, want none`, list, err)
	}
}

// TestOAuthRecordsPurged: expired OAuth records, with a grant's rotated hashes and
// lapsed clients, leave the file at the next purge; live ones stay.
func TestOAuthRecordsPurged(t *testing.T) {
	clk := &fakeClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	s := openAt(t, filepath.Join(t.TempDir(), "db.sqlite"), WithClock(clk.now))
	ctx := t.Context()
	now := clk.now()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.CreateOAuthClient(ctx, store.OAuthClient{ClientID: "old", CreatedAt: now}))
	must(s.CreateOAuthPending(ctx, store.OAuthPending{ID: "p", ExpiresAt: now.Add(10 * time.Minute)}))
	must(s.CreateOAuthCode(ctx, store.OAuthCode{Hash: "c", ExpiresAt: now.Add(time.Minute)}))
	must(s.CreateOAuthAssertion(ctx, "a", now.Add(5*time.Minute)))
	must(s.CreateOAuthAssertion(ctx, "a-live", now.Add(store.OAuthClientLapse+48*time.Hour)))
	must(s.CreateOAuthGrant(ctx, store.OAuthGrant{ID: "g", RefreshHash: "r1", ExpiresAt: now.Add(time.Hour)}))
	_, err := s.UpdateOAuthGrantRotate(ctx, store.OAuthRotation{GrantID: "g", OldRefreshHash: "r1", NewRefreshHash: "r2"})
	must(err)
	must(s.CreateOAuthGrant(ctx, store.OAuthGrant{ID: "live", ExpiresAt: now.Add(store.OAuthClientLapse + 48*time.Hour)}))

	clk.add(store.OAuthClientLapse + time.Hour)
	if _, err := s.GetOAuthClient(ctx, "old"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("lapsed client: %v, want not_found", err)
	}
	// A write after purgeEvery purges.
	must(s.CreateOAuthPending(ctx, store.OAuthPending{ID: "next", ExpiresAt: clk.now().Add(time.Minute)}))
	for table, want := range map[string]int{"oauth_clients": 0, "oauth_pending": 1, "oauth_codes": 0, "oauth_grants": 1, "oauth_rotated": 0, "oauth_assertions": 1} {
		var n int
		if err := s.rdb.QueryRowContext(ctx, `SELECT count(*) FROM `+table).Scan(&n); err != nil || n != want {
			t.Errorf("%s holds %d rows after the purge (%v), want %d", table, n, err, want)
		}
	}
}

// TestCreateOverExpiredRecord: an expired record not yet purged does not block a new
// one under its id, as on a backend whose TTL already dropped it; a live one does.
func TestCreateOverExpiredRecord(t *testing.T) {
	clk := &fakeClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	s := openAt(t, filepath.Join(t.TempDir(), "db.sqlite"), WithClock(clk.now))
	ctx := t.Context()
	now := clk.now()
	creates := []struct {
		name   string
		create func(name string, expires time.Time) error
		get    func() (string, error)
	}{
		{"pending", func(name string, exp time.Time) error {
			return s.CreateOAuthPending(ctx, store.OAuthPending{ID: "id", ClientName: name, ExpiresAt: exp})
		}, func() (string, error) { p, err := s.GetOAuthPending(ctx, "id"); return p.ClientName, err }},
		{"code", func(name string, exp time.Time) error {
			return s.CreateOAuthCode(ctx, store.OAuthCode{Hash: "id", ClientID: name, ExpiresAt: exp})
		}, func() (string, error) { c, err := s.ConsumeOAuthCode(ctx, "id", clk.now()); return c.ClientID, err }},
		{"grant", func(name string, exp time.Time) error {
			return s.CreateOAuthGrant(ctx, store.OAuthGrant{ID: "id", ClientName: name, ExpiresAt: exp})
		}, func() (string, error) { g, err := s.GetOAuthGrant(ctx, "id"); return g.ClientName, err }},
		{"client", func(name string, exp time.Time) error {
			return s.CreateOAuthClient(ctx, store.OAuthClient{ClientID: "id", Name: name, CreatedAt: exp.Add(-store.OAuthClientLapse)})
		}, func() (string, error) { c, err := s.GetOAuthClient(ctx, "id"); return c.Name, err }},
	}
	for _, tc := range creates {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.create("first", now.Add(-time.Second)); err != nil {
				t.Fatal(err)
			}
			if err := tc.create("second", now.Add(time.Hour)); err != nil {
				t.Fatalf("create over an expired record: %v", err)
			}
			if err := tc.create("third", now.Add(time.Hour)); !errors.Is(err, store.ErrAlreadyExists) {
				t.Errorf("create over a live record: %v, want conflict", err)
			}
			if name, err := tc.get(); err != nil || name != "second" {
				t.Errorf("read = %q %v, want second", name, err)
			}
		})
	}
}
