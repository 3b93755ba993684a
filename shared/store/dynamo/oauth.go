package dynamo

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aacworkflow/aacmcp/shared/store"
)

var _ store.OAuthStore = (*Store)(nil)

// Conventions of the OAuth items (keys in oauth_keys.go), beyond store.OAuthStore's
// comments:
//   - every item that expires carries expires_at (the fixed-width time string, which
//     conditions compare as times) and ttl (epoch seconds, for DynamoDB's sweeper). A
//     read treats an expired item as absent, and a create over an expired item
//     replaces it, as it would once the sweeper had been;
//   - every conditional write names the state it expects, and admits its own retry:
//     the SDK resends a request whose response was lost, and the resent request must
//     not fail on the effect of the first one (nonce attributes, as elsewhere here);
//   - there is no TransactWriteItems (dynalite lacks it); where one would be the right
//     tool the method says so, and orders its writes so that a crash between two of
//     them leaves only what the reads already ignore.

// oauthLive is the condition "the item exists and has not expired" (:now = fmtTime(now)).
const oauthLive = "attribute_exists(PK) AND expires_at > :now"

// oauthCreatable is the condition of a create: no item, an expired one, or our own
// retried request.
const oauthCreatable = "attribute_not_exists(PK) OR expires_at <= :now OR nonce = :n"

// putNew writes a new item under oauthCreatable (or cond when given); conflict when a
// live item holds the key.
func (s *Store) putNew(ctx context.Context, it item, n, what, op string) error {
	it["nonce"] = avS(n)
	_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                 aws.String(s.table),
		Item:                      it,
		ConditionExpression:       aws.String(oauthCreatable),
		ExpressionAttributeValues: item{":now": avTime(s.now()), ":n": avS(n)},
	})
	if conditionFailed(err) {
		return store.Errorf(store.ErrAlreadyExists, "%s already exists", what)
	}
	return fail(op, err)
}

// ---- clients ----

// A client's expiry is its lapse: OAuthClientLapse after its last use. Its conditions
// compare last_used_at with the cutoff instead of expires_at, because last use is what
// moves.

func (s *Store) lapseCutoff() types.AttributeValue {
	return avTime(s.now().Add(-store.OAuthClientLapse))
}

func encodeClient(c store.OAuthClient) item {
	it := key(oauthClientPK(c.ClientID), skClient)
	it[attrGSI1PK], it[attrGSI1SK] = avS(oauthClientsGSI), avS(createdSK(c.CreatedAt, c.ClientID))
	it["client_id"] = avS(c.ClientID)
	setStr(it, "secret_hash", c.SecretHash)
	setStr(it, "name", c.Name)
	it["redirect_uris"], it["grant_types"] = avStrings(c.RedirectURIs), avStrings(c.GrantTypes)
	setStr(it, "application_type", c.ApplicationType)
	setStr(it, "token_endpoint_auth_method", c.TokenEndpointAuthMethod)
	setStr(it, "client_uri", c.ClientURI)
	setStr(it, "source_ip", c.SourceIP)
	setStr(it, "jwks_uri", c.JWKSURI)
	setStr(it, "jwks", c.JWKS)
	setStr(it, "signing_alg", c.SigningAlg)
	it["created_at"], it["last_used_at"] = avTime(c.CreatedAt), avTime(c.LastUsedAt)
	it[attrTTL] = expiryTTL(c.LastUsedAt.Add(store.OAuthClientLapse))
	return it
}

func decodeClient(it item) (store.OAuthClient, error) {
	d := decoder{it: it}
	c := store.OAuthClient{
		ClientID: d.str("client_id"), SecretHash: d.str("secret_hash"), Name: d.str("name"),
		RedirectURIs: d.strings("redirect_uris"), ApplicationType: d.str("application_type"),
		TokenEndpointAuthMethod: d.str("token_endpoint_auth_method"), GrantTypes: d.strings("grant_types"),
		ClientURI: d.str("client_uri"), SourceIP: d.str("source_ip"),
		JWKSURI: d.str("jwks_uri"), JWKS: d.str("jwks"), SigningAlg: d.str("signing_alg"),
		CreatedAt: d.time("created_at"), LastUsedAt: d.time("last_used_at"),
	}
	return c, d.err
}

func (s *Store) clientLive(c store.OAuthClient) bool {
	return c.LastUsedAt.After(s.now().Add(-store.OAuthClientLapse))
}

