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

// bury records the deletion of the item kind/id for TombstoneTTL, so that a repeated
// delete answers as a replay (issueTombstone, commentTombstone), and returns the
// deletion's result. seq is an issue's number, nil for a comment.
func (s *Store) bury(x q, ws, kind, id string, seq any, owner string) (store.DeleteResult, error) {
	now := s.now().UTC()
	_, err := x.exec(`INSERT OR REPLACE INTO tombstones (workspace_id, id, kind, issue_seq, owner, deleted_at, expires_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, ws, id, kind, seq, owner, nanos(now), nanos(now.Add(TombstoneTTL)))
	return store.DeleteResult{Kind: kind, ID: id, DeletedAt: now, Owner: owner}, err
}

// deleteAnswer is a delete's answer once its transaction has ended: the refusal
// keepRefusal noted, as it is, before the transaction's error, before the result.
func deleteAnswer(out store.DeleteResult, refused, err error) (store.DeleteResult, error) {
	if refused != nil {
		return store.DeleteResult{}, refused
	}
	if err != nil {
		return store.DeleteResult{}, err
	}
	return out, nil
}

// keepRefusal returns allow, noting a refusal in *refused: the transaction would
// return it wrapped, and the caller is owed it as it is (store.DeleteCheck).
func keepRefusal(allow store.DeleteCheck, refused *error) store.DeleteCheck {
	return func(owner string) error {
		*refused = allow.Allow(owner)
		return *refused
	}
}
