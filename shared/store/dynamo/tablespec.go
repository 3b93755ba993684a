// This file is the single definition of the DynamoDB key schema, indexes and TTL
// attribute of aacmcp's two tables.
//
// It is plain Go data on purpose: the CDK stack (infra) and the runtime's
// `aacmcp init --backend dynamodb` (AWS SDK) both build their tables from these values,
// so a table created by hand for local work and one deployed by `cdk deploy` cannot
// drift apart. Tests on both sides compare what they create with these specs. It
// lives with the runtime store, not under infra/, because runtime code imports
// nothing from infra/; the CDK stack imports it from here.

package dynamo

// AttributeType is the DynamoDB type of every key attribute: all keys are strings
// (docs/architecture.md section 9), which lets every tenant key start with "WS#<workspace>".
const AttributeType = "S"

// ProjectionAll is the only projection the indexes use: list queries read whole items,
// and a KEYS_ONLY index would cost a second read per row.
const ProjectionAll = "ALL"

// TableSpec is the key layout of one table.
type TableSpec struct {
	PartitionKey string
	SortKey      string
	GSIs         []GSISpec
	// TTLAttribute holds an epoch-seconds expiry; DynamoDB deletes the item after it.
	TTLAttribute string
}

// GSISpec is one global secondary index.
type GSISpec struct {
	Name         string
	PartitionKey string
	SortKey      string
	Projection   string
}

// Main is the single table that holds every workspace's issues, comments, members,
// agents, autopilot runs, usage counters, idempotency records and tombstones.
var Main = TableSpec{
	PartitionKey: "PK",
	SortKey:      "SK",
	GSIs: []GSISpec{
		// Issue lists by workspace and by status, newest update first.
		{Name: "GSI1", PartitionKey: "GSI1PK", SortKey: "GSI1SK", Projection: ProjectionAll},
	},
	TTLAttribute: "ttl",
}

// Tokens holds token hashes and the authorizer's failed-attempt counters (partition keys
// starting FailurePrefix). It is a separate table so that the authorizer's role can be
// confined to it and never reaches tenant data.
var Tokens = TableSpec{
	PartitionKey: "PK",
	SortKey:      "SK",
	GSIs: []GSISpec{
		// A workspace's tokens, for `aacmcp token list`.
		{Name: "GSI1", PartitionKey: "GSI1PK", SortKey: "GSI1SK", Projection: ProjectionAll},
	},
	TTLAttribute: "ttl",
}

// Key prefixes that IAM conditions (dynamodb:LeadingKeys) are written against.
const (
	// TenantPrefix starts every partition key of the main table and of its index.
	TenantPrefix = "WS#"
	// TokenPrefix starts the partition key of a token record.
	TokenPrefix = "TOKEN#"
	// FailurePrefix starts the partition key of a failed-attempt counter.
	FailurePrefix = "FAIL#"
	// OAuthPrefix starts the partition key (and the GSI1 partition key) of every
	// item of the OAuth authorization server's state in the main table: outside
	// TenantPrefix, so a role confined to tenant keys cannot reach it.
	OAuthPrefix = "OAUTH#"
	// MemberLookupPrefix starts the partition key of the main table's lookup items
	// that find member records by e-mail and by user id across workspaces (written
	// beside the member record, read by the authorization server).
	MemberLookupPrefix = "MEMBERBY#"
)

// Kinds of tenant partition whose key is TenantPrefix<ws>#<kind>#<id>, which IAM
// conditions name: the authorization server's approval page reads an issue
// (IssueKind, by key through IssueKeyKind) or a comment (CommentRefKind) for its
// preview, and decides approvals (ApprovalKind); it reaches no other kind.
const (
	IssueKind      = "ISSUE"
	IssueKeyKind   = "KEY"
	CommentRefKind = "COMMENT"
	ApprovalKind   = "APPROVAL"
)

// KeyAttributes lists every attribute the table's and its indexes' key schemas use,
// each once, in first-use order: the AttributeDefinitions of a CreateTable call.
func (t TableSpec) KeyAttributes() []string {
	var out []string
	seen := map[string]bool{}
	add := func(name string) {
		if name != "" && !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	add(t.PartitionKey)
	add(t.SortKey)
	for _, g := range t.GSIs {
		add(g.PartitionKey)
		add(g.SortKey)
	}
	return out
}

// GSI returns the index of that name.
func (t TableSpec) GSI(name string) (GSISpec, bool) {
	for _, g := range t.GSIs {
		if g.Name == name {
			return g, true
		}
	}
	return GSISpec{}, false
}

// TokenIDPrefix starts the partition key of a token id's lookup item (id -> hash) in the
// tokens table: written beside every token record, read to revoke a token by its id.
const TokenIDPrefix = "TOKENID#"