// CreateOAuthClient implements store.OAuthStore. LastUsedAt defaults to CreatedAt,
// which defaults to now.
func (s *Store) CreateOAuthClient(ctx context.Context, c store.OAuthClient) error {
	const op = "CreateOAuthClient"
	if !validPart(c.ClientID) {
		return store.Invalid("client id is required and must not contain '#'")
	}
	c.CreatedAt, c.LastUsedAt = store.UseTimes(s.now(), c.CreatedAt, c.LastUsedAt)
	n := nonce()
	it := encodeClient(c)
	it["nonce"] = avS(n)
	_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                 aws.String(s.table),
		Item:                      it,
		ConditionExpression:       aws.String("attribute_not_exists(PK) OR last_used_at <= :cut OR nonce = :n"),
		ExpressionAttributeValues: item{":cut": s.lapseCutoff(), ":n": avS(n)},
	})
	if conditionFailed(err) {
		return store.Errorf(store.ErrAlreadyExists, "client already exists")
	}
	return fail(op, err)
}

// getClient reads a client; nil when absent or lapsed.
func (s *Store) getClient(ctx context.Context, id, op string) (*store.OAuthClient, error) {
	if !validPart(id) {
		return nil, nil
	}
	it, err := s.get(ctx, s.table, key(oauthClientPK(id), skClient), op)
	if err != nil || it == nil {
		return nil, err
	}
	c, err := decodeClient(it)
	if err != nil {
		return nil, fail(op, err)
	}
	if !s.clientLive(c) {
		return nil, nil
	}
	return &c, nil
}

// GetOAuthClient implements store.OAuthStore; a lapsed client is not_found.
func (s *Store) GetOAuthClient(ctx context.Context, clientID string) (store.OAuthClient, error) {
	c, err := s.getClient(ctx, clientID, "GetOAuthClient")
	if err != nil {
		return store.OAuthClient{}, err
	}
	if c == nil {
		return store.OAuthClient{}, notFound("client")
	}
	return *c, nil
}

// UpdateOAuthClientUsed implements store.OAuthStore: one conditional update that only
// moves last_used_at (and the TTL with it) forward. A refused update is told apart by a
// read: a live client already used later (or our own retried request) is success.
func (s *Store) UpdateOAuthClientUsed(ctx context.Context, clientID string, at time.Time) error {
	const op = "UpdateOAuthClientUsed"
	if !validPart(clientID) {
		return notFound("client")
	}
	at = s.orNow(at)
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       key(oauthClientPK(clientID), skClient),
		UpdateExpression:          aws.String("SET last_used_at = :at, #ttl = :ttl"),
		ConditionExpression:       aws.String("attribute_exists(PK) AND last_used_at > :cut AND last_used_at < :at"),
		ExpressionAttributeNames:  map[string]string{"#ttl": attrTTL},
		ExpressionAttributeValues: item{":at": avTime(at), ":ttl": expiryTTL(at.Add(store.OAuthClientLapse)), ":cut": s.lapseCutoff()},
	})
	if !conditionFailed(err) {
		return fail(op, err)
	}
	c, err := s.getClient(ctx, clientID, op)
	if err != nil {
		return err
	}
	if c == nil {
		return notFound("client")
	}
	return nil
}

// DeleteOAuthClient implements store.OAuthStore; an absent or lapsed client is
// not_found. Read, then delete unconditionally: a conditional delete would answer a
// retry of itself (first response lost) with not_found although it succeeded.
func (s *Store) DeleteOAuthClient(ctx context.Context, clientID string) error {
	const op = "DeleteOAuthClient"
	c, err := s.getClient(ctx, clientID, op)
	if err != nil {
		return err
	}
	if c == nil {
		return notFound("client")
	}
	_, err = s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(s.table), Key: key(oauthClientPK(clientID), skClient),
	})
	return fail(op, err)
}

// ListOAuthClients implements store.OAuthStore: newest first from the clients' index
// partition, lapsed ones filtered out by DynamoDB. The index is eventually consistent:
// a client registered a moment ago may be missing (this list is for the admin CLI).
func (s *Store) ListOAuthClients(ctx context.Context) ([]store.OAuthClient, error) {
	const op = "ListOAuthClients"
	return queryDecoded(ctx, s, &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		IndexName:                 aws.String(indexGSI1),
		KeyConditionExpression:    aws.String("GSI1PK = :pk"),
		FilterExpression:          aws.String("last_used_at > :cut"),
		ExpressionAttributeValues: item{":pk": avS(oauthClientsGSI), ":cut": s.lapseCutoff()},
		ScanIndexForward:          aws.Bool(false),
	}, op, decodeClient)
}

