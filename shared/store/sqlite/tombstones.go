package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// GetTombstone implements store.Reader.
func (s *Store) GetTombstone(ctx context.Context, ws, kind, idOrKey string) (store.DeleteResult, error) {
	switch kind {
	case "issue":
		res, err := s.issueTombstone(s.read(ctx), ws, idOrKey)
		if err != nil {
			return store.DeleteResult{}, s.fail(err)
		}
		return res, nil
	case "comment":
		res := store.DeleteResult{Kind: "comment", Replay: true}
		var deleted int64
		err := s.read(ctx).queryRow(`SELECT id, owner, deleted_at FROM tombstones
			WHERE workspace_id = ? AND kind = 'comment' AND id = ? AND expires_at > ?`,
			ws, idOrKey, nanos(s.now())).Scan(&res.ID, &res.Owner, &deleted)
		if errors.Is(err, sql.ErrNoRows) {
			return store.DeleteResult{}, notFound("comment")
		}
		if err != nil {
			return store.DeleteResult{}, s.fail(err)
		}
		res.DeletedAt = fromNanos(deleted)
		return res, nil
	default:
		return store.DeleteResult{}, apperr.Internal(fmt.Errorf("sqlite: GetTombstone of unknown kind %q", kind))
	}
}
