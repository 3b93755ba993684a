package dynamo

import (
	"context"
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aacworkflow/aacmcp/shared/store"
)

// A grant is three kinds of item (keys in oauth_keys.go):
//   - the grant itself, the source of truth: its refresh_hash says which refresh
//     token is current;
//   - one item per refresh hash it ever had, pointing to the grant (grant_id, and
//     grant_created, so that a hash of an expired grant can never name a later grant
//     under the same id) with a state: "current" until the grant rotated away from it,
//     then "rotated";
//   - one list entry, for the admin listings by workspace and of everything.
//
// GetOAuthGrantByRefresh decides from the grant first: the hash the grant names is
// current, whatever its item says; a hash marked rotated that the grant does not name
// is a rotated one (reuse = theft); a hash still marked current that the grant does not
// name belongs to a rotation that lost its race or crashed before its commit, and was
// never handed out: not_found.

// refreshCurrent and refreshRotated are the states of a refresh hash item.
const (
	refreshCurrent = "current"
	refreshRotated = "rotated"
)

// listSlack is how much longer than its grant a list entry is kept. A refresh moves
// the grant's expiry forward; the entry's TTL is moved only when the new expiry passes
// the entry's, so a grant refreshed every hour rewrites its entry about once a week.
const listSlack = 7 * 24 * time.Hour

func encodeGrant(g store.OAuthGrant, listUntil time.Time) item {
	it := key(oauthGrantPK(g.ID), skGrant)
	it[attrGSI1PK], it[attrGSI1SK] = avS(oauthUserGrantsGSI(g.UserID)), avS(createdSK(g.CreatedAt, g.ID))
	it["grant_id"], it["workspace_id"], it["user_id"] = avS(g.ID), avS(g.WorkspaceID), avS(g.UserID)
	setStr(it, "client_id", g.ClientID)
	setStr(it, "client_name", g.ClientName)
	setStr(it, "resource", g.Resource)
	setStr(it, "refresh_hash", g.RefreshHash)
	it["scopes"], it["access_token_ids"] = avStrings(g.Scopes), avStrings(g.AccessTokenIDs)
	it["created_at"], it["last_used_at"] = avTime(g.CreatedAt), avTime(g.LastUsedAt)
	it["expires_at"], it[attrTTL] = avTime(g.ExpiresAt), expiryTTL(g.ExpiresAt)
	it["list_until"] = avTime(listUntil)
	if g.RevokedAt != nil {
		it["revoked_at"] = avTime(*g.RevokedAt)
	}
	return it
}

// decodeGrant returns the grant and its list entry's expiry.
func decodeGrant(it item) (store.OAuthGrant, time.Time, error) {
	d := decoder{it: it}
	g := store.OAuthGrant{
		ID: d.str("grant_id"), ClientID: d.str("client_id"), ClientName: d.str("client_name"),
		WorkspaceID: d.str("workspace_id"), UserID: d.str("user_id"), Scopes: d.strings("scopes"),
		Resource: d.str("resource"), RefreshHash: d.str("refresh_hash"), AccessTokenIDs: d.strings("access_token_ids"),
		CreatedAt: d.time("created_at"), LastUsedAt: d.time("last_used_at"), ExpiresAt: d.time("expires_at"),
	}
	if d.has("revoked_at") {
		at := d.time("revoked_at")
		g.RevokedAt = &at
	}
	return g, d.time("list_until"), d.err
}

// getGrant reads a grant; nil when absent or expired.
func (s *Store) getGrant(ctx context.Context, id, op string) (*store.OAuthGrant, time.Time, error) {
	if !validPart(id) {
		return nil, time.Time{}, nil
	}
	it, err := s.get(ctx, s.table, key(oauthGrantPK(id), skGrant), op)
	if err != nil || it == nil {
		return nil, time.Time{}, err
	}
	g, listUntil, err := decodeGrant(it)
	if err != nil {
		return nil, time.Time{}, fail(op, err)
	}
	if !s.now().Before(g.ExpiresAt) {
		return nil, time.Time{}, nil
	}
	return &g, listUntil, nil
}

// putRefresh claims a refresh hash for grant g as current. A hash that has ever had an
// item is refused (conflict): a hash current once may never be current again. Our own
// resent request passes by its nonce.
func (s *Store) putRefresh(ctx context.Context, hash string, g store.OAuthGrant, expires time.Time, n, op string) error {
	it := key(oauthRefreshPK(hash), skRefresh)
	it["grant_id"], it["grant_created"], it["state"] = avS(g.ID), avTime(g.CreatedAt), avS(refreshCurrent)
	it["expires_at"], it[attrTTL], it["nonce"] = avTime(expires), expiryTTL(expires), avS(n)
	return s.claim(ctx, s.table, it, n, "refresh token already belongs to a grant", op)
}

