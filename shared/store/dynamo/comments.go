package dynamo

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aacworkflow/aacmcp/shared/store"
)

// encodeComment is comment c's item in its issue's partition, marked with nonce n,
// the writing call's; decodeComment reads it.
func encodeComment(ws string, c store.Comment, n string) item {
	it := key(issuePK(ws, c.IssueID), skComment+c.ID)
	it["id"], it["issue_id"], it["author"], it["body"] = avS(c.ID), avS(c.IssueID), avS(c.Author), avS(c.Body)
	it["created_at"], it["nonce"] = avTime(c.CreatedAt), avS(n)
	return it
}

func decodeComment(it item) (store.Comment, error) {
	d := decoder{it: it}
	c := store.Comment{
		ID:        d.str("id"),
		IssueID:   d.str("issue_id"),
		Author:    d.str("author"),
		Body:      d.str("body"),
		CreatedAt: d.time("created_at"),
	}
	return c, d.err
}

// CreateComment implements store.Writer.
//
// Writes (1) the comment's lookup item, which claims the id, then (2) the comment and
// (3) the issue's comment_count together: two round trips. Both puts carry a per-call
// nonce so that a retried request passes its own condition, while another call
// reusing the id is a conflict. A crash after (1) alone leaves a lookup item that
// points at no comment (reads as not_found); with (3) but not (2), a count one high
// and no comment; with (2) but not (3), a comment the count lacks (known limits: no
// transactions; the count is off by one until the issue is deleted). The comment is
// never written without its lookup item, so every comment can be found and deleted
// by its id. One TransactWriteItems of all three would be one round trip and atomic
// (docs/decisions.md); dynalite cannot run it.
func (s *Store) CreateComment(ctx context.Context, ws, issueIDOrKey string, in store.NewComment) (store.Comment, error) {
	const op = "CreateComment"
	if in.ID == "" {
		in.ID = store.NewULID()
	} else if !validPart(in.ID) {
		return store.Comment{}, store.Invalid("comment id must not be empty or contain '#'")
	}
	is, _, err := s.loadIssue(ctx, ws, issueIDOrKey, op)
	if err != nil {
		return store.Comment{}, err
	}
	c := store.Comment{ID: in.ID, IssueID: is.ID, Author: in.Author, Body: in.Body, CreatedAt: s.orNow(in.CreatedAt)}
	n := nonce()
	ref := key(commentRefPK(ws, c.ID), skMeta)
	ref["issue_id"], ref["author"], ref["nonce"] = avS(c.IssueID), avS(c.Author), avS(n)
	body := encodeComment(ws, c, n)
	put := func(it item) error { return s.claim(ctx, s.table, it, n, "comment id already used", op) }
	// The lookup item claims the id; only its winner writes the rest.
	if err := put(ref); err != nil {
		return store.Comment{}, err
	}
	var found bool
	errs := together(func() error { return put(body) }, func() (err error) {
		found, err = s.countComment(ctx, ws, c.IssueID, "+"+c.ID, 1)
		return err
	})
	bodyErr, countErr := errs[0], errs[1]
	switch {
	case bodyErr == nil && countErr == nil && found:
	case countErr == nil && !found, bodyErr != nil:
		// The issue was deleted between our read and the count, or the body could not
		// be written: take the comment back, and the count if it was made.
		if countErr == nil && found {
			if _, err := s.countComment(ctx, ws, c.IssueID, "-"+c.ID, -1); err != nil {
				return store.Comment{}, err
			}
			s.clearCountOp(ctx, ws, c.IssueID, "-"+c.ID)
		}
		if err := s.batchDelete(ctx, []item{body, key(commentRefPK(ws, c.ID), skMeta)}, op); err != nil {
			return store.Comment{}, err
		}
		if bodyErr != nil {
			return store.Comment{}, bodyErr
		}
		return store.Comment{}, notFound("issue")
	default:
		return store.Comment{}, countErr
	}
	s.clearCountOp(ctx, ws, c.IssueID, "+"+c.ID)
	s.markCommentComplete(ctx, ws, c.ID, n)
	return c, nil
}