// ---- pending authorizations ----

// A consumed pending request keeps its item, marked with the consuming call's nonce
// (consumed_by), until a follow-up delete or the TTL removes it; reads treat it as absent.
// Marking rather than deleting is what lets the one winner know it won even when the
// SDK has to resend its request: the resent mark finds its own nonce.

func avAccounts(as []store.OAuthAccount) types.AttributeValue {
	l := make([]types.AttributeValue, len(as))
	for i, a := range as {
		l[i] = &types.AttributeValueMemberM{Value: item{
			"workspace_id": avS(a.WorkspaceID), "user_id": avS(a.UserID), "role": avS(string(a.Role)),
		}}
	}
	return &types.AttributeValueMemberL{Value: l}
}

// accounts returns a list-of-accounts attribute; absent is an empty (non-nil) slice.
func (d *decoder) accounts(name string) []store.OAuthAccount {
	return listOf(d, name, func(e types.AttributeValue) (store.OAuthAccount, bool) {
		mv, ok := e.(*types.AttributeValueMemberM)
		if !ok {
			return store.OAuthAccount{}, false
		}
		sub := decoder{it: mv.Value}
		a := store.OAuthAccount{WorkspaceID: sub.str("workspace_id"), UserID: sub.str("user_id"), Role: store.Role(sub.str("role"))}
		return a, sub.err == nil
	})
}

func encodePending(p store.OAuthPending) item {
	it := key(oauthPendingPK(p.ID), skPending)
	it["id"] = avS(p.ID)
	for name, v := range map[string]string{
		"purpose": p.Purpose, "browser_hash": p.BrowserHash, "csrf_hash": p.CSRFHash, "client_id": p.ClientID,
		"client_name": p.ClientName, "redirect_uri": p.RedirectURI, "state": p.State,
		"code_challenge": p.CodeChallenge, "resource": p.Resource, "upstream_nonce": p.UpstreamNonce,
		"upstream_verifier": p.UpstreamVerifier, "subject": p.Subject, "email": p.Email,
	} {
		setStr(it, name, v)
	}
	it["scopes"], it["accounts"] = avStrings(p.Scopes), avAccounts(p.Accounts)
	it["created_at"], it["expires_at"], it[attrTTL] = avTime(p.CreatedAt), avTime(p.ExpiresAt), expiryTTL(p.ExpiresAt)
	return it
}

func decodePending(it item) (store.OAuthPending, error) {
	d := decoder{it: it}
	p := store.OAuthPending{
		ID: d.str("id"), Purpose: d.str("purpose"), BrowserHash: d.str("browser_hash"), CSRFHash: d.str("csrf_hash"),
		ClientID: d.str("client_id"), ClientName: d.str("client_name"), RedirectURI: d.str("redirect_uri"),
		State: d.str("state"), CodeChallenge: d.str("code_challenge"), Resource: d.str("resource"),
		Scopes: d.strings("scopes"), UpstreamNonce: d.str("upstream_nonce"), UpstreamVerifier: d.str("upstream_verifier"),
		Subject: d.str("subject"), Email: d.str("email"), Accounts: d.accounts("accounts"),
		CreatedAt: d.time("created_at"), ExpiresAt: d.time("expires_at"),
	}
	return p, d.err
}

func (s *Store) checkPending(p *store.OAuthPending) error {
	if !validPart(p.ID) {
		return store.Invalid("pending authorization id is required and must not contain '#'")
	}
	if p.ExpiresAt.IsZero() {
		return store.Invalid("pending authorization needs an expiry")
	}
	p.CreatedAt = s.orNow(p.CreatedAt)
	return nil
}

// CreateOAuthPending implements store.OAuthStore. A consumed request still held under
// the id counts as absent, as it does for reads.
func (s *Store) CreateOAuthPending(ctx context.Context, p store.OAuthPending) error {
	if err := s.checkPending(&p); err != nil {
		return err
	}
	err := s.putPending(ctx, p, oauthCreatable+" OR attribute_exists(consumed_by)")
	if conditionFailed(err) {
		return store.Errorf(store.ErrAlreadyExists, "pending authorization already exists")
	}
	return fail("CreateOAuthPending", err)
}