// releaseRefresh deletes a hash claimed by putRefresh with nonce n whose grant write
// then failed. Losing it costs nothing: the grant does not name the hash, so reads
// answer not_found for it (see above).
func (s *Store) releaseRefresh(ctx context.Context, hash, n string) {
	if err := s.release(ctx, s.table, key(oauthRefreshPK(hash), skRefresh), n); err != nil {
		s.log.WarnContext(ctx, "dynamo: could not release a refresh hash", "err", err)
	}
}

// extendListEntry writes the grant's list entry with a TTL of until, unless it lives
// that long already: the update only ever moves the TTL forward, so it is safe to
// resend and safe against a slower writer with an older expiry.
func (s *Store) extendListEntry(ctx context.Context, g store.OAuthGrant, until time.Time, op string) error {
	sk := createdSK(g.CreatedAt, g.ID)
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.table),
		Key:       key(oauthWSGrantsPK(g.WorkspaceID), sk),
		UpdateExpression: aws.String("SET grant_id = :g, workspace_id = :ws, user_id = :u, created_at = :c, " +
			"GSI1PK = :all, GSI1SK = :sk, #ttl = :ttl"),
		ConditionExpression:      aws.String("attribute_not_exists(#ttl) OR #ttl < :ttl"),
		ExpressionAttributeNames: map[string]string{"#ttl": attrTTL},
		ExpressionAttributeValues: item{
			":g": avS(g.ID), ":ws": avS(g.WorkspaceID), ":u": avS(g.UserID), ":c": avTime(g.CreatedAt),
			":all": avS(oauthAllGrantsGSI), ":sk": avS(sk), ":ttl": expiryTTL(until),
		},
	})
	if conditionFailed(err) {
		return nil
	}
	return fail(op, err)
}

func checkGrant(g store.OAuthGrant) error {
	if !validPart(g.ID) || g.ExpiresAt.IsZero() {
		return store.Invalid("grant needs an id without '#' and an expiry")
	}
	if checkWS(g.WorkspaceID) != nil || !validPart(g.UserID) {
		return store.Invalid("grant needs a workspace and a user without '#'")
	}
	if g.RefreshHash != "" && !validPart(g.RefreshHash) {
		return store.Invalid("refresh hash must not contain '#'")
	}
	return nil
}

// CreateOAuthGrant implements store.OAuthStore. LastUsedAt defaults to CreatedAt,
// which defaults to now. A refresh hash held already is conflict.
//
// Writes, in this order: (1) the refresh hash item, when the grant has one, (2) the
// list entry, (3) the grant, conditional on no live grant under the id. The grant is
// the commit: a crash before it leaves a hash item and a list entry that name a grant
// that does not exist, which reads skip. One TransactWriteItems would make this one
// round trip instead of three.
func (s *Store) CreateOAuthGrant(ctx context.Context, g store.OAuthGrant) error {
	const op = "CreateOAuthGrant"
	if err := checkGrant(g); err != nil {
		return err
	}
	g.CreatedAt, g.LastUsedAt = store.UseTimes(s.now(), g.CreatedAt, g.LastUsedAt)
	g.ExpiresAt = g.ExpiresAt.UTC()
	n := nonce()
	if g.RefreshHash != "" {
		if err := s.putRefresh(ctx, g.RefreshHash, g, g.ExpiresAt, n, op); err != nil {
			return err
		}
	}
	listUntil := g.ExpiresAt.Add(listSlack)
	err := s.extendListEntry(ctx, g, listUntil, op)
	if err == nil {
		err = s.putNew(ctx, encodeGrant(g, listUntil), n, "grant", op)
	}
	if err != nil && g.RefreshHash != "" {
		s.releaseRefresh(ctx, g.RefreshHash, n)
	}
	return err
}

// GetOAuthGrant implements store.OAuthStore. A revoked grant is returned (with
// RevokedAt) until it expires.
func (s *Store) GetOAuthGrant(ctx context.Context, id string) (store.OAuthGrant, error) {
	g, _, err := s.getGrant(ctx, id, "GetOAuthGrant")
	if err != nil {
		return store.OAuthGrant{}, err
	}
	if g == nil {
		return store.OAuthGrant{}, notFound("grant")
	}
	return *g, nil
}

