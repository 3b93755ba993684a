// Package audit defines the audit record of a tool call or an authorization event,
// and where records go.
//
// Exactly one Record is written for every tool invocation (tools/call or
// POST /tools/{name}), allowed or denied, and for every request turned away for its
// token; these are EventToolCall records. The authorization server writes
// EventAuthorization records (consent, tokens, revocations, registrations) to the
// same log. The record is delivered before the response is returned. Raw arguments
// and idempotency keys are never recorded: only their HMAC-SHA256 under a
// per-deployment key (they may hold personal data, and a plain hash of a short
// argument can be recovered by guessing; see HMAC).
package audit

import "context"

// EventVersion is the schema version of the records written now.
//
// 1.1 added client_id, event_type and action. Version 1.0 records, which lack them,
// are still read everywhere: a 1.0 record is a tool call of a personal token (see
// Normalize), and the query views read its missing columns as NULL.
//
// 1.2 replaced args_sha256 (a plain SHA-256 of the canonical arguments) with
// args_hmac, and idempotency_key (the key in clear) with idempotency_key_hmac, both
// keyed with the deployment's HMAC key. Records of 1.0 and 1.1 keep their
// args_sha256 and idempotency_key (the legacy fields at the end of Record), and have
// no HMACs: an old value cannot be keyed after the fact.
//
// 1.3 added confirmation: how a destructive call was confirmed (ConfirmationFlag,
// ConfirmationElicited), "" for every other record. Records of 1.2 and earlier have
// none: readers take it as "" (the query views read NULL; queries coalesce it).
const EventVersion = "1.3"

// EventVersion12 is the version before confirmation.
const EventVersion12 = "1.2"

// EventVersion10 is the first schema version, before the authorization server.
const EventVersion10 = "1.0"

// EventVersion11 is the version before the keyed digests.
const EventVersion11 = "1.1"

// legacyDigests reports whether records of version v carry args_sha256 and
// idempotency_key rather than their HMACs.
func legacyDigests(v string) bool { return v == EventVersion10 || v == EventVersion11 }

// Record is one audit event. Field names are the wire (and Athena column) names; the
// spec's own fields keep the spec's names. The JSON Schema is events/audit/record.schema.json.
// Each parquet tag is the field's JSON name: Record is also the row of a compacted
// Parquet file (shared/audit/file), whose columns are the JSON lines' keys.
type Record struct {
	EventID        string   `json:"event_id" parquet:"event_id"`
	EventVersion   string   `json:"event_version" parquet:"event_version"`
	Timestamp      string   `json:"timestamp" parquet:"timestamp"` // RFC 3339 UTC with milliseconds
	Tool           string   `json:"tool" parquet:"tool"`
	Outcome        string   `json:"outcome" parquet:"outcome"` // success, denied, error
	Reason         string   `json:"reason" parquet:"reason"`   // stable error code, "" on success
	ScopesProvided []string `json:"scopes_provided" parquet:"scopes_provided,list"`
	ScopesRequired []string `json:"scopes_required" parquet:"scopes_required,list"`
	WorkspaceID    string   `json:"workspace_id" parquet:"workspace_id"`
	UserID         string   `json:"user_id" parquet:"user_id"`
	TokenID        string   `json:"token_id" parquet:"token_id"`
	ReadOnly       bool     `json:"read_only" parquet:"read_only"`
	Destructive    bool     `json:"destructive" parquet:"destructive"`
	ConfirmPresent bool     `json:"confirm_present" parquet:"confirm_present"`
	ResourceID     string   `json:"resource_id" parquet:"resource_id"`
	// IdempotencyKeyHMAC is the HMAC of the caller's idempotency key (HMAC), ""
	// when the call had none.
	IdempotencyKeyHMAC string `json:"idempotency_key_hmac" parquet:"idempotency_key_hmac"`
	IdempotentReplay   bool   `json:"idempotent_replay" parquet:"idempotent_replay"`
	RequestID          string `json:"request_id" parquet:"request_id"`
	JSONRPCID          string `json:"jsonrpc_id" parquet:"jsonrpc_id"`
	ClientName         string `json:"client_name" parquet:"client_name"`
	ClientVersion      string `json:"client_version" parquet:"client_version"`
	ProtocolVersion    string `json:"protocol_version" parquet:"protocol_version"`
	UserAgent          string `json:"user_agent" parquet:"user_agent"`
	SourceIP           string `json:"source_ip" parquet:"source_ip"`
	// ArgsHMAC is the HMAC of the canonical arguments (HMAC).
	ArgsHMAC   string `json:"args_hmac" parquet:"args_hmac"`
	DurationMS int64  `json:"duration_ms" parquet:"duration_ms"`
	Transport  string `json:"transport" parquet:"transport"` // mcp, rest or oauth
	// ClientID is the OAuth client behind the token ("" for a personal token).
	ClientID string `json:"client_id" parquet:"client_id"`
	// EventType is EventToolCall for tool invocations and rejected tokens, and
	// EventAuthorization for the authorization server's events.
	EventType string `json:"event_type" parquet:"event_type"`
	// Action names an authorization event (ActionConsentGranted, ...); "" on tool calls.
	Action string `json:"action" parquet:"action"`
	// Confirmation is the confirmation a destructive call carried by the time it
	// ended (ConfirmationFlag, ConfirmationElicited); "" for any other tool, for a
	// destructive call stopped before its confirm check or refused there, and for
	// authorization events. Added in 1.3.
	Confirmation string `json:"confirmation" parquet:"confirmation"`

	// ArgsSHA256 and IdempotencyKey are the 1.0 and 1.1 forms of ArgsHMAC and
	// IdempotencyKeyHMAC, kept so that old records read, compact and query without
	// loss. Writers since 1.2 never set them; Validate refuses them on such
	// records. They come last and are left out when empty, so a current line does
	// not carry them.
	ArgsSHA256     string `json:"args_sha256,omitempty" parquet:"args_sha256"`
	IdempotencyKey string `json:"idempotency_key,omitempty" parquet:"idempotency_key"`
}

