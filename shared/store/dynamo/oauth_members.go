package dynamo

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aacworkflow/aacmcp/shared/store"
)

// Members across workspaces. The member record (WS#<ws> / MEMBER#<user>) is the source
// of truth; two kinds of lookup item say where to find records by e-mail and by user
// (keys in oauth_keys.go), and every list re-reads the records they point to, keeping
// only those that still match. A lookup is therefore allowed to be stale (pointing at
// nothing, or at a record whose e-mail has changed): the one thing it must never be is
// missing for a record that exists. That is what the order of writes guarantees:
//
//   - UpdateMember reads the record, writes the lookups of the new state, then writes
//     the record conditional on the version it read (mnonce), then deletes the old
//     e-mail's lookup conditional on that lookup still carrying the old version. A
//     crash leaves at worst a stale lookup; a concurrent writer makes the record write
//     fail and the call starts over, so the last record written is always one whose
//     own lookups were written after every other writer's read of the record;
//   - DeleteMember deletes the record (conditional on the version it read), then the
//     lookups carrying that version.
//
// One TransactWriteItems (record + lookups, conditional on the version) would do each
// in one round trip instead of four.
//
// A member record written before this layout has no lookups until UpdateMember
// rewrites it (`aacmcp member add` again).

// memberAttempts bounds UpdateMember's and DeleteMember's retries under contention.
const memberAttempts = 5

// memberVersion is the version condition of a write over the record read as it (nil:
// absent): the record must still be the one read.
func memberVersion(it item, values item) string {
	if it == nil {
		return "attribute_not_exists(PK)"
	}
	d := decoder{it: it}
	if v := d.str("mnonce"); v != "" {
		values[":old"] = avS(v)
		return "mnonce = :old"
	}
	return "attribute_exists(PK) AND attribute_not_exists(mnonce)" // written before versions
}

// putMemberLookup writes a lookup item carrying version n. Unconditional: a resent
// put writes the same again, and overwriting another writer's lookup for the same
// (e-mail or user, workspace, user) is harmless (it points at the same record).
func (s *Store) putMemberLookup(ctx context.Context, pk, sk string, m store.Member, n, op string) error {
	it := key(pk, sk)
	it["workspace_id"], it["user_id"], it["mnonce"] = avS(m.WorkspaceID), avS(m.UserID), avS(n)
	_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: it})
	return fail(op, err)
}

// deleteMemberLookup deletes a lookup item only while it carries version old: a lookup
// rewritten by a later writer stays.
func (s *Store) deleteMemberLookup(ctx context.Context, pk, sk, old, op string) error {
	_, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                 aws.String(s.table),
		Key:                       key(pk, sk),
		ConditionExpression:       aws.String("mnonce = :old"),
		ExpressionAttributeValues: item{":old": avS(old)},
	})
	if conditionFailed(err) {
		return nil
	}
	return fail(op, err)
}

func emailLookupSK(ws, user string) string { return ws + "#" + user }

// UpdateMember implements store.Writer. Replacing a member keeps its created_at and
// replaces its e-mail (lower-cased, as the SQLite store does; "" removes it).
func (s *Store) UpdateMember(ctx context.Context, m store.Member) (store.Member, error) {
	const op = "UpdateMember"
	if !validPart(m.UserID) {
		return store.Member{}, store.Invalid("user id is required and must not contain '#'")
	}
	if !m.Role.Valid() {
		return store.Member{}, store.Invalid("role must be viewer, member or admin")
	}
	if err := checkWS(m.WorkspaceID); err != nil {
		return store.Member{}, err
	}
	if err := s.workspaceExists(ctx, m.WorkspaceID, op); err != nil {
		return store.Member{}, err
	}
	m.CreatedAt = s.orNow(m.CreatedAt)
	m.Email = strings.ToLower(m.Email)
	k := key(wsPK(m.WorkspaceID), skMember+m.UserID)
	for range memberAttempts {
		old, err := s.get(ctx, s.table, k, op)
		if err != nil {
			return store.Member{}, err
		}
		n := nonce()
		if err := s.putMemberLookup(ctx, memberUserPK(m.UserID), m.WorkspaceID, m, n, op); err != nil {
			return store.Member{}, err
		}
		if m.Email != "" {
			if err := s.putMemberLookup(ctx, memberEmailPK(m.Email), emailLookupSK(m.WorkspaceID, m.UserID), m, n, op); err != nil {
				return store.Member{}, err
			}
		}
		update := "SET user_id = :u, #role = :r, created_at = if_not_exists(created_at, :c), mnonce = :n"
		values := item{":u": avS(m.UserID), ":r": avS(string(m.Role)), ":c": avTime(m.CreatedAt), ":n": avS(n)}
		if m.Email != "" {
			update += ", email = :e"
			values[":e"] = avS(m.Email)
		} else {
			update += " REMOVE email"
		}
		out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 aws.String(s.table),
			Key:                       k,
			UpdateExpression:          aws.String(update),
			ConditionExpression:       aws.String("(" + memberVersion(old, values) + ") OR mnonce = :n"),
			ExpressionAttributeNames:  map[string]string{"#role": "role"},
			ExpressionAttributeValues: values,
			ReturnValues:              types.ReturnValueAllNew,
		})
		if conditionFailed(err) {
			continue // another writer changed the record since the read: start over
		}
		if err != nil {
			return store.Member{}, fail(op, err)
		}
		if old != nil {
			prev, err := decodeMember(m.WorkspaceID, old)
			if err != nil {
				return store.Member{}, fail(op, err)
			}
			d := decoder{it: old}
			if v := d.str("mnonce"); v != "" && prev.Email != "" && prev.Email != m.Email {
				if err := s.deleteMemberLookup(ctx, memberEmailPK(prev.Email), emailLookupSK(m.WorkspaceID, m.UserID), v, op); err != nil {
					// The record is written; the stale lookup is filtered on read.
					s.log.WarnContext(ctx, "dynamo: could not delete an old e-mail lookup", "workspace", m.WorkspaceID, "user", m.UserID, "err", err)
				}
			}
		}
		got, err := decodeMember(m.WorkspaceID, out.Attributes)
		return got, fail(op, err)
	}
	return store.Member{}, store.Errorf(store.ErrConflict, "member is being changed concurrently; retry")
}