// markCommentComplete records on a comment's lookup item, after the answer
// (Store.later), that the comment and its count were both written: DeleteComment
// may then trust the lookup alone. Without the mark (the write lost, a create still
// running or crashed, an item from before the mark existed) a delete reads the
// comment first, one round trip more. The condition keeps it to the lookup this call
// wrote.
func (s *Store) markCommentComplete(ctx context.Context, ws, commentID, n string) {
	s.laterUpdate(ctx, "mark a comment's lookup complete", dynamodb.UpdateItemInput{
		Key:                       key(commentRefPK(ws, commentID), skMeta),
		UpdateExpression:          aws.String("SET #done = :t"),
		ConditionExpression:       aws.String("nonce = :n"),
		ExpressionAttributeNames:  map[string]string{"#done": refComplete},
		ExpressionAttributeValues: item{":t": &types.AttributeValueMemberBOOL{Value: true}, ":n": avS(n)},
	}, "comment", commentID)
}

// countComment adds delta to the issue's comment_count exactly once for the operation
// opID ("+<comment>" for a create, "-<comment>" for a delete).
//
// A plain ADD retried by the SDK after a lost response would count twice. The update
// therefore also adds opID to the issue's cc_ops set and is conditioned on its absence:
// a retry fails the condition and the re-read finds opID, i.e. already counted. The set
// only holds operations in flight: clearCountOp removes opID once the caller no longer
// needs the guard. found is false when the issue no longer exists.
func (s *Store) countComment(ctx context.Context, ws, issueID, opID string, delta int64) (found bool, err error) {
	const op = "comment_count"
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       key(issuePK(ws, issueID), skMeta),
		UpdateExpression:          aws.String("ADD comment_count :d, cc_ops :ops"),
		ConditionExpression:       aws.String("attribute_exists(PK) AND NOT contains(cc_ops, :op)"),
		ExpressionAttributeValues: item{":d": avN(delta), ":ops": avSet(opID), ":op": avS(opID)},
	})
	if err == nil {
		return true, nil
	}
	if !conditionFailed(err) {
		return false, fail(op, err)
	}
	it, err := s.get(ctx, s.table, key(issuePK(ws, issueID), skMeta), op)
	if err != nil {
		return false, err
	}
	if it == nil {
		return false, nil
	}
	d := decoder{it: it}
	if slices.Contains(d.set("cc_ops"), opID) {
		return true, nil // applied already: our own request, retried
	}
	return false, fail(op, errors.Join(d.err, errors.New("comment_count condition failed without a reason")))
}

// clearCountOp drops opID from the in-flight set, after the caller has returned
// (Store.later): nobody needs to wait for it. Failure only leaves a few bytes in the
// issue item, so it is logged, not returned. The condition keeps the update from
// recreating an issue deleted meanwhile.
func (s *Store) clearCountOp(ctx context.Context, ws, issueID, opID string) {
	s.laterUpdate(ctx, "clear a comment_count guard", dynamodb.UpdateItemInput{
		Key:                       key(issuePK(ws, issueID), skMeta),
		UpdateExpression:          aws.String("DELETE cc_ops :ops"),
		ConditionExpression:       aws.String("attribute_exists(PK)"),
		ExpressionAttributeValues: item{":ops": avSet(opID)},
	}, "issue", issueID, "op", opID)
}

// GetComment implements store.Reader. The comment and its issue are read together so
// that a comment left behind by a racing issue delete is not found.
func (s *Store) GetComment(ctx context.Context, ws, commentID string) (store.Comment, error) {
	const op = "GetComment"
	if checkWS(ws) != nil || !validPart(commentID) {
		return store.Comment{}, notFound("comment")
	}
	issueID, err := s.follow(ctx, s.table, key(commentRefPK(ws, commentID), skMeta), "issue_id", "comment", op)
	if err != nil {
		return store.Comment{}, err
	}
	ck, ik := key(issuePK(ws, issueID), skComment+commentID), key(issuePK(ws, issueID), skMeta)
	got, err := s.batchGet(ctx, s.table, []item{ck, ik}, op)
	if err != nil {
		return store.Comment{}, err
	}
	it := got[keyID(issuePK(ws, issueID), skComment+commentID)]
	if it == nil || got[keyID(issuePK(ws, issueID), skMeta)] == nil {
		return store.Comment{}, notFound("comment")
	}
	c, err := decodeComment(it)
	return c, fail(op, err)
}