// Confirmations, as written in Record.Confirmation.
const (
	// ConfirmationNone: not a destructive call, or one that carried no confirmation
	// the guard accepted (no confirm: true, or stopped before the confirm check).
	ConfirmationNone = ""
	// ConfirmationFlag: the call passed the confirm check on confirm: true alone,
	// which the model writes; no person was asked through the server.
	ConfirmationFlag = "flag"
	// ConfirmationElicited: the client answered the server's form (MRTR): the
	// input_required answer that put the question, and the retry whose answer was
	// judged. The client shows the form, so a dishonest client can answer it.
	ConfirmationElicited = "elicited"
	// ConfirmationApproved: the policy approve: the call was sent to aacmcp's
	// approval page (the refusal or URL elicitation carrying the link), or ran on
	// the approval a person gave there after signing in.
	ConfirmationApproved = "approved"
)

// Confirmations lists every confirmation value, in the order of the schema's enum.
var Confirmations = []string{ConfirmationNone, ConfirmationFlag, ConfirmationElicited, ConfirmationApproved}

// Event types.
const (
	EventToolCall      = "tool_call"
	EventAuthorization = "authorization"
)

// Authorization actions.
const (
	ActionConsentGranted       = "consent_granted"
	ActionConsentDenied        = "consent_denied"
	ActionTokenIssued          = "token_issued"
	ActionTokenRefreshed       = "token_refreshed"
	ActionRefreshReuseDetected = "refresh_reuse_detected"
	ActionGrantRevoked         = "grant_revoked"
	ActionClientRegistered     = "client_registered"
	// A refused request at the token or the revocation endpoint: failed client
	// authentication, a replayed assertion, a code or refresh token the client may
	// not use, an unknown grant type. The reason is refusalReason's (shared/oauth).
	ActionTokenRefused      = "token_refused"
	ActionRevocationRefused = "revocation_refused"
	// ActionApprovalGranted and ActionApprovalDenied: a person answered a
	// destructive call's approval page (shared/approval).
	ActionApprovalGranted = "approval_granted"
	ActionApprovalDenied  = "approval_denied"
)

// Actions lists every authorization action, in the order of the schema's enum.
var Actions = []string{
	ActionConsentGranted, ActionConsentDenied, ActionTokenIssued, ActionTokenRefreshed,
	ActionRefreshReuseDetected, ActionGrantRevoked, ActionClientRegistered,
	ActionTokenRefused, ActionRevocationRefused,
	ActionApprovalGranted, ActionApprovalDenied,
}

// Sink delivers records. Write returns only when the record is durable enough that
// the response may be sent (file appended, stream acknowledged, or fallback written).
// Implementations are safe for concurrent use.
type Sink interface {
	Write(ctx context.Context, r Record) error
}

// Transports.
const (
	TransportMCP   = "mcp"
	TransportREST  = "rest"
	TransportOAuth = "oauth" // the authorization server's endpoints
)
