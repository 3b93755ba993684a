package dynamo

import (
	"strconv"
	"time"
)

// Attribute names of the key schema (shared/store/dynamo/tablespec.go is the source of truth; these are
// checked against it by a test) and the TTL attribute.
const (
	attrPK     = "PK"
	attrSK     = "SK"
	attrGSI1PK = "GSI1PK"
	attrGSI1SK = "GSI1SK"
	attrTTL    = "ttl"
	indexGSI1  = "GSI1"
)

// Item kinds of the main table. Every tenant partition key starts with "WS#<ws>" (IAM
// LeadingKeys); the OAuth items and member lookups outside it are in oauth_keys.go. Ids embedded in keys never contain '#' (validPart), so no id can reach
// another kind's keys, let alone another workspace's.
//
//	workspace          WS#<ws>                         META
//	member             WS#<ws>                         MEMBER#<user>
//	agent              WS#<ws>                         AGENT#<agent>
//	issue              WS#<ws>#ISSUE#<id>              META      GSI1: WS#<ws>#ISSUES / UPD#<updated>#<id>
//	comment            WS#<ws>#ISSUE#<id>              COMMENT#<ulid>
//	autopilot run      WS#<ws>#ISSUE#<id>              RUN#<ulid>
//	issue key -> id    WS#<ws>#KEY#<AAC-42>            META
//	comment -> issue   WS#<ws>#COMMENT#<id>            META
//	run -> issue       WS#<ws>#RUN#<id>                META
//	tombstones         WS#<ws>#GONE#ISSUE#<id>         META      (and GONE#KEY#<key>, GONE#COMMENT#<id>; ttl)
//	usage              WS#<ws>#USAGE                   DAY#<yyyy-mm-dd>#TOOL#<tool>
//	idempotency        WS#<ws>#IDEM#<user>#<tool>#<h>  META      (ttl)
//	rate counter       WS#<ws>#RATE#<window>#<key>     META      (ttl)
//
// Tokens table:
//
//	token              TOKEN#<sha256>                  TOKEN     GSI1: WS#<ws>#TOKENS / <created>#<id>
//	token id -> hash   TOKENID#<id>                    TOKENID   GSI1: TOKENS / <created>#<id>
//
// Issue lists use ONE index partition per workspace (WS#<ws>#ISSUES), newest update
// first; a status (or assignee, label, text) filter is a FilterExpression on that
// query, read page after page until the page is full. The alternative, a second
// per-status copy of every issue, would double every issue write and, without
// transactions, could drift from the issue; an issue tracker's workspace is small
// enough that reading past non-matching issues is the cheaper trade.
//
// Usage lives in one partition per workspace (not one per day as docs/architecture.md section 9 sketches)
// so that ListUsage is one strongly consistent Query whatever the span.
const (
	skMeta    = "META"
	skToken   = "TOKEN"
	skTokenID = "TOKENID"
	skComment = "COMMENT#"
	skRun     = "RUN#"
	skMember  = "MEMBER#"
	skAgent   = "AGENT#"
)

func wsPK(ws string) string                           { return TenantPrefix + ws }
func issuePK(ws, id string) string                    { return wsPK(ws) + "#" + IssueKind + "#" + id }
func issueListPK(ws string) string                    { return wsPK(ws) + "#ISSUES" }
func issueKeyPK(ws, key string) string                { return wsPK(ws) + "#" + IssueKeyKind + "#" + key }
func commentRefPK(ws, id string) string               { return wsPK(ws) + "#" + CommentRefKind + "#" + id }
func runRefPK(ws, id string) string                   { return wsPK(ws) + "#RUN#" + id }
func goneIssuePK(ws, id string) string                { return wsPK(ws) + "#GONE#ISSUE#" + id }
func goneKeyPK(ws, key string) string                 { return wsPK(ws) + "#GONE#KEY#" + key }
func goneCommentPK(ws, id string) string              { return wsPK(ws) + "#GONE#COMMENT#" + id }
func usagePK(ws string) string                        { return wsPK(ws) + "#USAGE" }
func usageSK(date, tool string) string                { return "DAY#" + date + "#TOOL#" + tool }
func issueListSK(updated time.Time, id string) string { return "UPD#" + fmtTime(updated) + "#" + id }

func idemPK(ws, user, tool, hash string) string {
	return wsPK(ws) + "#IDEM#" + user + "#" + tool + "#" + hash
}

func ratePK(ws, key string, window time.Time) string {
	return wsPK(ws) + "#RATE#" + strconv.FormatInt(window.Unix(), 10) + "#" + key
}

func tokenPK(hash string) string                      { return TokenPrefix + hash }
func tokenIDPK(id string) string                      { return "TOKENID#" + id }
func tokenListPK(ws string) string                    { return wsPK(ws) + "#TOKENS" }
func tokenListSK(created time.Time, id string) string { return fmtTime(created) + "#" + id }

// allTokensPK is the index partition listing every token id (admin CLI only).
const allTokensPK = "TOKENS"