// GetOAuthGrantByRefresh implements store.OAuthStore: the hash item, then the grant
// (two consistent reads; the second needs the first's answer).
func (s *Store) GetOAuthGrantByRefresh(ctx context.Context, refreshHash string) (store.OAuthGrant, bool, error) {
	const op = "GetOAuthGrantByRefresh"
	if !validPart(refreshHash) { // "" is the refresh_hash of a grant whose code is not redeemed yet
		return store.OAuthGrant{}, false, notFound("grant")
	}
	it, err := s.get(ctx, s.table, key(oauthRefreshPK(refreshHash), skRefresh), op)
	if err != nil {
		return store.OAuthGrant{}, false, err
	}
	if it == nil {
		return store.OAuthGrant{}, false, notFound("grant")
	}
	d := decoder{it: it}
	grantID, created, state, expires := d.str("grant_id"), d.time("grant_created"), d.str("state"), d.time("expires_at")
	if d.err != nil {
		return store.OAuthGrant{}, false, fail(op, d.err)
	}
	if !s.now().Before(expires) {
		return store.OAuthGrant{}, false, notFound("grant")
	}
	g, _, err := s.getGrant(ctx, grantID, op)
	if err != nil {
		return store.OAuthGrant{}, false, err
	}
	switch {
	case g == nil || !g.CreatedAt.Equal(created):
		return store.OAuthGrant{}, false, notFound("grant")
	case g.RefreshHash == refreshHash:
		return *g, true, nil
	case state == refreshRotated:
		return *g, false, nil
	default: // claimed by a rotation that did not commit: never handed out
		return store.OAuthGrant{}, false, notFound("grant")
	}
}

