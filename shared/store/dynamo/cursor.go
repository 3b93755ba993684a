package dynamo

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"github.com/aacworkflow/aacmcp/shared/store"
	"maps"
	"slices"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// A cursor is base64url(JSON) of the query's fingerprint and the ExclusiveStartKey of
// the next page (every key attribute is a string here), plus an HMAC when the store has
// a cursor secret. It is client input: decoding refuses anything malformed, issued for
// another query, or whose key leaves the caller's own partition, with invalid_arguments.

const (
	cursorVersion = 1
	maxCursorLen  = 1024
)

type cursorBody struct {
	V int               `json:"v"`
	F string            `json:"f"`
	K map[string]string `json:"k"`
	M string            `json:"m,omitempty"`
}

// fingerprint identifies a query (workspace, list and filter values) so that a cursor
// replayed against another query is refused rather than returning a wrong slice. JSON
// encoding delimits the parts: ("a","bc") and ("ab","c") differ.
func fingerprint(parts ...string) string {
	b, _ := json.Marshal(parts) // a []string always marshals
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

func badCursor() error {
	return store.Invalid("cursor is malformed; use next_cursor from a previous page")
}

// mac is the HMAC of the cursor's content (v, f, k; map keys sorted by encoding/json).
func (s *Store) mac(b cursorBody) string {
	b.M = ""
	raw, _ := json.Marshal(b) // strings and a map of strings always marshal
	h := hmac.New(sha256.New, s.cursorSecret)
	h.Write(raw)
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:16])
}

// encodeCursor returns the cursor for start key k of the query fp.
func (s *Store) encodeCursor(fp string, k item) (string, error) {
	b := cursorBody{V: cursorVersion, F: fp, K: make(map[string]string, len(k))}
	for name, v := range k {
		sv, ok := v.(*types.AttributeValueMemberS)
		if !ok {
			return "", errNonStringKey
		}
		b.K[name] = sv.Value
	}
	if len(s.cursorSecret) > 0 {
		b.M = s.mac(b)
	}
	raw, err := json.Marshal(b)
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(raw), nil
}

var errNonStringKey = errors.New("dynamo: key attribute is not a string")

// keyCheck validates a decoded start key: exactly the expected attribute names, each
// value inside the caller's partition.
type keyCheck func(k map[string]string) bool

// decodeCursor returns the start key in cursor c of the query fp, or invalid_arguments.
func (s *Store) decodeCursor(c, fp string, attrs []string, ok keyCheck) (item, error) {
	if len(c) > maxCursorLen {
		return nil, badCursor()
	}
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return nil, badCursor()
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var b cursorBody
	if err := dec.Decode(&b); err != nil || dec.More() || b.V != cursorVersion {
		return nil, badCursor()
	}
	if len(s.cursorSecret) > 0 {
		if !hmac.Equal([]byte(b.M), []byte(s.mac(b))) {
			return nil, badCursor()
		}
	} else if b.M != "" {
		return nil, badCursor()
	}
	if b.F != fp {
		return nil, store.Invalid("cursor belongs to a different query; start again without a cursor")
	}
	names := slices.Sorted(maps.Keys(b.K))
	want := slices.Sorted(slices.Values(attrs))
	if !slices.Equal(names, want) || !ok(b.K) {
		return nil, badCursor()
	}
	k := make(item, len(b.K))
	for name, v := range b.K {
		k[name] = avS(v)
	}
	return k, nil
}
