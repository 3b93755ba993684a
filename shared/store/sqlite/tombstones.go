package sqlite

import (
	"database/sql"
	"errors"

	"github.com/aacworkflow/aacmcp/shared/store"
)

// commentTombstone answers a repeated delete of a comment; not_found when no comment
// of that id was deleted in ws within the tombstone TTL.
func (s *Store) commentTombstone(x q, ws, commentID string) (store.DeleteResult, error) {
	res := store.DeleteResult{Kind: "comment", Replay: true}
	var deleted int64
	err := x.queryRow(`SELECT id, owner, deleted_at FROM tombstones
		WHERE workspace_id = ? AND kind = 'comment' AND id = ? AND expires_at > ?`,
		ws, commentID, nanos(s.now())).Scan(&res.ID, &res.Owner, &deleted)
	if errors.Is(err, sql.ErrNoRows) {
		return store.DeleteResult{}, notFound("comment")
	}
	if err != nil {
		return store.DeleteResult{}, err
	}
	res.DeletedAt = fromNanos(deleted)
	return res, nil
}

// keepRefusal returns allow, noting a refusal in *refused: the transaction would
// return it wrapped, and the caller is owed it as it is (store.DeleteCheck).
func keepRefusal(allow store.DeleteCheck, refused *error) store.DeleteCheck {
	return func(owner string) error {
		*refused = allow.Allow(owner)
		return *refused
	}
}