// GetOAuthPending implements store.OAuthStore.
func (s *Store) GetOAuthPending(ctx context.Context, id string) (store.OAuthPending, error) {
	const op = "GetOAuthPending"
	if !validPart(id) {
		return store.OAuthPending{}, notFound("pending authorization")
	}
	it, err := s.get(ctx, s.table, key(oauthPendingPK(id), skPending), op)
	if err != nil {
		return store.OAuthPending{}, err
	}
	if it == nil || (&decoder{it: it}).has("consumed_by") {
		return store.OAuthPending{}, notFound("pending authorization")
	}
	p, err := decodePending(it)
	if err != nil {
		return store.OAuthPending{}, fail(op, err)
	}
	if !s.now().Before(p.ExpiresAt) {
		return store.OAuthPending{}, notFound("pending authorization")
	}
	return p, nil
}

// UpdateOAuthPending implements store.OAuthStore: a put conditional on the request
// being live and unconsumed. Our own retried put passes by its nonce, but never over
// a consumption that came in between: that would revive a used consent.
func (s *Store) UpdateOAuthPending(ctx context.Context, p store.OAuthPending) error {
	if err := s.checkPending(&p); err != nil {
		return err
	}
	err := s.putPending(ctx, p, "attribute_not_exists(consumed_by) AND (("+oauthLive+") OR nonce = :n)")
	if conditionFailed(err) {
		return notFound("pending authorization")
	}
	return fail("UpdateOAuthPending", err)
}

// putPending writes p under cond, with a fresh nonce (:n) that lets the SDK's resend
// of this very put pass a condition its first attempt already made false.
func (s *Store) putPending(ctx context.Context, p store.OAuthPending, cond string) error {
	n := nonce()
	it := encodePending(p)
	it["nonce"] = avS(n)
	_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                 aws.String(s.table),
		Item:                      it,
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeValues: item{":now": avTime(s.now()), ":n": avS(n)},
	})
	return err
}

// DeleteOAuthPending implements store.OAuthStore. The consumption is one conditional
// update that marks the item with this call's nonce: of concurrent callers exactly one
// finds it unmarked, and a resent request of the winner finds its own mark. The item
// itself is deleted afterwards, in the background (losing that delete leaves a
// consumed item that reads ignore until the TTL takes it).
func (s *Store) DeleteOAuthPending(ctx context.Context, id string) error {
	const op = "DeleteOAuthPending"
	if !validPart(id) {
		return notFound("pending authorization")
	}
	n := nonce()
	k := key(oauthPendingPK(id), skPending)
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       k,
		UpdateExpression:          aws.String("SET consumed_by = :n"),
		ConditionExpression:       aws.String(oauthLive + " AND (attribute_not_exists(consumed_by) OR consumed_by = :n)"),
		ExpressionAttributeValues: item{":now": avTime(s.now()), ":n": avS(n)},
	})
	if conditionFailed(err) {
		return notFound("pending authorization")
	}
	if err != nil {
		return fail(op, err)
	}
	// A resent delete finds the item gone: its condition fails.
	s.laterDelete(ctx, "delete a consumed pending authorization", dynamodb.DeleteItemInput{
		Key:                       k,
		ConditionExpression:       aws.String("consumed_by = :n"),
		ExpressionAttributeValues: item{":n": avS(n)},
	}, "pending_id", id)
	return nil
}

// ---- codes ----

func encodeCode(c store.OAuthCode) item {
	it := key(oauthCodePK(c.Hash), skCode)
	it["hash"] = avS(c.Hash)
	for name, v := range map[string]string{
		"grant_id": c.GrantID, "client_id": c.ClientID, "redirect_uri": c.RedirectURI,
		"code_challenge": c.CodeChallenge, "resource": c.Resource, "workspace_id": c.WorkspaceID, "user_id": c.UserID,
	} {
		setStr(it, name, v)
	}
	it["scopes"] = avStrings(c.Scopes)
	it["created_at"], it["expires_at"], it[attrTTL] = avTime(c.CreatedAt), avTime(c.ExpiresAt), expiryTTL(c.ExpiresAt)
	if c.UsedAt != nil {
		it["used_at"] = avTime(*c.UsedAt)
	}
	return it
}

func decodeCode(it item) (store.OAuthCode, string, error) {
	d := decoder{it: it}
	c := store.OAuthCode{
		Hash: d.str("hash"), GrantID: d.str("grant_id"), ClientID: d.str("client_id"), RedirectURI: d.str("redirect_uri"),
		CodeChallenge: d.str("code_challenge"), Resource: d.str("resource"), Scopes: d.strings("scopes"),
		WorkspaceID: d.str("workspace_id"), UserID: d.str("user_id"),
		CreatedAt: d.time("created_at"), ExpiresAt: d.time("expires_at"),
	}
	if d.has("used_at") {
		at := d.time("used_at")
		c.UsedAt = &at
	}
	return c, d.str("used_by"), d.err
}

