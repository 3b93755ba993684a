// Package digest makes the audit log tamper-evident, as CloudTrail's digest files do.
//
// A digest covers one window of time (an hour, or the part of an hour up to a clean
// stop of the server). It lists every audit object last written during the window:
// its path, SHA-256, byte size, record count and first and last record timestamps.
// It names the previous digest by path, SHA-256 and signature, which chains the
// digests, and it is signed. Windows follow each other without a gap, so an hour with
// no records still gets a digest and a missing one shows.
//
// Objects are assigned to windows by when they were last written (the file's mtime
// locally, LastModified in S3), not by the partition their records belong to: a late
// record (Firehose delivers up to 1.5 times its buffer interval late, a local call may
// finish after its hour) lands in a later digest instead of changing an earlier one.
//
// The format is documented in docs/security.md, section 6 ("The digest format").
package digest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"time"
)

// Version is the digest format version.
const Version = "1"

// Prefix is the folder (locally, under the data folder) or key prefix (in S3, next to
// audit/) that holds the digests.
const Prefix = "audit-digest/"

// LogPrefix is the folder or key prefix of the audit objects themselves.
const LogPrefix = "audit/"

// ErrorPrefix is where Firehose writes the records it could not convert:
// audit-errors/<error type>/dt=.../hour=.../name. Digests list these objects too.
const ErrorPrefix = "audit-errors/"

// Signature algorithms.
const (
	AlgEd25519     = "Ed25519"       // the local key
	AlgECDSASHA256 = "ECDSA_SHA_256" // KMS ECC_NIST_P256 (the deployed key)
)

// Object is one audit object as a digest lists it.
type Object struct {
	Path           string `json:"path"` // relative to the log's root: audit/dt=.../hour=.../name
	SHA256         string `json:"sha256"`
	Size           int64  `json:"size"`
	Records        int64  `json:"records"`
	FirstTimestamp string `json:"first_timestamp"`
	LastTimestamp  string `json:"last_timestamp"`
	// Late marks an object whose partition hour ended more than MaxRecordDelay before
	// the window began (a replay of Firehose's failure queue): the window lists it
	// although its hour was digested long before. Absent when false, so digests
	// written before the member existed keep their canonical form.
	Late bool `json:"late,omitempty"`
}

// Digest is one digest file. Field order is the canonical order: Encode writes the
// fields in this order, and the signature covers that encoding with Signature empty.
type Digest struct {
	DigestVersion     string   `json:"digest_version"`
	WindowStart       string   `json:"window_start"` // RFC 3339 UTC, inclusive
	WindowEnd         string   `json:"window_end"`   // exclusive
	Objects           []Object `json:"objects"`
	PreviousPath      string   `json:"previous_digest_path"`
	PreviousSHA256    string   `json:"previous_digest_sha256"`
	PreviousSignature string   `json:"previous_digest_signature"`
	KeyID             string   `json:"key_id"`
	Algorithm         string   `json:"signature_algorithm"`
	Signature         string   `json:"signature"` // base64 (standard, padded)
}

// Errors of Decode. They are stable values: callers test them with errors.Is.
var (
	ErrMalformed    = errors.New("digest: malformed")
	ErrNotCanonical = errors.New("digest: not in canonical form")
)

// Start and End parse the window bounds.
func (d *Digest) Start() time.Time { t, _ := time.Parse(time.RFC3339Nano, d.WindowStart); return t }
func (d *Digest) End() time.Time   { t, _ := time.Parse(time.RFC3339Nano, d.WindowEnd); return t }

// FormatTime is the form of window bounds: RFC 3339 UTC with nanoseconds when there
// are any (a clean stop ends a window at an arbitrary instant).
func FormatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// Encode returns the canonical bytes of d: compact JSON in field order, no HTML
// escaping, one trailing newline.
func Encode(d *Digest) []byte {
	c := *d
	if c.Objects == nil {
		c.Objects = []Object{}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&c); err != nil {
		panic(err) // strings, ints and slices only: cannot fail
	}
	return buf.Bytes()
}

