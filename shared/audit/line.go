package audit

import (
	"slices"
	"strconv"

	"github.com/aacworkflow/aacmcp/shared/internal/jsonstr"
)

// AppendLine appends r to dst as one JSON line ending in '\n', the form every sink
// writes, and returns the extended slice. Nil slices are written as [] so that
// consumers see the schema's arrays, never null.
//
// The bytes are exactly those encoding/json's Marshal produced for Record before this
// encoder existed (field order, string escaping including the HTML-safe escapes, \u2028
// and \u2029, and U+FFFD for invalid UTF-8): lines already in files, in Firehose's S3
// objects and in golden files stay comparable byte for byte, and the size guard
// (shared/audit/record's Fit) measures what is written. The equivalence is checked
// against encoding/json by a table test and a differential fuzz target.
//
// It is written out by hand because reflection was a measurable part of a tool call's
// CPU; a record has a fixed shape, so nothing is lost by it. Adding a field to Record
// means adding it here: TestAppendLineMatchesJSON fails until that is done.
func AppendLine(dst []byte, r Record) []byte {
	return appendRecord(slices.Grow(dst, lineSize(&r)), &r)
}

func appendRecord(dst []byte, r *Record) []byte {
	dst = jsonstr.Append(append(dst, `{"event_id":`...), r.EventID)
	dst = jsonstr.Append(append(dst, `,"event_version":`...), r.EventVersion)
	dst = jsonstr.Append(append(dst, `,"timestamp":`...), r.Timestamp)
	dst = jsonstr.Append(append(dst, `,"tool":`...), r.Tool)
	dst = jsonstr.Append(append(dst, `,"outcome":`...), r.Outcome)
	dst = jsonstr.Append(append(dst, `,"reason":`...), r.Reason)
	dst = appendStrings(append(dst, `,"scopes_provided":`...), r.ScopesProvided)
	dst = appendStrings(append(dst, `,"scopes_required":`...), r.ScopesRequired)
	dst = jsonstr.Append(append(dst, `,"workspace_id":`...), r.WorkspaceID)
	dst = jsonstr.Append(append(dst, `,"user_id":`...), r.UserID)
	dst = jsonstr.Append(append(dst, `,"token_id":`...), r.TokenID)
	dst = strconv.AppendBool(append(dst, `,"read_only":`...), r.ReadOnly)
	dst = strconv.AppendBool(append(dst, `,"destructive":`...), r.Destructive)
	dst = strconv.AppendBool(append(dst, `,"confirm_present":`...), r.ConfirmPresent)
	dst = jsonstr.Append(append(dst, `,"resource_id":`...), r.ResourceID)
	dst = jsonstr.Append(append(dst, `,"idempotency_key_hmac":`...), r.IdempotencyKeyHMAC)
	dst = strconv.AppendBool(append(dst, `,"idempotent_replay":`...), r.IdempotentReplay)
	dst = jsonstr.Append(append(dst, `,"request_id":`...), r.RequestID)
	dst = jsonstr.Append(append(dst, `,"jsonrpc_id":`...), r.JSONRPCID)
	dst = jsonstr.Append(append(dst, `,"client_name":`...), r.ClientName)
	dst = jsonstr.Append(append(dst, `,"client_version":`...), r.ClientVersion)
	dst = jsonstr.Append(append(dst, `,"protocol_version":`...), r.ProtocolVersion)
	dst = jsonstr.Append(append(dst, `,"user_agent":`...), r.UserAgent)
	dst = jsonstr.Append(append(dst, `,"source_ip":`...), r.SourceIP)
	dst = jsonstr.Append(append(dst, `,"args_hmac":`...), r.ArgsHMAC)
	dst = strconv.AppendInt(append(dst, `,"duration_ms":`...), r.DurationMS, 10)
	dst = jsonstr.Append(append(dst, `,"transport":`...), r.Transport)
	dst = jsonstr.Append(append(dst, `,"client_id":`...), r.ClientID)
	dst = jsonstr.Append(append(dst, `,"event_type":`...), r.EventType)
	dst = jsonstr.Append(append(dst, `,"action":`...), r.Action)
	dst = jsonstr.Append(append(dst, `,"confirmation":`...), r.Confirmation)
	// The legacy fields are omitempty, as their tags say.
	if r.ArgsSHA256 != "" {
		dst = jsonstr.Append(append(dst, `,"args_sha256":`...), r.ArgsSHA256)
	}
	if r.IdempotencyKey != "" {
		dst = jsonstr.Append(append(dst, `,"idempotency_key":`...), r.IdempotencyKey)
	}
	return append(dst, "}\n"...)
}

// skeletonSize is the length of the line of a record whose strings and arrays are
// empty and whose flags are false: the keys and punctuation every line carries.
var skeletonSize = len(appendRecord(nil, &Record{}))

// lineSize is the length of r's line if no character needs escaping, which is the
// usual case; it only sizes the buffer, so an escaped string costs a regrowth, not an
// error.
func lineSize(r *Record) int {
	n := skeletonSize + len("-9223372036854775808") +
		len(r.EventID) + len(r.EventVersion) + len(r.Timestamp) + len(r.Tool) +
		len(r.Outcome) + len(r.Reason) + len(r.WorkspaceID) + len(r.UserID) +
		len(r.TokenID) + len(r.ResourceID) + len(r.IdempotencyKeyHMAC) + len(r.RequestID) +
		len(r.JSONRPCID) + len(r.ClientName) + len(r.ClientVersion) +
		len(r.ProtocolVersion) + len(r.UserAgent) + len(r.SourceIP) +
		len(r.ArgsHMAC) + len(r.Transport) + len(r.ClientID) + len(r.EventType) +
		len(r.Action) + len(r.Confirmation)
	if r.ArgsSHA256 != "" {
		n += len(`,"args_sha256":""`) + len(r.ArgsSHA256)
	}
	if r.IdempotencyKey != "" {
		n += len(`,"idempotency_key":""`) + len(r.IdempotencyKey)
	}
	for _, s := range r.ScopesProvided {
		n += len(s) + len(`"",`)
	}
	for _, s := range r.ScopesRequired {
		n += len(s) + len(`"",`)
	}
	return n
}

func appendStrings(dst []byte, ss []string) []byte {
	dst = append(dst, '[')
	for i, s := range ss {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonstr.Append(dst, s)
	}
	return append(dst, ']')
}
