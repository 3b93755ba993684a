package sqlite

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
)

// migrations are applied in order of their numeric prefix (0001_init.sql, ...). A
// file, once released, is never edited: changes go in a new file.
//
//go:embed migrations/*.sql
var migrations embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

func loadMigrations() ([]migration, error) {
	files, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, f := range files {
		base := strings.TrimPrefix(f, "migrations/")
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("sqlite: migration file %q lacks a numeric prefix", base)
		}
		b, err := migrations.ReadFile(f)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: base, sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i := 1; i < len(ms); i++ {
		if ms[i].version == ms[i-1].version {
			return nil, fmt.Errorf("sqlite: two migrations with version %d", ms[i].version)
		}
	}
	return ms, nil
}

// migrate brings the schema up to the newest embedded version in one IMMEDIATE
// transaction, so two processes opening a new file at once cannot both apply it.
// Its errors are plain (not apperr): they reach the operator, not a client.
func (s *Store) migrate(ctx context.Context) error {
	ms, err := loadMigrations()
	if err != nil {
		return err
	}
	return s.write(ctx, func(x q) error {
		// Migration scripts hold several statements: run them unprepared.
		exec := func(query string, args ...any) error {
			_, err := s.wconn.ExecContext(ctx, query, args...)
			return err
		}
		if err := exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
			version    INTEGER NOT NULL PRIMARY KEY,
			name       TEXT    NOT NULL,
			applied_at INTEGER NOT NULL)`); err != nil {
			return fmt.Errorf("sqlite: migrate: %w", err)
		}
		var current int
		if err := x.queryRow(`SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
			return fmt.Errorf("sqlite: migrate: %w", err)
		}
		if n := len(ms); n > 0 && current > ms[n-1].version {
			return fmt.Errorf("sqlite: database schema version %d is newer than this program's %d", current, ms[n-1].version)
		}
		for _, m := range ms {
			if m.version <= current {
				continue
			}
			if err := exec(m.sql); err != nil {
				return fmt.Errorf("sqlite: migration %s: %w", m.name, err)
			}
			if err := exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
				m.version, m.name, s.now().UnixNano()); err != nil {
				return fmt.Errorf("sqlite: migration %s: %w", m.name, err)
			}
			s.log.InfoContext(ctx, "sqlite: applied migration", "migration", m.name)
		}
		return nil
	})
}

// SchemaVersion returns the version of the newest applied migration.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := s.read(ctx).queryRow(`SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v)
	return v, err
}
