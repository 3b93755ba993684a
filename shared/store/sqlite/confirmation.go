package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/aacworkflow/aacmcp/shared/store"
)

var _ store.Confirmations = (*Store)(nil)

// DestructiveConfirmation implements store.Confirmations.
func (s *Store) DestructiveConfirmation(ctx context.Context, ws string) (string, error) {
	var p string
	err := s.read(ctx).queryRow(`SELECT destructive_confirmation FROM workspaces WHERE id = ?`, ws).Scan(&p)
	if errors.Is(err, sql.ErrNoRows) {
		return "", notFound("workspace")
	}
	if err != nil {
		return "", s.fail(err)
	}
	if p == "" {
		p = store.DefaultDestructiveConfirmation
	}
	return p, nil
}

// SetDestructiveConfirmation implements store.Confirmations.
func (s *Store) SetDestructiveConfirmation(ctx context.Context, ws, policy string) error {
	if policy == "" {
		return store.Invalid("destructive confirmation policy is required")
	}
	return s.write(ctx, func(x q) error {
		res, err := x.exec(`UPDATE workspaces SET destructive_confirmation = ? WHERE id = ?`, policy, ws)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return notFound("workspace")
		}
		return nil
	})
}

// ConsumeConfirmationNonce implements store.Confirmations. The upsert's WHERE
// lets an expired row be taken over; a live one leaves the insert a no-op, which
// RowsAffected reports as 0.
func (s *Store) ConsumeConfirmationNonce(ctx context.Context, ws, nonce string, expires time.Time) error {
	if ws == "" || nonce == "" {
		return store.Invalid("workspace and nonce are required")
	}
	now := nanos(s.orNow(time.Time{}))
	// The read cache holds no nonces, so this write need not empty it.
	return s.writeUncached(ctx, func(x q) error {
		if _, err := x.exec(`DELETE FROM confirmation_nonces WHERE expires_at <= ? AND NOT (workspace_id = ? AND nonce = ?)`, now, ws, nonce); err != nil {
			return err
		}
		res, err := x.exec(`INSERT INTO confirmation_nonces (workspace_id, nonce, expires_at) VALUES (?, ?, ?)
			ON CONFLICT (workspace_id, nonce) DO UPDATE SET expires_at = excluded.expires_at
			WHERE confirmation_nonces.expires_at <= ?`, ws, nonce, nanos(expires), now)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if n == 0 {
			return store.ErrNonceUsed
		}
		return nil
	})
}

var _ store.WorkspaceLister = (*Store)(nil)

// ListWorkspaces implements store.WorkspaceLister.
func (s *Store) ListWorkspaces(ctx context.Context) ([]store.WorkspaceSettings, error) {
	rows, err := s.read(ctx).query(`SELECT id, key, name, created_at, destructive_confirmation FROM workspaces ORDER BY id`)
	if err != nil {
		return nil, s.fail(err)
	}
	defer rows.Close()
	out := []store.WorkspaceSettings{}
	for rows.Next() {
		var w store.WorkspaceSettings
		var created int64
		if err := rows.Scan(&w.ID, &w.Key, &w.Name, &created, &w.DestructiveConfirmation); err != nil {
			return nil, s.fail(err)
		}
		w.CreatedAt = fromNanos(created)
		if w.DestructiveConfirmation == "" {
			w.DestructiveConfirmation = store.DefaultDestructiveConfirmation
		}
		out = append(out, w)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail(err)
	}
	return out, nil
}
