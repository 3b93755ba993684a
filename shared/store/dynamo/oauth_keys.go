package dynamo

import (
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Keys of the authorization server's state (store.OAuthStore), all in the main table
// and all OUTSIDE TenantPrefix: the MCP function's role, confined to WS#*
// keys, can reach none of them. Every GSI1 partition value starts with OAUTH# too, so
// a LeadingKeys condition holds whichever key IAM evaluates for an index query.
//
//	client             OAUTH#CLIENT#<client_id>        CLIENT    GSI1: OAUTH#CLIENTS / <created>#<id>   (ttl)
//	pending request    OAUTH#PENDING#<id>              PENDING                                          (ttl)
//	authorization code OAUTH#CODE#<sha256>             CODE                                             (ttl)
//	grant              OAUTH#GRANT#<id>                GRANT     GSI1: OAUTH#GRANTS#USER#<user> / <created>#<id> (ttl)
//	refresh hash       OAUTH#REFRESH#<sha256>          REFRESH   -> grant id, state current|rotated     (ttl)
//	grant list entry   OAUTH#WSGRANTS#<ws>             <created>#<id>  GSI1: OAUTH#GRANTS / <created>#<id> (ttl)
//	policy             OAUTH#POLICY                    POLICY                                           (no ttl)
//	client assertion   OAUTH#ASSERTION#<sha256>        ASSERTION                                        (ttl)
//
// Member lookups (written by UpdateMember and DeleteMember beside the member record,
// which stays the source of truth: a lookup only says where to look):
//
//	by e-mail          MEMBERBY#EMAIL#<sha256(email)>  <ws>#<user>
//	by user            MEMBERBY#USER#<user>            <ws>
//
// The e-mail goes into the key hashed: e-mails may hold '#', can be long, and are
// personal data that would otherwise show in every request log that prints keys.
//
// Access patterns and the requests that serve them:
//
//	GetOAuthClient / Get*Pending / codes / grant by id   GetItem (consistent)
//	ListOAuthClients                                     Query GSI1 OAUTH#CLIENTS, newest first
//	GetOAuthGrantByRefresh                               GetItem refresh hash, GetItem grant
//	ListOAuthGrants(ws, user) and ("", user)             Query GSI1 OAUTH#GRANTS#USER#<user>, filter ws
//	ListOAuthGrants(ws, "")                              Query OAUTH#WSGRANTS#<ws>, BatchGetItem grants
//	ListOAuthGrants("", "")                              Query GSI1 OAUTH#GRANTS, BatchGetItem grants
//	ListMembersByEmail / ListMembersOfUser               Query MEMBERBY#..., BatchGetItem member records
//	ListMembers(ws)                                      Query WS#<ws> begins_with MEMBER#
//
// A person's grants are few (clients x workspaces), so the consent and grants pages,
// which ask for one (ws, user), read one small index partition. The admin listings
// by workspace or of everything are served by the list entries, one per grant, so no
// Scan is ever needed and the grant item itself has only one index slot to fill.
const (
	skClient  = "CLIENT"
	skPending = "PENDING"
	skCode    = "CODE"
	skGrant   = "GRANT"
	skRefresh = "REFRESH"
	skPolicy  = "POLICY"
	skAssert  = "ASSERTION"

	oauthClientsGSI   = OAuthPrefix + "CLIENTS"
	oauthAllGrantsGSI = OAuthPrefix + "GRANTS"
	oauthPolicyPK     = OAuthPrefix + "POLICY"
)

func oauthClientPK(id string) string    { return OAuthPrefix + "CLIENT#" + id }
func oauthPendingPK(id string) string   { return OAuthPrefix + "PENDING#" + id }
func oauthCodePK(hash string) string    { return OAuthPrefix + "CODE#" + hash }
func oauthGrantPK(id string) string     { return OAuthPrefix + "GRANT#" + id }
func oauthRefreshPK(hash string) string { return OAuthPrefix + "REFRESH#" + hash }
func oauthAssertPK(hash string) string  { return OAuthPrefix + "ASSERTION#" + hash }
func oauthWSGrantsPK(ws string) string  { return OAuthPrefix + "WSGRANTS#" + ws }
func oauthUserGrantsGSI(user string) string {
	return OAuthPrefix + "GRANTS#USER#" + user
}

// createdSK orders a kind newest first under ScanIndexForward=false, ties broken by id
// descending, as the SQLite store orders (created_at DESC, id DESC).
func createdSK(created time.Time, id string) string { return fmtTime(created) + "#" + id }

func memberEmailPK(email string) string {
	sum := sha256.Sum256([]byte(email))
	return MemberLookupPrefix + "EMAIL#" + hex.EncodeToString(sum[:])
}
func memberUserPK(user string) string { return MemberLookupPrefix + "USER#" + user }

// expiryTTL is the TTL attribute of an item that expires at t, rounded up to the
// second: DynamoDB may then delete it only once it has expired. It deletes lazily
// (often days later), so every read checks the expiry itself.
func expiryTTL(t time.Time) types.AttributeValue {
	sec := t.Unix()
	if t.Nanosecond() != 0 {
		sec++
	}
	return avN(sec)
}

// setStr sets a string attribute unless v is empty: an absent attribute decodes as "",
// and keeps items free of empty strings.
func setStr(it item, name, v string) {
	if v != "" {
		it[name] = avS(v)
	}
}
