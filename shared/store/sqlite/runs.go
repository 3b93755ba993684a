package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/aacworkflow/aacmcp/shared/store"
)

// CreateAutopilotRun implements store.Writer. r.IssueID may be an id or a key; the
// stored run carries the issue's id and key. Empty ID, Status and times are filled in.
func (s *Store) CreateAutopilotRun(ctx context.Context, ws string, r store.AutopilotRun) (store.AutopilotRun, error) {
	if len(r.ID) > maxCallerID {
		return store.AutopilotRun{}, store.Invalid("run id is too long")
	}
	r = r.WithDefaults(s.now())
	err := s.writeUncached(ctx, func(x q) error {
		is, _, err := getIssue(x, ws, r.IssueID)
		if err != nil {
			return err
		}
		r.IssueID, r.IssueKey = is.ID, is.Key
		_, err = x.exec(`INSERT INTO autopilot_runs (workspace_id, id, issue_id, issue_key, status, instructions,
			requested_by, attempts, error, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			ws, r.ID, r.IssueID, r.IssueKey, r.Status, r.Instructions, r.RequestedBy, r.Attempts, r.Error,
			nanos(r.CreatedAt), nanos(r.UpdatedAt))
		if isUnique(err) {
			return store.Errorf(store.ErrAlreadyExists, "run id already used")
		}
		return err
	})
	if err != nil {
		return store.AutopilotRun{}, err
	}
	return r, nil
}

// UpdateAutopilotRun implements store.Writer.
func (s *Store) UpdateAutopilotRun(ctx context.Context, ws string, r store.AutopilotRun) (store.AutopilotRun, error) {
	updated := s.orNow(r.UpdatedAt)
	var out store.AutopilotRun
	err := s.writeUncached(ctx, func(x q) error {
		var created, upd int64
		err := x.queryRow(`UPDATE autopilot_runs SET status = ?, attempts = ?, error = ?, updated_at = ?
			WHERE workspace_id = ? AND id = ?
			RETURNING id, issue_id, issue_key, status, instructions, requested_by, attempts, error, created_at, updated_at`,
			r.Status, r.Attempts, r.Error, nanos(updated), ws, r.ID).
			Scan(&out.ID, &out.IssueID, &out.IssueKey, &out.Status, &out.Instructions, &out.RequestedBy,
				&out.Attempts, &out.Error, &created, &upd)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("autopilot run")
		}
		out.CreatedAt, out.UpdatedAt = fromNanos(created), fromNanos(upd)
		return err
	})
	if err != nil {
		return store.AutopilotRun{}, err
	}
	return out, nil
}