// SignedBytes are the bytes the signature covers: the canonical encoding with the
// signature field empty.
func SignedBytes(d *Digest) []byte {
	c := *d
	c.Signature = ""
	return Encode(&c)
}

// Hash is the hex SHA-256 of b.
func Hash(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

var (
	hexSHA256 = regexp.MustCompile(`^[0-9a-f]{64}$`)
	objPath   = regexp.MustCompile(`^(audit|audit-errors/[^/]+)/dt=(\d{4}-\d{2}-\d{2})/hour=(\d{2})/[^/]+$`)
)

// Decode parses a digest file. The bytes must be exactly the canonical encoding of
// what they decode to, so a digest has one form only: duplicate or unknown members,
// other spacing or escapes are refused rather than read one way by the verifier and
// another by some other tool.
func Decode(b []byte) (*Digest, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var d Digest
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: data after the digest", ErrMalformed)
	}
	if err := d.validate(); err != nil {
		return nil, err
	}
	if !bytes.Equal(Encode(&d), b) {
		return nil, ErrNotCanonical
	}
	return &d, nil
}

func (d *Digest) validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, a...))
	}
	if d.DigestVersion != Version {
		return bad("digest_version %q", d.DigestVersion)
	}
	start, err1 := time.Parse(time.RFC3339Nano, d.WindowStart)
	end, err2 := time.Parse(time.RFC3339Nano, d.WindowEnd)
	if err1 != nil || err2 != nil || FormatTime(start) != d.WindowStart || FormatTime(end) != d.WindowEnd || !start.Before(end) {
		return bad("window %q to %q", d.WindowStart, d.WindowEnd)
	}
	if d.Objects == nil {
		return bad("no objects member")
	}
	for i, o := range d.Objects {
		if !objPath.MatchString(o.Path) || path.Clean(o.Path) != o.Path {
			return bad("object %d: path %q", i, o.Path)
		}
		if i > 0 && d.Objects[i-1].Path >= o.Path {
			return bad("objects not sorted by path, or listed twice: %q", o.Path)
		}
		if !hexSHA256.MatchString(o.SHA256) || o.Size < 0 || o.Records < 0 {
			return bad("object %q: sha256, size or records", o.Path)
		}
	}
	if d.PreviousPath == "" {
		if d.PreviousSHA256 != "" || d.PreviousSignature != "" {
			return bad("previous digest hash or signature without a path")
		}
	} else if !hexSHA256.MatchString(d.PreviousSHA256) || d.PreviousSignature == "" {
		return bad("previous digest hash or signature")
	}
	if d.KeyID == "" || (d.Algorithm != AlgEd25519 && d.Algorithm != AlgECDSASHA256) || d.Signature == "" {
		return bad("key_id, signature_algorithm or signature")
	}
	return nil
}

// PartitionHour is the hour of the partition an object path names: audit/dt=.../
// hour=.../name or audit-errors/<type>/dt=.../hour=.../name.
func PartitionHour(p string) (time.Time, bool) {
	m := objPath.FindStringSubmatch(p)
	if m == nil {
		return time.Time{}, false
	}
	t, err := time.Parse(time.DateOnly+"T15", m[2]+"T"+m[3])
	return t, err == nil
}

// Name is the path of the digest for a window, relative to the log's root:
// audit-digest/dt=YYYY-MM-DD/hour=HH/<start>_<end>.json, in the hour the window
// starts in. Names sort in window order.
func Name(start, end time.Time) string {
	start, end = start.UTC(), end.UTC()
	const stamp = "20060102T150405.000000000Z"
	return fmt.Sprintf("%sdt=%s/hour=%02d/%s_%s.json", Prefix, start.Format(time.DateOnly), start.Hour(),
		start.Format(stamp), end.Format(stamp))
}

var digestName = regexp.MustCompile(`^audit-digest/dt=\d{4}-\d{2}-\d{2}/hour=\d{2}/\d{8}T\d{6}\.\d{9}Z_\d{8}T\d{6}\.\d{9}Z\.json$`)

// IsName reports whether p is the path of a digest.
func IsName(p string) bool { return digestName.MatchString(p) }
