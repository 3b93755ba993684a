package dynamo

import (
	"context"
	"errors"
	"strings"
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

// CrashRotation does the first steps of UpdateOAuthGrantRotate from the grant's
// current hash to newHash and stops, as a call that crashed would: after claiming the
// new hash (marked false) or also after marking the old one rotated (marked true).
func CrashRotation(ctx context.Context, s *Store, grantID, newHash string, marked bool) error {
	g, _, err := s.getGrant(ctx, grantID, "test")
	if err != nil || g == nil {
		return errors.Join(err, errors.New("no grant"))
	}
	old := g.RefreshHash
	if err := s.putRefresh(ctx, newHash, *g, g.ExpiresAt, nonce(), "test"); err != nil {
		return err
	}
	if !marked {
		return nil
	}
	return s.markRotated(ctx, old, *g, s.now(), "test")
}

// CrashMemberUpdate writes the lookups UpdateMember would write for m and stops before
// the member record, as a call that crashed there would.
func CrashMemberUpdate(ctx context.Context, s *Store, m store.Member) error {
	n := nonce()
	if err := s.putMemberLookup(ctx, memberUserPK(m.UserID), m.WorkspaceID, m, n, "test"); err != nil {
		return err
	}
	return s.putMemberLookup(ctx, memberEmailPK(strings.ToLower(m.Email)), emailLookupSK(m.WorkspaceID, m.UserID), m, n, "test")
}

// MemberEmailPK is the partition key of an e-mail's member lookups.
func MemberEmailPK(email string) string { return memberEmailPK(email) }
