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
	dst = append(dst, `{"event_id":`...)
	dst = jsonstr.Append(dst, r.EventID)
	dst = append(dst, `,"event_version":`...)
	dst = jsonstr.Append(dst, r.EventVersion)
	dst = append(dst, `,"timestamp":`...)
	dst = jsonstr.Append(dst, r.Timestamp)
	dst = append(dst, `,"tool":`...)
	dst = jsonstr.Append(dst, r.Tool)
	dst = append(dst, `,"outcome":`...)
	dst = jsonstr.Append(dst, r.Outcome)
	dst = append(dst, `,"reason":`...)
	dst = jsonstr.Append(dst, r.Reason)
	dst = append(dst, `,"scopes_provided":`...)
	dst = appendStrings(dst, r.ScopesProvided)
	dst = append(dst, `,"scopes_required":`...)
	dst = appendStrings(dst, r.ScopesRequired)
	dst = append(dst, `,"workspace_id":`...)
	dst = jsonstr.Append(dst, r.WorkspaceID)
	dst = append(dst, `,"user_id":`...)
	dst = jsonstr.Append(dst, r.UserID)
	dst = append(dst, `,"token_id":`...)
	dst = jsonstr.Append(dst, r.TokenID)
	dst = append(dst, `,"read_only":`...)
	dst = strconv.AppendBool(dst, r.ReadOnly)
	dst = append(dst, `,"destructive":`...)
	dst = strconv.AppendBool(dst, r.Destructive)
	dst = append(dst, `,"confirm_present":`...)
	dst = strconv.AppendBool(dst, r.ConfirmPresent)
	dst = append(dst, `,"resource_id":`...)
	dst = jsonstr.Append(dst, r.ResourceID)
	dst = append(dst, `,"idempotency_key_hmac":`...)
	dst = jsonstr.Append(dst, r.IdempotencyKeyHMAC)
	dst = append(dst, `,"idempotent_replay":`...)
	dst = strconv.AppendBool(dst, r.IdempotentReplay)
	dst = append(dst, `,"request_id":`...)
	dst = jsonstr.Append(dst, r.RequestID)
	dst = append(dst, `,"jsonrpc_id":`...)
	dst = jsonstr.Append(dst, r.JSONRPCID)
	dst = append(dst, `,"client_name":`...)
	dst = jsonstr.Append(dst, r.ClientName)
	dst = append(dst, `,"client_version":`...)
	dst = jsonstr.Append(dst, r.ClientVersion)
	dst = append(dst, `,"protocol_version":`...)
	dst = jsonstr.Append(dst, r.ProtocolVersion)
	dst = append(dst, `,"user_agent":`...)
	dst = jsonstr.Append(dst, r.UserAgent)
	dst = append(dst, `,"source_ip":`...)
	dst = jsonstr.Append(dst, r.SourceIP)
	dst = append(dst, `,"args_hmac":`...)
	dst = jsonstr.Append(dst, r.ArgsHMAC)
	dst = append(dst, `,"duration_ms":`...)
	dst = strconv.AppendInt(dst, r.DurationMS, 10)
	dst = append(dst, `,"transport":`...)
	dst = jsonstr.Append(dst, r.Transport)
	dst = append(dst, `,"client_id":`...)
	dst = jsonstr.Append(dst, r.ClientID)
	dst = append(dst, `,"event_type":`...)
	dst = jsonstr.Append(dst, r.EventType)
	dst = append(dst, `,"action":`...)
	dst = jsonstr.Append(dst, r.Action)
	dst = append(dst, `,"confirmation":`...)
	dst = jsonstr.Append(dst, r.Confirmation)
	// The legacy fields are omitempty, as their tags say.
	if r.ArgsSHA256 != "" {
		dst = append(dst, `,"args_sha256":`...)
		dst = jsonstr.Append(dst, r.ArgsSHA256)
	}
	if r.IdempotencyKey != "" {
		dst = append(dst, `,"idempotency_key":`...)
		dst = jsonstr.Append(dst, r.IdempotencyKey)
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
