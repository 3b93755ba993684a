package dynamo

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/aacworkflow/aacmcp/shared/store"
)

// CommentDeleteStep is how far CrashCommentDelete goes.
type CommentDeleteStep int

const (
	CommentClaimed  CommentDeleteStep = iota // the lookup item claimed, nothing else
	CommentCounted                           // and comment_count decremented
	CommentFinished                          // and the comment and tombstone written: the lookup item's delete lost
)

// CrashCommentDelete runs DeleteComment's steps up to step, with at as the result's
// time, and stops, as a delete that crashed there would.
func CrashCommentDelete(ctx context.Context, s *Store, ws, commentID string, at time.Time, step CommentDeleteStep) error {
	it, err := s.get(ctx, s.table, key(commentRefPK(ws, commentID), skMeta), "test")
	if err != nil || it == nil {
		return errors.Join(err, errors.New("no comment lookup"))
	}
	r, err := decodeCommentRef(it)
	if err != nil {
		return err
	}
	res := store.DeleteResult{Kind: "comment", ID: commentID, DeletedAt: at, Owner: r.author}
	if _, n, err := s.claimCommentDelete(ctx, ws, commentID, r, res); err != nil || n == "" {
		return errors.Join(err, errors.New("not claimed"))
	}
	switch step {
	case CommentCounted:
		_, err = s.countComment(ctx, ws, r.issueID, "-"+commentID, -1)
	case CommentFinished:
		err = s.finishCommentDelete(ctx, ws, commentID, r.issueID, res)
	}
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

// CrashIssueDelete runs DeleteIssue's second step for issue id (the id's tombstone,
// with at as the result's time, and the children with their lookup items deleted)
// and stops, as a delete that crashed there would: the issue item is still there.
func CrashIssueDelete(ctx context.Context, s *Store, ws, id, owner string, at time.Time) error {
	if _, _, err := s.putTombstone(ctx, goneIssuePK(ws, id), store.DeleteResult{Kind: "issue", ID: id, DeletedAt: at, Owner: owner}, "test"); err != nil {
		return err
	}
	children, err := s.queryAll(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		KeyConditionExpression:    aws.String("PK = :pk AND begins_with(SK, :c)"),
		ExpressionAttributeValues: item{":pk": avS(issuePK(ws, id)), ":c": avS(skComment)},
	}, "test")
	if err != nil {
		return err
	}
	var keys []item
	for _, c := range children {
		d := decoder{it: c}
		keys = append(keys, key(d.str(attrPK), d.str(attrSK)), key(commentRefPK(ws, d.str("id")), skMeta))
	}
	return s.batchDelete(ctx, keys, "test")
}

// PutIssueKeyItem writes the key item of issue id back, as the key item of a deleted
// issue whose background delete was lost would be left.
func PutIssueKeyItem(ctx context.Context, s *Store, ws, issueKey, id string) error {
	_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(s.table),
		Item:      item{attrPK: avS(issueKeyPK(ws, issueKey)), attrSK: avS(skMeta), "issue_id": avS(id)},
	})
	return err
}
