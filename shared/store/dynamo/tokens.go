package dynamo

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// encodeToken is token t's item, listed in its workspace's token list and marked
// with nonce n, the writing call's; decodeToken reads it.
func encodeToken(t auth.TokenRecord, n string) item {
	it := item{
		attrPK: avS(tokenPK(t.Hash)), attrSK: avS(skToken),
		attrGSI1PK: avS(tokenListPK(t.WorkspaceID)), attrGSI1SK: avS(tokenListSK(t.CreatedAt, t.TokenID)),
		"hash": avS(t.Hash), "token_id": avS(t.TokenID), "name": avS(t.Name),
		"workspace_id": avS(t.WorkspaceID), "user_id": avS(t.UserID), "scopes": avStrings(t.Scopes),
		"created_at": avTime(t.CreatedAt), "expires_at": avTime(t.ExpiresAt), "nonce": avS(n),
	}
	if t.RevokedAt != nil {
		it["revoked_at"] = avTime(*t.RevokedAt)
	}
	// Set on OAuth access tokens only: a personal token's item stays as it was.
	if t.ClientID != "" {
		it["client_id"] = avS(t.ClientID)
	}
	if t.GrantID != "" {
		it["grant_id"] = avS(t.GrantID)
	}
	return it
}

func decodeToken(it item) (auth.TokenRecord, error) {
	d := decoder{it: it}
	// In encodeToken's order and grouping, so the two read side by side.
	t := auth.TokenRecord{
		Hash: d.str("hash"), TokenID: d.str("token_id"), Name: d.str("name"),
		WorkspaceID: d.str("workspace_id"), UserID: d.str("user_id"), Scopes: d.strings("scopes"),
		CreatedAt: d.time("created_at"), ExpiresAt: d.time("expires_at"),
		ClientID: d.str("client_id"), GrantID: d.str("grant_id"),
	}
	if d.has("revoked_at") {
		at := d.time("revoked_at")
		t.RevokedAt = &at
	}
	return t, d.err
}

// CreateToken implements auth.TokenStore.
//
// Writes, in this order: (1) the id item (TOKENID#<id> -> hash), (2) the token item.
// Both are conditional puts carrying a per-call nonce (a retried request passes its own
// condition). The token becomes usable only at (2); a crash after (1) leaves an id item
// whose token does not exist, which revoke and list treat as absent.
func (s *Store) CreateToken(ctx context.Context, t auth.TokenRecord) error {
	const op = "CreateToken"
	if !validPart(t.Hash) || !validPart(t.TokenID) || checkWS(t.WorkspaceID) != nil || !validPart(t.UserID) {
		return store.Invalid("token needs a hash, id, workspace and user without '#'")
	}
	t.CreatedAt = s.orNow(t.CreatedAt)
	n := nonce()
	idItem := item{
		attrPK: avS(tokenIDPK(t.TokenID)), attrSK: avS(skTokenID),
		attrGSI1PK: avS(allTokensPK), attrGSI1SK: avS(tokenListSK(t.CreatedAt, t.TokenID)),
		"hash": avS(t.Hash), "workspace_id": avS(t.WorkspaceID), "nonce": avS(n),
	}
	tok := encodeToken(t, n)
	put := func(it item) error {
		return s.claim(ctx, s.tokensTable, it, n, "a token with this id or secret exists", op)
	}
	if err := put(idItem); err != nil {
		return err
	}
	if err := put(tok); err != nil {
		// The secret is taken (astronomically unlikely for a random secret): release
		// the id claimed at (1).
		if derr := s.release(ctx, s.tokensTable, key(tokenIDPK(t.TokenID), skTokenID), n); derr != nil {
			s.log.WarnContext(ctx, "dynamo: could not release a token id", "token_id", t.TokenID, "err", derr)
		}
		return err
	}
	return nil
}

