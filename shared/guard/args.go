package guard

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/aacworkflow/aacmcp/shared/internal/jsondup"
)

// truncateName bounds a caller-chosen member name quoted in a message.
func truncateName(s string) string { return truncate(s, 64) }

// Limits on tool arguments. The HTTP layer caps whole bodies earlier; these bound
// what the validator and the canonical encoder have to walk.
const (
	// MaxArgsBytes is the largest arguments document accepted.
	MaxArgsBytes = 256 << 10
	// MaxArgsDepth is the deepest nesting of objects and arrays accepted. The tools'
	// schemas need three levels; 32 leaves room without inviting pathological input.
	MaxArgsDepth = 32
)

// args is a call's arguments, decoded once and shared by every step.
type args struct {
	raw []byte
	// obj is the decoded top-level object; nil when raw is not a JSON object or
	// was refused by a limit (then problem says why).
	obj     map[string]any
	problem string
	// ambiguous: a member name repeats (see jsondup). Such arguments mean one thing
	// to a reader keeping the first value and another to one keeping the last, so
	// they are refused before any check reads them (confirm included).
	ambiguous bool
	// canonical is the canonical encoding of obj (or raw when obj is nil), the
	// input of args_hmac.
	canonical []byte
}

// parseArgs decodes raw tool arguments. Absent arguments and JSON null mean "no
// arguments" ({}), which is what clients send for tools whose parameters are all
// optional. It never fails: a problem is recorded and reported by the validation
// step, so that the checks before it (scope, confirm) keep the spec's order.
// namesChecked skips the repeated-name check a transport has made already
// (Request.NamesChecked).
func parseArgs(raw []byte, namesChecked bool) *args {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		trimmed = []byte("{}")
	}
	a := &args{raw: trimmed}
	switch {
	case len(trimmed) > MaxArgsBytes:
		a.problem = fmt.Sprintf("arguments exceed %d bytes", MaxArgsBytes)
	case depthExceeds(trimmed, MaxArgsDepth):
		a.problem = fmt.Sprintf("arguments nest deeper than %d levels", MaxArgsDepth)
	default:
		v, err := decodeJSON(trimmed)
		if err != nil {
			a.problem = "arguments are not valid JSON"
			break
		}
		if !namesChecked {
			if name, dup := jsondup.Find(trimmed); dup {
				a.problem = fmt.Sprintf("arguments repeat the member name %s", strconv.Quote(truncateName(name)))
				a.ambiguous = true
				break
			}
		}
		obj, ok := v.(map[string]any)
		if !ok {
			a.problem = "arguments must be a JSON object, got " + jsonType(v)
			break
		}
		a.obj = obj
	}
	if a.obj != nil {
		a.canonical = canonicalJSON(a.obj)
	} else {
		a.canonical = trimmed
	}
	return a
}

// decodeJSON decodes one JSON value keeping numbers exact (json.Number), which is
// what the schema validator expects, and refuses trailing data.
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("trailing data after JSON value")
	}
	return v, nil
}

// depthExceeds reports whether b nests objects or arrays deeper than limit. It scans
// bytes, skipping strings, so deep input is refused before it is decoded.
func depthExceeds(b []byte, limit int) bool {
	depth := 0
	inString, escaped := false, false
	for _, c := range b {
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
			if depth > limit {
				return true
			}
		case '}', ']':
			depth--
		}
	}
	return false
}

// canonicalJSON encodes v with object keys sorted and no insignificant space, so
// that two equal argument documents hash alike whatever their key order or layout.
// Numbers keep their literal text. v comes from decodeJSON, so encoding cannot fail.
func canonicalJSON(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// sha256Hex is the lowercase hex SHA-256 of b.
func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// digestWithout is the SHA-256 of the canonical arguments minus one top-level key:
// the idempotency digest must not depend on the key itself.
func (a *args) digestWithout(key string) string {
	if a.obj == nil {
		return sha256Hex(a.canonical)
	}
	if _, ok := a.obj[key]; !ok {
		return sha256Hex(a.canonical)
	}
	rest := make(map[string]any, len(a.obj)-1)
	for k, v := range a.obj {
		if k != key {
			rest[k] = v
		}
	}
	return sha256Hex(canonicalJSON(rest))
}

// confirmed reports whether arguments.confirm is the JSON boolean true. Anything
// else ("true", 1, false, absent, arguments that are not an object) is not.
func (a *args) confirmed() bool {
	if a.obj == nil {
		return false
	}
	v, ok := a.obj["confirm"].(bool)
	return ok && v
}

// stringArg returns a top-level string argument ("" when absent or not a string).
func (a *args) stringArg(name string) string {
	if a.obj == nil {
		return ""
	}
	s, _ := a.obj[name].(string)
	return s
}

// jsonType names the JSON type of a decoded value, for messages.
func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number, float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "value"
}
