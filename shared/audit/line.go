package audit

import (
	"slices"
	"strconv"
	"unicode/utf8"
)

// AppendLine appends r to dst as one JSON line ending in '\n', the form every sink
// writes, and returns the extended slice. Nil slices are written as [] so that
// consumers see the schema's arrays, never null.
//
// The bytes are exactly those encoding/json's Marshal produced for Record before this
// encoder existed (field order, string escaping including the HTML-safe escapes, \u2028
// and \u2029, and U+FFFD for invalid UTF-8): lines already in files, in Firehose's S3
// objects and in golden files stay comparable byte for byte, and the size guard
// (shared/guard's fitRecord) measures what is written. The equivalence is checked
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
	dst = appendString(dst, r.EventID)
	dst = append(dst, `,"event_version":`...)
	dst = appendString(dst, r.EventVersion)
	dst = append(dst, `,"timestamp":`...)
	dst = appendString(dst, r.Timestamp)
	dst = append(dst, `,"tool":`...)
	dst = appendString(dst, r.Tool)
	dst = append(dst, `,"outcome":`...)
	dst = appendString(dst, r.Outcome)
	dst = append(dst, `,"reason":`...)
	dst = appendString(dst, r.Reason)
	dst = append(dst, `,"scopes_provided":`...)
	dst = appendStrings(dst, r.ScopesProvided)
	dst = append(dst, `,"scopes_required":`...)
	dst = appendStrings(dst, r.ScopesRequired)
	dst = append(dst, `,"workspace_id":`...)
	dst = appendString(dst, r.WorkspaceID)
	dst = append(dst, `,"user_id":`...)
	dst = appendString(dst, r.UserID)
	dst = append(dst, `,"token_id":`...)
	dst = appendString(dst, r.TokenID)
	dst = append(dst, `,"read_only":`...)
	dst = strconv.AppendBool(dst, r.ReadOnly)
	dst = append(dst, `,"destructive":`...)
	dst = strconv.AppendBool(dst, r.Destructive)
	dst = append(dst, `,"confirm_present":`...)
	dst = strconv.AppendBool(dst, r.ConfirmPresent)
	dst = append(dst, `,"resource_id":`...)
	dst = appendString(dst, r.ResourceID)
	dst = append(dst, `,"idempotency_key":`...)
	dst = appendString(dst, r.IdempotencyKey)
	dst = append(dst, `,"idempotent_replay":`...)
	dst = strconv.AppendBool(dst, r.IdempotentReplay)
	dst = append(dst, `,"request_id":`...)
	dst = appendString(dst, r.RequestID)
	dst = append(dst, `,"jsonrpc_id":`...)
	dst = appendString(dst, r.JSONRPCID)
	dst = append(dst, `,"client_name":`...)
	dst = appendString(dst, r.ClientName)
	dst = append(dst, `,"client_version":`...)
	dst = appendString(dst, r.ClientVersion)
	dst = append(dst, `,"protocol_version":`...)
	dst = appendString(dst, r.ProtocolVersion)
	dst = append(dst, `,"user_agent":`...)
	dst = appendString(dst, r.UserAgent)
	dst = append(dst, `,"source_ip":`...)
	dst = appendString(dst, r.SourceIP)
	dst = append(dst, `,"args_sha256":`...)
	dst = appendString(dst, r.ArgsSHA256)
	dst = append(dst, `,"duration_ms":`...)
	dst = strconv.AppendInt(dst, r.DurationMS, 10)
	dst = append(dst, `,"transport":`...)
	dst = appendString(dst, r.Transport)
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
		len(r.TokenID) + len(r.ResourceID) + len(r.IdempotencyKey) + len(r.RequestID) +
		len(r.JSONRPCID) + len(r.ClientName) + len(r.ClientVersion) +
		len(r.ProtocolVersion) + len(r.UserAgent) + len(r.SourceIP) +
		len(r.ArgsSHA256) + len(r.Transport)
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
		dst = appendString(dst, s)
	}
	return append(dst, ']')
}

// plainASCII marks the ASCII bytes encoding/json copies into a string unchanged (its
// htmlSafeSet): printable characters and DEL, except '"', '\\' and the HTML-unsafe
// '<', '>' and '&'.
var plainASCII = func() (t [utf8.RuneSelf]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		switch b {
		case '"', '\\', '<', '>', '&':
		default:
			t[b] = true
		}
	}
	return t
}()

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string, escaped exactly as encoding/json's Marshal
// escapes it (HTML escaping on).
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if plainASCII[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				// The other control characters, and <, > and & so that a record
				// pasted into HTML cannot close a script element.
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && size == 1:
			// Invalid UTF-8 is replaced, byte by byte, so that every line is valid
			// UTF-8 for Athena and the schema validator.
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case c == '\u2028' || c == '\u2029':
			// Valid JSON but line breaks to JavaScript (JSONP).
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
