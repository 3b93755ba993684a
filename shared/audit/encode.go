package audit

import (
	"bytes"
	crand "crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/aacworkflow/aacmcp/shared/apperr"
)

// TimeLayout is the wire form of Record.Timestamp: RFC 3339, UTC, milliseconds.
// A fixed width keeps the strings sortable and lets Athena and DuckDB parse them with
// from_iso8601_timestamp.
const TimeLayout = "2006-01-02T15:04:05.000Z"

// FormatTime renders t as a Record timestamp.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeLayout) }

// ParseTime parses a Record timestamp. It accepts exactly the form FormatTime writes.
func ParseTime(s string) (time.Time, error) {
	t, err := time.Parse(TimeLayout, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("audit: timestamp %q is not RFC 3339 UTC with milliseconds", s)
	}
	return t, nil
}

// ids hands out event ids. ulid.Monotonic is not safe for concurrent use, so it is
// guarded here; monotonic entropy makes ids minted in the same millisecond sort in
// minting order, and crypto/rand keeps concurrent Lambda instances from colliding.
//
// The entropy part of an id is drawn into buf, under the lock, rather than into the
// caller's id, which would otherwise escape to the heap through the io.Reader the
// monotonic source reads from.
var ids = struct {
	sync.Mutex
	entropy *ulid.MonotonicEntropy
	buf     [10]byte
}{entropy: newEntropy()}

func newEntropy() *ulid.MonotonicEntropy { return ulid.Monotonic(crand.Reader, 0) }

// NewEventID returns a new ULID for a record completed now.
func NewEventID() string { return NewEventIDAt(time.Now()) }

// NewEventIDAt returns a new ULID whose time part is t (the record's timestamp), so
// that ids sort with the records they name. Safe for concurrent use: only the draw
// from the monotonic source is serialized; the id is encoded outside the lock.
func NewEventIDAt(t time.Time) string {
	var id ulid.ULID
	ms := ulid.Timestamp(t)
	ids.Lock()
	err := drawLocked(&id, ms)
	if err != nil {
		// Only the monotonic counter of one millisecond overflowing, or a time before
		// 1970 or after 10889, gets here. Fresh entropy starts a new sequence.
		ids.entropy = newEntropy()
		if err = drawLocked(&id, ms); err != nil {
			err = drawLocked(&id, ulid.Now())
		}
	}
	ids.Unlock()
	if err != nil {
		// A fresh source for the current time cannot fail: crypto/rand does not
		// return errors (Go 1.24 and later) and the current time is in range.
		panic(fmt.Sprintf("audit: minting an event id: %v", err))
	}
	var text [ulid.EncodedSize]byte
	_ = id.MarshalTextTo(text[:]) // cannot fail: text has the encoded size
	return string(text[:])
}

// drawLocked sets id's time to ms and its entropy from the monotonic source. The
// caller holds ids.
func drawLocked(id *ulid.ULID, ms uint64) error {
	if err := id.SetTime(ms); err != nil {
		return err
	}
	if err := ids.entropy.MonotonicRead(ms, ids.buf[:]); err != nil {
		return err
	}
	copy(id[6:], ids.buf[:])
	return nil
}

// Outcomes, as written in Record.Outcome (the strings of apperr.Outcome).
const (
	OutcomeSuccess = string(apperr.OutcomeSuccess)
	OutcomeDenied  = string(apperr.OutcomeDenied)
	OutcomeError   = string(apperr.OutcomeError)
)

// isULID reports whether s matches ^[0-7][0-9A-HJKMNP-TV-Z]{25}$: 26 characters of
// Crockford's base 32 (no I, L, O or U), the first at most 7 so that the 130 bits fit
// ULID's 128. Checked by hand rather than by regexp because every sink validates
// every record on the request path.
func isULID(s string) bool {
	if len(s) != 26 || s[0] < '0' || s[0] > '7' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case '0' <= c && c <= '9', 'A' <= c && c <= 'Z' && c != 'I' && c != 'L' && c != 'O' && c != 'U':
		default:
			return false
		}
	}
	return true
}