// DeleteMember implements store.Writer.
func (s *Store) DeleteMember(ctx context.Context, ws, user string) error {
	const op = "DeleteMember"
	if err := checkWS(ws); err != nil || !validPart(user) {
		return notFound("member")
	}
	k := key(wsPK(ws), skMember+user)
	for range memberAttempts {
		it, err := s.get(ctx, s.table, k, op)
		if err != nil {
			return err
		}
		if it == nil {
			return notFound("member")
		}
		values := item{}
		_, err = s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
			TableName:                 aws.String(s.table),
			Key:                       k,
			ConditionExpression:       aws.String(memberVersion(it, values)),
			ExpressionAttributeValues: values,
		})
		if conditionFailed(err) {
			// Either our own resent delete found the record gone (success), or
			// another writer changed it: read again to tell.
			again, err := s.get(ctx, s.table, k, op)
			if err != nil {
				return err
			}
			if again != nil {
				continue
			}
		} else if err != nil {
			return fail(op, err)
		}
		m, err := decodeMember(ws, it)
		if err != nil {
			return fail(op, err)
		}
		d := decoder{it: it}
		if v := d.str("mnonce"); v != "" {
			// Lookups pointing at nothing are harmless: failures are only logged.
			errU := s.deleteMemberLookup(ctx, memberUserPK(user), ws, v, op)
			var errE error
			if m.Email != "" {
				errE = s.deleteMemberLookup(ctx, memberEmailPK(m.Email), emailLookupSK(ws, user), v, op)
			}
			if errU != nil || errE != nil {
				s.log.WarnContext(ctx, "dynamo: could not delete a member lookup", "workspace", ws, "user", user, "err", firstErr(errU, errE))
			}
		}
		return nil
	}
	return store.Errorf(store.ErrConflict, "member is being changed concurrently; retry")
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// membersVia queries a lookup partition and returns the member records its items
// point to that exist and pass keep, ordered by workspace then user.
func (s *Store) membersVia(ctx context.Context, pk, op string, keep func(store.Member) bool) ([]store.Member, error) {
	refs, err := s.queryAll(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		KeyConditionExpression:    aws.String("PK = :pk"),
		ExpressionAttributeValues: item{":pk": avS(pk)},
		ConsistentRead:            aws.Bool(true),
	}, op)
	if err != nil {
		return nil, err
	}
	out := []store.Member{}
	for start := 0; start < len(refs); start += 100 {
		chunk := refs[start:min(start+100, len(refs))]
		keys := make([]item, 0, len(chunk))
		for _, r := range chunk {
			d := decoder{it: r}
			ws, user := d.str("workspace_id"), d.str("user_id")
			if d.err != nil || checkWS(ws) != nil || !validPart(user) {
				continue // not a lookup this store writes
			}
			keys = append(keys, key(wsPK(ws), skMember+user))
		}
		got, err := s.batchGet(ctx, s.table, keys, op)
		if err != nil {
			return nil, err
		}
		for _, k := range keys {
			d := decoder{it: k}
			pk := d.str(attrPK)
			it := got[keyID(pk, d.str(attrSK))]
			if it == nil {
				continue // stale: the member is gone
			}
			m, err := decodeMember(strings.TrimPrefix(pk, wsPK("")), it)
			if err != nil {
				return nil, fail(op, err)
			}
			if keep(m) {
				out = append(out, m)
			}
		}
	}
	slices.SortFunc(out, func(a, b store.Member) int {
		return cmp.Or(strings.Compare(a.WorkspaceID, b.WorkspaceID), strings.Compare(a.UserID, b.UserID))
	})
	return out, nil
}

// ListMembersByEmail implements store.OAuthStore; "" matches nobody. Only records
// whose e-mail is still this one count (a lookup may be stale, see above).
func (s *Store) ListMembersByEmail(ctx context.Context, email string) ([]store.Member, error) {
	email = strings.ToLower(email)
	if email == "" {
		return []store.Member{}, nil
	}
	return s.membersVia(ctx, memberEmailPK(email), "ListMembersByEmail", func(m store.Member) bool { return m.Email == email })
}

// ListMembersOfUser implements store.OAuthStore, ordered by workspace.
func (s *Store) ListMembersOfUser(ctx context.Context, user string) ([]store.Member, error) {
	if !validPart(user) {
		return []store.Member{}, nil
	}
	return s.membersVia(ctx, memberUserPK(user), "ListMembersOfUser", func(m store.Member) bool { return m.UserID == user })
}
