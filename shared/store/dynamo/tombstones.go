package dynamo

import (
	"context"
	"fmt"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// GetTombstone implements store.Reader: one consistent GetItem of the tombstone under
// the issue's id, its key, or the comment's id.
func (s *Store) GetTombstone(ctx context.Context, ws, kind, idOrKey string) (store.DeleteResult, error) {
	const op = "GetTombstone"
	if checkWS(ws) != nil {
		return store.DeleteResult{}, notFound(kind)
	}
	var pk string
	switch kind {
	case "issue":
		if prefix, n, ok := store.ParseIssueKey(idOrKey); ok {
			pk = goneKeyPK(ws, store.IssueKey(prefix, n))
		} else {
			pk = goneIssuePK(ws, idOrKey)
		}
	case "comment":
		pk = goneCommentPK(ws, idOrKey)
	default:
		return store.DeleteResult{}, apperr.Internal(fmt.Errorf("dynamo: GetTombstone of unknown kind %q", kind))
	}
	if !validPart(idOrKey) {
		return store.DeleteResult{}, notFound(kind)
	}
	it, err := s.get(ctx, s.table, key(pk, skMeta), op)
	if err != nil {
		return store.DeleteResult{}, err
	}
	r, ok, err := s.liveTombstone(it, kind)
	if err != nil {
		return store.DeleteResult{}, fail(op, err)
	}
	if !ok {
		return store.DeleteResult{}, notFound(kind)
	}
	return r, nil
}