// isSHA256OrEmpty reports whether s matches ^(|[0-9a-f]{64})$: empty, or a SHA-256
// in lowercase hex.
func isSHA256OrEmpty(s string) bool {
	if len(s) == 0 {
		return true
	}
	if len(s) != 64 {
		return false
	}
	for i := range len(s) {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// Validate reports the first way r breaks the record schema that code relies on:
// an event id that is not a ULID, a timestamp the partitioner cannot read, an unknown
// outcome, transport or event type, an action that does not fit the event type, a
// malformed args digest, a confirmation on a record that cannot have one. The JSON
// Schema in events/audit is the full contract; this is the part a sink must check
// before it files a record.
//
// Validate checks records as written now: event_type is required. Decoders apply
// Normalize first, which gives a version 1.0 record its implied event type.
func (r Record) Validate() error {
	switch {
	case !isULID(r.EventID):
		return fmt.Errorf("audit: event_id %q is not a ULID", r.EventID)
	case r.EventVersion == "":
		return errors.New("audit: event_version is empty")
	case r.Outcome != OutcomeSuccess && r.Outcome != OutcomeDenied && r.Outcome != OutcomeError:
		return fmt.Errorf("audit: outcome %q is not success, denied or error", r.Outcome)
	case r.Reason != "" && !slices.Contains(apperr.Codes, apperr.Code(r.Reason)):
		return fmt.Errorf("audit: reason %q is not an error code", r.Reason)
	case r.Transport != TransportMCP && r.Transport != TransportREST && r.Transport != TransportOAuth:
		return fmt.Errorf("audit: transport %q is not mcp, rest or oauth", r.Transport)
	case r.EventType == EventToolCall && r.Action != "":
		return fmt.Errorf("audit: a tool_call record has action %q", r.Action)
	case r.EventType == EventAuthorization && !slices.Contains(Actions, r.Action):
		return fmt.Errorf("audit: action %q is not an authorization action", r.Action)
	case r.EventType != EventToolCall && r.EventType != EventAuthorization:
		return fmt.Errorf("audit: event_type %q is not tool_call or authorization", r.EventType)
	case !isSHA256OrEmpty(r.ArgsHMAC):
		return fmt.Errorf("audit: args_hmac %q is not a lowercase hex HMAC-SHA256", r.ArgsHMAC)
	case !isSHA256OrEmpty(r.IdempotencyKeyHMAC):
		return fmt.Errorf("audit: idempotency_key_hmac %q is not a lowercase hex HMAC-SHA256", r.IdempotencyKeyHMAC)
	case !isSHA256OrEmpty(r.ArgsSHA256):
		return fmt.Errorf("audit: args_sha256 %q is not a lowercase hex SHA-256", r.ArgsSHA256)
	case legacyDigests(r.EventVersion) && (r.ArgsHMAC != "" || r.IdempotencyKeyHMAC != ""):
		return fmt.Errorf("audit: a %s record carries an HMAC (added in 1.2)", r.EventVersion)
	case !legacyDigests(r.EventVersion) && (r.ArgsSHA256 != "" || r.IdempotencyKey != ""):
		// A 1.2 writer that still copied the key in clear would leak it.
		return fmt.Errorf("audit: a %s record carries args_sha256 or idempotency_key (replaced by their HMACs in 1.2)", r.EventVersion)
	case !slices.Contains(Confirmations, r.Confirmation):
		return fmt.Errorf("audit: confirmation %q is not \"\", flag, elicited or approved", r.Confirmation)
	case r.Confirmation != ConfirmationNone && (!r.Destructive || r.EventType != EventToolCall):
		return fmt.Errorf("audit: confirmation %q on a record that is not a destructive tool call", r.Confirmation)
	case r.Confirmation != ConfirmationNone && beforeConfirmation(r.EventVersion):
		return fmt.Errorf("audit: a %s record carries confirmation (added in 1.3)", r.EventVersion)
	case r.DurationMS < 0:
		return fmt.Errorf("audit: duration_ms %d is negative", r.DurationMS)
	}
	_, err := ParseTime(r.Timestamp)
	return err
}

// beforeConfirmation reports whether records of version v predate the
// confirmation field.
func beforeConfirmation(v string) bool { return legacyDigests(v) || v == EventVersion12 }

// Hour is the start of the UTC hour the record belongs to: the partition
// (dt=YYYY-MM-DD/hour=HH) it is filed under, here and in S3.
func (r Record) Hour() (time.Time, error) {
	t, err := ParseTime(r.Timestamp)
	if err != nil {
		return time.Time{}, err
	}
	return t.Truncate(time.Hour), nil
}

// MarshalLine encodes r as one JSON line ending in '\n', the form every sink writes
// (see AppendLine). The error is always nil: every Record has an encoding. It stays in
// the signature for the callers written against encoding/json.
func MarshalLine(r Record) ([]byte, error) {
	return AppendLine(nil, r), nil
}

// UnmarshalLine decodes one JSON line written by MarshalLine (a trailing newline is
// optional). Unknown fields, trailing data and records that fail Validate are errors:
// a line that is not exactly a record must be reported, never half-read.
func UnmarshalLine(line []byte) (Record, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	var r Record
	if err := dec.Decode(&r); err != nil {
		return Record{}, fmt.Errorf("audit: decode record: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Record{}, errors.New("audit: decode record: trailing data after the record")
	}
	r = Normalize(r)
	if err := r.Validate(); err != nil {
		return Record{}, err
	}
	return r, nil
}

// Normalize returns r as every reader should see it, whatever wrote it: nil arrays
// as empty ones, and the fields a version 1.0 record lacks filled with what they
// meant then. A 1.0 or 1.1 record keeps its args_sha256 and idempotency_key as they
// were and has no HMACs (its args_hmac and idempotency_key_hmac read ""): its plain
// digest cannot be turned into the keyed one, and rewriting it would change what was
// recorded. Every 1.0 record is a tool call (the authorization server came with
// 1.1), so an empty event_type becomes EventToolCall; its client_id and action stay
// "", which is what a personal token's tool call carries. event_version is kept: it
// says which writer the record came from.
//
// Records of later versions are left alone, so a writer that forgets event_type
// fails Validate instead of being silently classified.
func Normalize(r Record) Record {
	if r.ScopesProvided == nil {
		r.ScopesProvided = []string{}
	}
	if r.ScopesRequired == nil {
		r.ScopesRequired = []string{}
	}
	if r.EventVersion == EventVersion10 && r.EventType == "" {
		r.EventType = EventToolCall
	}
	return r
}
