package dynamo

import (
	"context"
	"time"

	"github.com/aacworkflow/aacmcp/shared/store"
)

// CrashAfterCommentTombstone does step (1) of DeleteComment alone, as a delete that
// crashed right after it would leave things.
func CrashAfterCommentTombstone(ctx context.Context, s *Store, ws, commentID, owner string, at time.Time) error {
	_, _, err := s.putTombstone(ctx, goneCommentPK(ws, commentID),
		store.DeleteResult{Kind: "comment", ID: commentID, DeletedAt: at, Owner: owner}, "test")
	return err
}