// CreateOAuthCode implements store.OAuthStore.
func (s *Store) CreateOAuthCode(ctx context.Context, c store.OAuthCode) error {
	if !validPart(c.Hash) || c.ExpiresAt.IsZero() {
		return store.Invalid("authorization code needs a hash and an expiry")
	}
	c.CreatedAt = s.orNow(c.CreatedAt)
	return s.putNew(ctx, encodeCode(c), nonce(), "authorization code", "CreateOAuthCode")
}

// CreateOAuthAssertion implements store.OAuthStore: one conditional put, so of
// concurrent uses of one assertion exactly one passes.
func (s *Store) CreateOAuthAssertion(ctx context.Context, hash string, expiresAt time.Time) error {
	if !validPart(hash) || expiresAt.IsZero() {
		return store.Invalid("client assertion needs a hash and an expiry")
	}
	it := key(oauthAssertPK(hash), skAssert)
	it["expires_at"], it[attrTTL] = avTime(expiresAt), expiryTTL(expiresAt)
	return s.putNew(ctx, it, nonce(), "client assertion", "CreateOAuthAssertion")
}

// ConsumeOAuthCode implements store.OAuthStore. The redemption is one conditional
// update (used_at absent -> set, with this call's nonce in used_by) returning the item
// as it was: exactly one of concurrent redemptions passes. A refused one reads the
// code: used by our own nonce means the SDK resent our winning request, which is then
// still the first redemption; otherwise the code comes back with the winner's UsedAt.
func (s *Store) ConsumeOAuthCode(ctx context.Context, hash string, at time.Time) (store.OAuthCode, error) {
	const op = "ConsumeOAuthCode"
	if !validPart(hash) {
		return store.OAuthCode{}, notFound("authorization code")
	}
	at = s.orNow(at)
	n := nonce()
	k := key(oauthCodePK(hash), skCode)
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       k,
		UpdateExpression:          aws.String("SET used_at = :at, used_by = :n"),
		ConditionExpression:       aws.String(oauthLive + " AND attribute_not_exists(used_at)"),
		ExpressionAttributeValues: item{":now": avTime(s.now()), ":at": avTime(at), ":n": avS(n)},
		ReturnValues:              types.ReturnValueAllOld,
	})
	if err == nil {
		c, _, err := decodeCode(out.Attributes)
		return c, fail(op, err)
	}
	if !conditionFailed(err) {
		return store.OAuthCode{}, fail(op, err)
	}
	it, err := s.get(ctx, s.table, k, op)
	if err != nil {
		return store.OAuthCode{}, err
	}
	if it == nil {
		return store.OAuthCode{}, notFound("authorization code")
	}
	c, usedBy, err := decodeCode(it)
	if err != nil {
		return store.OAuthCode{}, fail(op, err)
	}
	if !s.now().Before(c.ExpiresAt) {
		return store.OAuthCode{}, notFound("authorization code")
	}
	if usedBy == n {
		c.UsedAt = nil // our own first attempt set it: as it was before, unused
	}
	return c, nil
}

// ---- policy ----

// GetOAuthPolicy implements store.OAuthStore.
func (s *Store) GetOAuthPolicy(ctx context.Context) (store.OAuthPolicy, error) {
	const op = "GetOAuthPolicy"
	it, err := s.get(ctx, s.table, key(oauthPolicyPK, skPolicy), op)
	if err != nil {
		return store.OAuthPolicy{}, err
	}
	if it == nil {
		return store.OAuthPolicy{Mode: store.OAuthPolicyAny, Allowed: []string{}}, nil
	}
	d := decoder{it: it}
	p := store.OAuthPolicy{Mode: d.str("mode"), Allowed: d.strings("allowed")}
	return p, fail(op, d.err)
}

// UpdateOAuthPolicy implements store.OAuthStore: one unconditional put of the one
// item (last writer wins, and a resent put writes the same again).
func (s *Store) UpdateOAuthPolicy(ctx context.Context, p store.OAuthPolicy) error {
	if p.Mode != store.OAuthPolicyAny && p.Mode != store.OAuthPolicyAllowlist {
		return store.Errorf(store.ErrInvalid, "policy mode must be %q or %q", store.OAuthPolicyAny, store.OAuthPolicyAllowlist)
	}
	it := key(oauthPolicyPK, skPolicy)
	it["mode"], it["allowed"] = avS(p.Mode), avStrings(p.Allowed)
	_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: it})
	return fail("UpdateOAuthPolicy", err)
}
