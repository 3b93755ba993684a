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

// UsageGuard returns the event ids in the guard set (evs) of one usage counter item.
func UsageGuard(ctx context.Context, s *Store, ws, date, tool string) ([]string, error) {
	it, err := s.get(ctx, s.table, key(usagePK(ws), usageSK(date, tool)), "test")
	if err != nil || it == nil {
		return nil, err
	}
	d := decoder{it: it}
	evs := d.set("evs")
	return evs, d.err
}

// WithAPI swaps the client a store calls (tests that hold a call back).
func WithAPI(wrap func(API) API) Option { return func(s *Store) { s.db = wrap(s.db) } }