// GetTokenByHash implements auth.TokenStore. The read is strongly consistent so that a
// revocation takes effect on the next call.
func (s *Store) GetTokenByHash(ctx context.Context, hash string) (auth.TokenRecord, error) {
	if !validPart(hash) {
		return auth.TokenRecord{}, notFound("token")
	}
	it, err := s.get(ctx, s.tokensTable, key(tokenPK(hash), skToken), "GetTokenByHash")
	if err != nil {
		return auth.TokenRecord{}, err
	}
	if it == nil {
		return auth.TokenRecord{}, notFound("token")
	}
	t, err := decodeToken(it)
	return t, fail("GetTokenByHash", err)
}

// ListTokens implements auth.TokenStore, newest first. A workspace's tokens come from
// its GSI1 partition; all tokens ("" workspace, admin CLI only) from the id items'
// partition, then the records by batch reads.
func (s *Store) ListTokens(ctx context.Context, ws string) ([]auth.TokenRecord, error) {
	const op = "ListTokens"
	out := []auth.TokenRecord{}
	if ws != "" {
		if checkWS(ws) != nil {
			return out, nil
		}
		return queryDecoded(ctx, s, &dynamodb.QueryInput{
			TableName:                 aws.String(s.tokensTable),
			IndexName:                 aws.String(indexGSI1),
			KeyConditionExpression:    aws.String("GSI1PK = :pk"),
			ExpressionAttributeValues: item{":pk": avS(tokenListPK(ws))},
			ScanIndexForward:          aws.Bool(false),
		}, op, decodeToken)
	}
	ids, err := s.queryAll(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(s.tokensTable),
		IndexName:                 aws.String(indexGSI1),
		KeyConditionExpression:    aws.String("GSI1PK = :pk"),
		ExpressionAttributeValues: item{":pk": avS(allTokensPK)},
		ScanIndexForward:          aws.Bool(false),
	}, op)
	if err != nil {
		return nil, err
	}
	for start := 0; start < len(ids); start += 100 {
		chunk := ids[start:min(start+100, len(ids))]
		keys := make([]item, 0, len(chunk))
		for _, it := range chunk {
			d := decoder{it: it}
			keys = append(keys, key(tokenPK(d.str("hash")), skToken))
		}
		got, err := s.batchGet(ctx, s.tokensTable, keys, op)
		if err != nil {
			return nil, err
		}
		for _, k := range keys { // keep the index's order
			d := decoder{it: k}
			it := got[keyID(d.str(attrPK), skToken)]
			if it == nil {
				continue // id item of a create that crashed before its token
			}
			t, err := decodeToken(it)
			if err != nil {
				return nil, fail(op, err)
			}
			out = append(out, t)
		}
	}
	return out, nil
}

// UpdateTokenRevoked implements auth.TokenStore. if_not_exists keeps the first
// revocation time, which also makes a retried request harmless.
func (s *Store) UpdateTokenRevoked(ctx context.Context, tokenID string, at time.Time) (auth.TokenRecord, error) {
	const op = "UpdateTokenRevoked"
	if !validPart(tokenID) {
		return auth.TokenRecord{}, notFound("token")
	}
	hash, err := s.follow(ctx, s.tokensTable, key(tokenIDPK(tokenID), skTokenID), "hash", "token", op)
	if err != nil {
		return auth.TokenRecord{}, err
	}
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.tokensTable),
		Key:                       key(tokenPK(hash), skToken),
		UpdateExpression:          aws.String("SET revoked_at = if_not_exists(revoked_at, :at)"),
		ConditionExpression:       aws.String("attribute_exists(PK)"),
		ExpressionAttributeValues: item{":at": avTime(s.orNow(at))},
		ReturnValues:              types.ReturnValueAllNew,
	})
	if conditionFailed(err) {
		return auth.TokenRecord{}, notFound("token")
	}
	if err != nil {
		return auth.TokenRecord{}, fail(op, err)
	}
	t, err := decodeToken(out.Attributes)
	return t, fail(op, err)
}