// commentAttrs are the attributes of a comment page's start key.
var commentAttrs = []string{attrPK, attrSK}

// ListComments implements store.Reader: oldest first (ULIDs sort by time).
func (s *Store) ListComments(ctx context.Context, ws, issueIDOrKey string, p store.PageRequest) (store.CommentPage, error) {
	const op = "ListComments"
	if err := checkWS(ws); err != nil {
		return store.CommentPage{}, notFound("issue")
	}
	// A key costs a read for its issue id; an id is used as it is.
	id, issueKey, err := s.resolveIssue(ctx, ws, issueIDOrKey, op)
	if err != nil {
		return store.CommentPage{}, err
	}
	limit := store.PageLimit(p.Limit)
	pk := issuePK(ws, id)
	fp := fingerprint(ws, "comments", id)
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		KeyConditionExpression:    aws.String("PK = :pk AND begins_with(SK, :c)"),
		ExpressionAttributeValues: item{":pk": avS(pk), ":c": avS(skComment)},
		ConsistentRead:            aws.Bool(true),
		Limit:                     aws.Int32(int32(limit + 1)),
	}
	if p.Cursor != "" {
		start, err := s.decodeCursor(p.Cursor, fp, commentAttrs, func(k map[string]string) bool {
			return k[attrPK] == pk && validPart(trimPrefix(k[attrSK], skComment))
		})
		if err != nil {
			return store.CommentPage{}, err
		}
		in.ExclusiveStartKey = start
	}
	// The issue is read beside its comments, not before them: both are needed, and
	// neither depends on the other. Comments without their issue (a delete in
	// progress removes the comments first, the issue last) are not_found, as is an
	// orphan key item (see loadIssue).
	var (
		out   *dynamodb.QueryOutput
		issue item
	)
	errs := together(func() (err error) {
		out, err = s.db.Query(ctx, in)
		return fail(op, err)
	}, func() (err error) {
		issue, err = s.get(ctx, s.table, key(issuePK(ws, id), skMeta), op)
		return err
	})
	if err := errors.Join(errs...); err != nil {
		return store.CommentPage{}, err
	}
	if issue == nil {
		return store.CommentPage{}, notFound("issue")
	}
	if issueKey != "" {
		is, err := decodeIssue(issue)
		if err != nil {
			return store.CommentPage{}, fail(op, err)
		}
		if is.Key != issueKey {
			return store.CommentPage{}, notFound("issue")
		}
	}
	page := store.CommentPage{Comments: make([]store.Comment, 0, min(limit, len(out.Items)))}
	var next item
	for _, it := range out.Items {
		if len(page.Comments) == limit {
			last := page.Comments[limit-1]
			next = key(pk, skComment+last.ID)
			break
		}
		c, err := decodeComment(it)
		if err != nil {
			return store.CommentPage{}, fail(op, err)
		}
		page.Comments = append(page.Comments, c)
	}
	if next == nil && len(out.LastEvaluatedKey) > 0 {
		next = out.LastEvaluatedKey
	}
	if next != nil {
		if page.NextCursor, err = s.encodeCursor(fp, next); err != nil {
			return store.CommentPage{}, err
		}
	}
	return page, nil
}

// crashedAfter is the age after which a delete's claim on a comment counts as the mark
// of a crashed delete, well above any call's lifetime (the Lambda timeout).
const crashedAfter = 5 * time.Minute

// The attributes of a comment's lookup item that DeleteComment relies on: refComplete
// (see markCommentComplete), and the claim of the delete under way, its nonce and
// its result's time.
const (
	refComplete  = "complete"
	refClaimN    = "del_nonce"
	refClaimTime = "del_at"
)