// UpdateOAuthGrantRotate implements store.OAuthStore. Empty r.Scopes keeps the
// grant's scopes, a zero r.ExpiresAt its expiry, and an empty r.AccessTokenID adds no
// token.
//
// After a consistent read of the grant, writes in this order:
//
//	(1) the new hash item, state current (conflict if the hash ever had one);
//	(2) the old hash item marked rotated;
//	(3) the list entry's TTL, when the new expiry passes it (about once a week);
//	(4) the grant, conditional on its refresh hash still being r.OldRefreshHash, not
//	    revoked, not expired, and the same grant (created_at) that was read: the
//	    commit, and what makes exactly one of concurrent rotations win. Its own resent
//	    request passes by rot_nonce.
//
// Readers decide currentness from the grant, so every crash point is harmless: after
// (1) the new hash is not named by the grant (not_found); after (2) the old hash is
// still named by the grant (current). A loser at (4) releases its hash from (1); its
// mark at (2) is true, since the winner rotated away from the same hash. With
// TransactWriteItems, (1), (2) and (4) would be one request: two round trips (read,
// transaction) instead of four.
func (s *Store) UpdateOAuthGrantRotate(ctx context.Context, r store.OAuthRotation) (store.OAuthGrant, error) {
	const op = "UpdateOAuthGrantRotate"
	if !validPart(r.GrantID) || !validPart(r.NewRefreshHash) || (r.OldRefreshHash != "" && !validPart(r.OldRefreshHash)) {
		return store.OAuthGrant{}, store.Invalid("rotation needs a grant id and a new refresh hash, without '#'")
	}
	if err := r.Check(); err != nil {
		return store.OAuthGrant{}, err
	}
	r.At = s.orNow(r.At)
	cur, listUntil, err := s.getGrant(ctx, r.GrantID, op)
	if err != nil {
		return store.OAuthGrant{}, err
	}
	if cur == nil {
		return store.OAuthGrant{}, notFound("grant")
	}
	g, err := r.Apply(*cur)
	if err != nil {
		return store.OAuthGrant{}, err
	}

	n := nonce()
	if err := s.putRefresh(ctx, r.NewRefreshHash, g, g.ExpiresAt, n, op); err != nil { // (1)
		if errors.Is(err, store.ErrAlreadyExists) {
			return store.OAuthGrant{}, store.Errorf(store.ErrConflict, "refresh token was used already")
		}
		return store.OAuthGrant{}, err
	}
	committed := false
	defer func() {
		if !committed {
			s.releaseRefresh(context.WithoutCancel(ctx), r.NewRefreshHash, n)
		}
	}()
	if r.OldRefreshHash != "" { // (2)
		if err := s.markRotated(ctx, r.OldRefreshHash, g, r.At, op); err != nil {
			return store.OAuthGrant{}, err
		}
	}
	if g.ExpiresAt.After(listUntil) { // (3)
		listUntil = g.ExpiresAt.Add(listSlack)
		if err := s.extendListEntry(ctx, g, listUntil, op); err != nil {
			return store.OAuthGrant{}, err
		}
	}

	cond := "refresh_hash = :old"
	values := item{
		":new": avS(g.RefreshHash), ":scopes": avStrings(g.Scopes), ":tokens": avStrings(g.AccessTokenIDs),
		":at": avTime(g.LastUsedAt), ":exp": avTime(g.ExpiresAt), ":ttl": expiryTTL(g.ExpiresAt),
		":lu": avTime(listUntil), ":n": avS(n), ":now": avTime(s.now()), ":c": avTime(g.CreatedAt),
	}
	if r.OldRefreshHash == "" {
		cond = "attribute_not_exists(refresh_hash)"
	} else {
		values[":old"] = avS(r.OldRefreshHash)
	}
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{ // (4)
		TableName: aws.String(s.table),
		Key:       key(oauthGrantPK(g.ID), skGrant),
		UpdateExpression: aws.String("SET refresh_hash = :new, scopes = :scopes, access_token_ids = :tokens, " +
			"last_used_at = :at, expires_at = :exp, #ttl = :ttl, list_until = :lu, rot_nonce = :n"),
		ConditionExpression: aws.String("(" + cond + " AND attribute_not_exists(revoked_at) AND " + oauthLive +
			" AND created_at = :c) OR rot_nonce = :n"),
		ExpressionAttributeNames:  map[string]string{"#ttl": attrTTL},
		ExpressionAttributeValues: values,
		ReturnValues:              types.ReturnValueAllNew,
	})
	if conditionFailed(err) {
		now, _, rerr := s.getGrant(ctx, g.ID, op)
		switch {
		case rerr != nil:
			return store.OAuthGrant{}, rerr
		case now == nil || !now.CreatedAt.Equal(g.CreatedAt):
			return store.OAuthGrant{}, notFound("grant")
		case now.RevokedAt != nil:
			return store.OAuthGrant{}, store.Errorf(store.ErrConflict, "grant is revoked")
		default:
			return store.OAuthGrant{}, store.Errorf(store.ErrConflict, "refresh token is no longer current")
		}
	}
	if err != nil {
		return store.OAuthGrant{}, fail(op, err)
	}
	committed = true
	got, _, err := decodeGrant(out.Attributes)
	return got, fail(op, err)
}

// markRotated marks the hash item of the grant's old refresh token rotated and keeps
// it as long as the grant now lives (a later refresh does not extend it again: reuse
// of a token rotated away from longer ago than the refresh lifetime is then not_found,
// refused all the same, but without revoking the grant). Idempotent: a resent request
// sets the same values (rotated_at keeps the first).
func (s *Store) markRotated(ctx context.Context, hash string, g store.OAuthGrant, at time.Time, op string) error {
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(s.table),
		Key:                      key(oauthRefreshPK(hash), skRefresh),
		UpdateExpression:         aws.String("SET #state = :rot, rotated_at = if_not_exists(rotated_at, :at), expires_at = :exp, #ttl = :ttl"),
		ConditionExpression:      aws.String("attribute_exists(PK) AND grant_id = :g"),
		ExpressionAttributeNames: map[string]string{"#state": "state", "#ttl": attrTTL},
		ExpressionAttributeValues: item{
			":rot": avS(refreshRotated), ":at": avTime(at), ":exp": avTime(g.ExpiresAt), ":ttl": expiryTTL(g.ExpiresAt),
			":g": avS(g.ID),
		},
	})
	if conditionFailed(err) {
		// The grant names a hash that has no item (a grant written before this layout,
		// or by hand): nothing to mark, and the rotation itself is still right.
		s.log.WarnContext(ctx, "dynamo: rotated refresh hash had no item", "grant_id", g.ID)
		return nil
	}
	return fail(op, err)
}

