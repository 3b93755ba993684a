package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/aacworkflow/aacmcp/shared/store"
)

var _ store.Approvals = (*Store)(nil)

// approvalRetention keeps a spent or expired approval readable a while after it
// expires, so that its page says what became of it rather than "unknown link".
const approvalRetention = time.Hour

// PutApproval implements store.Approvals. The read cache holds no approvals, so
// these writes need not empty it.
func (s *Store) PutApproval(ctx context.Context, a store.Approval) error {
	if a.Workspace == "" || a.Binding == "" || a.Nonce == "" {
		return store.Invalid("workspace, binding and nonce are required")
	}
	return s.writeUncached(ctx, func(x q) error {
		if _, err := x.exec(`DELETE FROM approvals WHERE expires_at <= ?`, nanos(s.orNow(time.Time{}).Add(-approvalRetention))); err != nil {
			return err
		}
		_, err := x.exec(`INSERT INTO approvals (workspace_id, binding, nonce, token, user_id, principal, client_id, tool, target, status, requested_at, expires_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (workspace_id, binding) DO UPDATE SET nonce = excluded.nonce, token = excluded.token, user_id = excluded.user_id,
				principal = excluded.principal, client_id = excluded.client_id, tool = excluded.tool, target = excluded.target,
				status = excluded.status, decided_by = '', decided_from = '', requested_at = excluded.requested_at, decided_at = 0,
				expires_at = excluded.expires_at`,
			a.Workspace, a.Binding, a.Nonce, a.Token, a.User, a.Principal, a.ClientID, a.Tool, a.Target,
			string(store.ApprovalPending), nanos(a.RequestedAt), nanos(a.ExpiresAt))
		return err
	})
}

// GetApproval implements store.Approvals.
func (s *Store) GetApproval(ctx context.Context, ws, binding string) (store.Approval, error) {
	a := store.Approval{Workspace: ws, Binding: binding}
	var status string
	var req, dec, exp int64
	err := s.read(ctx).queryRow(`SELECT nonce, token, user_id, principal, client_id, tool, target, status, decided_by, decided_from,
		requested_at, decided_at, expires_at FROM approvals WHERE workspace_id = ? AND binding = ?`, ws, binding).
		Scan(&a.Nonce, &a.Token, &a.User, &a.Principal, &a.ClientID, &a.Tool, &a.Target, &status, &a.DecidedBy, &a.DecidedFrom, &req, &dec, &exp)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Approval{}, notFound("approval")
	}
	if err != nil {
		return store.Approval{}, s.fail(err)
	}
	a.Status, a.RequestedAt, a.ExpiresAt = store.ApprovalStatus(status), fromNanos(req), fromNanos(exp)
	if dec != 0 {
		a.DecidedAt = fromNanos(dec)
	}
	return a, nil
}

// DecideApproval implements store.Approvals: one conditional UPDATE; when it
// changes nothing, a read in the same transaction tells not_found from conflict.
func (s *Store) DecideApproval(ctx context.Context, ws, binding, nonce string, status store.ApprovalStatus, by, from string, at time.Time) error {
	if status != store.ApprovalGranted && status != store.ApprovalDenied {
		return store.Invalid("an approval is decided granted or denied")
	}
	return s.writeUncached(ctx, func(x q) error {
		res, err := x.exec(`UPDATE approvals SET status = ?, decided_by = ?, decided_from = ?, decided_at = ?
			WHERE workspace_id = ? AND binding = ? AND nonce = ? AND status = ? AND expires_at > ?`,
			string(status), by, from, nanos(at), ws, binding, nonce, string(store.ApprovalPending), nanos(at))
		if err != nil {
			return err
		}
		return approvalChanged(x, res, ws, binding)
	})
}

// SpendApproval implements store.Approvals.
func (s *Store) SpendApproval(ctx context.Context, ws, binding, nonce string, at time.Time) (store.Approval, error) {
	var out store.Approval
	err := s.writeUncached(ctx, func(x q) error {
		var status string
		var req, dec, exp int64
		err := x.queryRow(`SELECT nonce, token, user_id, principal, client_id, tool, target, status, decided_by, decided_from,
			requested_at, decided_at, expires_at FROM approvals WHERE workspace_id = ? AND binding = ?`, ws, binding).
			Scan(&out.Nonce, &out.Token, &out.User, &out.Principal, &out.ClientID, &out.Tool, &out.Target, &status, &out.DecidedBy, &out.DecidedFrom, &req, &dec, &exp)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("approval")
		}
		if err != nil {
			return err
		}
		out.Workspace, out.Binding, out.Status = ws, binding, store.ApprovalStatus(status)
		out.RequestedAt, out.ExpiresAt = fromNanos(req), fromNanos(exp)
		if dec != 0 {
			out.DecidedAt = fromNanos(dec)
		}
		if (nonce != "" && out.Nonce != nonce) || (out.Status != store.ApprovalGranted && out.Status != store.ApprovalDenied) || !at.Before(out.ExpiresAt) {
			return store.ErrConflict
		}
		// The write transaction holds the lock from BEGIN IMMEDIATE, so nothing
		// changes the row between the read above and this update.
		_, err = x.exec(`UPDATE approvals SET status = ? WHERE workspace_id = ? AND binding = ?`, string(store.ApprovalSpent), ws, binding)
		return err
	})
	if err != nil {
		return store.Approval{}, s.fail(err)
	}
	return out, nil
}

// approvalChanged turns an UPDATE that matched no row into not_found (no row for
// the binding) or conflict (a row in another state).
func approvalChanged(x q, res sql.Result, ws, binding string) error {
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	var one int
	err = x.queryRow(`SELECT 1 FROM approvals WHERE workspace_id = ? AND binding = ?`, ws, binding).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return notFound("approval")
	}
	if err != nil {
		return err
	}
	return store.ErrConflict
}