// DeleteComment implements store.Writer, in three round trips:
//
//  1. the lookup item and the tombstone, read together;
//  2. the claim: the lookup item is marked with this call's nonce, on condition
//     that it exists and carries no claim. Exactly one of concurrent deletes wins
//     it; the others answer with its result, as a replay.
//  3. comment_count -1 (guarded by the op id "-<comment>", see countComment), the
//     comment and the tombstone, together.
//
// After the answer (Store.later) the lookup item is deleted, then the count's guard
// cleared. The claimed lookup item is the mark of unfinished work: while it is there
// the guard is too, so a delete that crashed anywhere after (2) is finished by a later
// call (once the claim is older than crashedAfter: the steps it repeats are all
// idempotent), and the count drops exactly once. The lookup item is deleted only after
// (3) succeeded, so a delete that comes after it finds no lookup, and the tombstone
// answers it.
//
// (2) trusts the lookup only once it is marked complete (a lookup alone is the
// remains of a crashed or running create, whose comment was never counted); an
// unmarked one costs a read of the comment before the claim.
func (s *Store) DeleteComment(ctx context.Context, ws, commentID string, allow store.DeleteCheck) (store.DeleteResult, error) {
	const op = "DeleteComment"
	if checkWS(ws) != nil || !validPart(commentID) {
		return store.DeleteResult{}, notFound("comment")
	}
	refKey, goneKey := key(commentRefPK(ws, commentID), skMeta), key(goneCommentPK(ws, commentID), skMeta)
	got, err := s.batchGet(ctx, s.table, []item{refKey, goneKey}, op)
	if err != nil {
		return store.DeleteResult{}, err
	}
	ref := got[keyID(commentRefPK(ws, commentID), skMeta)]
	gone, replay, err := s.liveTombstone(got[keyID(goneCommentPK(ws, commentID), skMeta)], "comment")
	if err != nil {
		return store.DeleteResult{}, fail(op, err)
	}
	if ref == nil {
		if replay {
			return allow.Replay(gone, nil)
		}
		return store.DeleteResult{}, notFound("comment")
	}
	// A tombstone beside the lookup belongs to the delete that claimed it (its lookup
	// is deleted after the answer); the claim on the lookup decides what happens.
	r, err := decodeCommentRef(ref)
	if err != nil {
		return store.DeleteResult{}, fail(op, err)
	}
	if err := allow.Allow(r.author); err != nil {
		return store.DeleteResult{}, err
	}
	if r.claimN == "" && !r.complete {
		// The comment itself must exist: a lookup item alone is the remains of a crashed
		// create (see CreateComment) and was never counted.
		body, err := s.get(ctx, s.table, key(issuePK(ws, r.issueID), skComment+commentID), op)
		if err != nil {
			return store.DeleteResult{}, err
		}
		if body == nil {
			return store.DeleteResult{}, notFound("comment")
		}
	}
	mine := store.DeleteResult{Kind: "comment", ID: commentID, DeletedAt: s.now().UTC(), Owner: r.author}
	res, n, err := s.claimCommentDelete(ctx, ws, commentID, r, mine)
	if err != nil || n == "" {
		return res, err
	}
	if err := s.finishCommentDelete(ctx, ws, commentID, r.issueID, res); err != nil {
		return store.DeleteResult{}, err
	}
	s.later(ctx, "delete a deleted comment's lookup", func(ctx context.Context) error {
		return s.dropCommentRef(ctx, ws, commentID, r.issueID, n)
	}, "comment", commentID)
	// A call that took over a crashed delete answers as that delete would have, as a
	// replay (res says so); one that claimed the comment afresh deleted it.
	return res, nil
}

// commentRef is a comment's lookup item, decoded.
type commentRef struct {
	issueID, author string
	complete        bool
	claimN          string    // the nonce of the delete that claimed it, if one did
	claimAt         time.Time // and its result's time
}

func decodeCommentRef(it item) (commentRef, error) {
	d := decoder{it: it}
	r := commentRef{issueID: d.str("issue_id"), author: d.str("author"), claimN: d.str(refClaimN), claimAt: d.time(refClaimTime)}
	if v, ok := it[refComplete].(*types.AttributeValueMemberBOOL); ok {
		r.complete = v.Value
	} else if it[refComplete] != nil {
		d.fault(refComplete)
	}
	if d.err == nil && !validPart(r.issueID) {
		d.fault("issue_id")
	}
	return r, d.err
}