// UpdateOAuthGrantRevoked implements store.OAuthStore: if_not_exists keeps the first
// revocation time, which also makes a resent request harmless.
func (s *Store) UpdateOAuthGrantRevoked(ctx context.Context, id string, at time.Time) (store.OAuthGrant, error) {
	const op = "UpdateOAuthGrantRevoked"
	if !validPart(id) {
		return store.OAuthGrant{}, notFound("grant")
	}
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       key(oauthGrantPK(id), skGrant),
		UpdateExpression:          aws.String("SET revoked_at = if_not_exists(revoked_at, :at)"),
		ConditionExpression:       aws.String(oauthLive),
		ExpressionAttributeValues: item{":at": avTime(s.orNow(at)), ":now": avTime(s.now())},
		ReturnValues:              types.ReturnValueAllNew,
	})
	if conditionFailed(err) {
		return store.OAuthGrant{}, notFound("grant")
	}
	if err != nil {
		return store.OAuthGrant{}, fail(op, err)
	}
	g, _, err := decodeGrant(out.Attributes)
	return g, fail(op, err)
}

// ListOAuthGrants implements store.OAuthStore: newest first (created_at, then id),
// revoked grants included until they expire. With a user, one Query of that user's
// index partition (filtered by workspace); otherwise the list entries of the
// workspace (or of everything), then the grants by batch reads. The index is
// eventually consistent: a grant created a moment ago may be missing from a list by
// user, which costs the consent page at most a second grant instead of a step-up.
func (s *Store) ListOAuthGrants(ctx context.Context, ws, user string) ([]store.OAuthGrant, error) {
	const op = "ListOAuthGrants"
	out := []store.OAuthGrant{}
	if (ws != "" && checkWS(ws) != nil) || (user != "" && !validPart(user)) {
		return out, nil
	}
	now := s.now()
	if user != "" {
		in := &dynamodb.QueryInput{
			TableName:                 aws.String(s.table),
			IndexName:                 aws.String(indexGSI1),
			KeyConditionExpression:    aws.String("GSI1PK = :pk"),
			FilterExpression:          aws.String("expires_at > :now"),
			ExpressionAttributeValues: item{":pk": avS(oauthUserGrantsGSI(user)), ":now": avTime(now)},
			ScanIndexForward:          aws.Bool(false),
		}
		if ws != "" {
			in.FilterExpression = aws.String("expires_at > :now AND workspace_id = :ws")
			in.ExpressionAttributeValues[":ws"] = avS(ws)
		}
		return queryDecoded(ctx, s, in, op, func(it item) (store.OAuthGrant, error) {
			g, _, err := decodeGrant(it)
			return g, err
		})
	}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		KeyConditionExpression:    aws.String("PK = :pk"),
		ExpressionAttributeValues: item{":pk": avS(oauthWSGrantsPK(ws))},
		ScanIndexForward:          aws.Bool(false),
		ConsistentRead:            aws.Bool(true),
	}
	if ws == "" {
		in.IndexName, in.ConsistentRead = aws.String(indexGSI1), nil
		in.KeyConditionExpression = aws.String("GSI1PK = :pk")
		in.ExpressionAttributeValues[":pk"] = avS(oauthAllGrantsGSI)
	}
	entries, err := s.queryAll(ctx, in, op)
	if err != nil {
		return nil, err
	}
	for start := 0; start < len(entries); start += 100 {
		chunk := entries[start:min(start+100, len(entries))]
		ids := make([]string, 0, len(chunk))
		created := make([]time.Time, 0, len(chunk))
		var keys []item
		seen := map[string]bool{} // entries of two generations of one id name one item
		for _, e := range chunk {
			d := decoder{it: e}
			id, c := d.str("grant_id"), d.time("created_at")
			if d.err == nil && !validPart(id) {
				d.fault("grant_id")
			}
			if d.err != nil {
				return nil, fail(op, d.err)
			}
			ids, created = append(ids, id), append(created, c)
			if !seen[id] {
				seen[id] = true
				keys = append(keys, key(oauthGrantPK(id), skGrant))
			}
		}
		got, err := s.batchGet(ctx, s.table, keys, op)
		if err != nil {
			return nil, err
		}
		for i, id := range ids { // in the entries' order
			it := got[keyID(oauthGrantPK(id), skGrant)]
			if it == nil {
				continue // the entry of a create that crashed before its grant
			}
			g, _, err := decodeGrant(it)
			if err != nil {
				return nil, fail(op, err)
			}
			// An entry outlives its grant by listSlack; and it must be this grant's,
			// not a later one's under the same id.
			if !now.Before(g.ExpiresAt) || !g.CreatedAt.Equal(created[i]) {
				continue
			}
			out = append(out, g)
		}
	}
	return out, nil
}