// claimCommentDelete makes this call the one that deletes the comment: it returns the
// claim's nonce to finish with, or "" and the result to answer with when the claim is
// another's that may still be at work. r is the lookup item as read before: its claim,
// if it had one, is taken over only once older than crashedAfter, and then on
// condition that it is still the same, so that of two late callers only one finishes.
func (s *Store) claimCommentDelete(ctx context.Context, ws, commentID string, r commentRef, mine store.DeleteResult) (store.DeleteResult, string, error) {
	const op = "DeleteComment"
	cond, vals := "attribute_exists(PK) AND attribute_not_exists(#n)", item{}
	if r.claimN != "" {
		theirs := mine
		theirs.DeletedAt, theirs.Replay = r.claimAt, true
		if s.now().Sub(r.claimAt) < crashedAfter {
			// The delete that claimed it may still be running: leave the work to it.
			// Finishing beside it could decrement twice, since its count guard is
			// cleared once it is done.
			return theirs, "", nil
		}
		mine = theirs
		cond, vals[":old"] = "#n = :old", avS(r.claimN)
	}
	n := nonce()
	vals[":n"], vals[":at"] = avS(n), avTime(mine.DeletedAt)
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       key(commentRefPK(ws, commentID), skMeta),
		UpdateExpression:          aws.String("SET #n = :n, #at = :at"),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  map[string]string{"#n": refClaimN, "#at": refClaimTime},
		ExpressionAttributeValues: vals,
	})
	if err == nil {
		return mine, n, nil
	}
	if !conditionFailed(err) {
		return store.DeleteResult{}, "", fail(op, err)
	}
	// Lost to another caller, or our own update retried by the SDK after a lost
	// response: the item tells which.
	it, err := s.get(ctx, s.table, key(commentRefPK(ws, commentID), skMeta), op)
	if err != nil {
		return store.DeleteResult{}, "", err
	}
	if it == nil {
		// A delete finished in between and took the lookup with it (or the issue's
		// delete did): the tombstone, if there is one, has the answer.
		gone, err := s.get(ctx, s.table, key(goneCommentPK(ws, commentID), skMeta), op)
		if err != nil {
			return store.DeleteResult{}, "", err
		}
		if res, ok, err := s.liveTombstone(gone, "comment"); err != nil || ok {
			return res, "", fail(op, err)
		}
		return store.DeleteResult{}, "", notFound("comment")
	}
	now, err := decodeCommentRef(it)
	if err != nil {
		return store.DeleteResult{}, "", fail(op, err)
	}
	if now.claimN == n {
		return mine, n, nil
	}
	theirs := mine
	theirs.DeletedAt, theirs.Replay = now.claimAt, true
	return theirs, "", nil
}

// finishCommentDelete is step (3) of DeleteComment, for the holder of the claim. All
// three writes are idempotent (the count through its guard), so a holder that takes
// over a crashed delete repeats them.
func (s *Store) finishCommentDelete(ctx context.Context, ws, commentID, issueID string, res store.DeleteResult) error {
	const op = "DeleteComment"
	errs := together(func() error {
		_, err := s.countComment(ctx, ws, issueID, "-"+commentID, -1)
		return err
	}, func() error {
		_, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
			TableName: aws.String(s.table),
			Key:       key(issuePK(ws, issueID), skComment+commentID),
		})
		return fail(op, err)
	}, func() error {
		_, _, err := s.putTombstone(ctx, goneCommentPK(ws, commentID), res, op)
		return err
	})
	return errors.Join(errs...)
}

// dropCommentRef deletes the lookup item of a finished delete, if it still carries
// the claim n, and only then clears the count's guard: the order that keeps a crashed
// delete finishable (see DeleteComment).
func (s *Store) dropCommentRef(ctx context.Context, ws, commentID, issueID, n string) error {
	_, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                 aws.String(s.table),
		Key:                       key(commentRefPK(ws, commentID), skMeta),
		ConditionExpression:       aws.String("#n = :n"),
		ExpressionAttributeNames:  map[string]string{"#n": refClaimN},
		ExpressionAttributeValues: item{":n": avS(n)},
	})
	if err != nil && !conditionFailed(err) {
		return err
	}
	s.clearCountOp(ctx, ws, issueID, "-"+commentID)
	return nil
}
