package guard

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// compileSchema compiles one tool's input schema (JSON Schema 2020-12) with format
// assertion on, so that "format": "date" and friends are enforced, not advisory.
func compileSchema(tool string, raw json.RawMessage) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("input schema of %s: %w", tool, err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.UseLoader(refuseLoader{})
	url := "urn:aacmcp:tool:" + tool + ":input"
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("input schema of %s: %w", tool, err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("input schema of %s: %w", tool, err)
	}
	return sch, nil
}

// refuseLoader keeps schema compilation hermetic: the catalog's schemas are
// self-contained, and a stray $ref must not make the server read files or the network.
type refuseLoader struct{}

func (refuseLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external schema reference %q is not allowed", url)
}

// maxReportedProblems bounds how many schema violations one message lists.
const maxReportedProblems = 3

// describeValidation turns a validator error into one short human message such as
// `labels: expected array, got string` or `unknown field "foo"`. The library's own
// text is Go-flavoured and names schema URLs, so it is never shown as is.
func describeValidation(err error, doc any) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return "arguments do not match the tool's input schema"
	}
	var leaves []*jsonschema.ValidationError
	collectLeaves(ve, &leaves)
	msgs := leafMessages(leaves, doc)
	if len(msgs) == 0 {
		return "arguments do not match the tool's input schema"
	}
	if len(msgs) > maxReportedProblems {
		msgs = append(msgs[:maxReportedProblems], fmt.Sprintf("and %d more", len(msgs)-maxReportedProblems))
	}
	return strings.Join(msgs, "; ")
}

func collectLeaves(e *jsonschema.ValidationError, out *[]*jsonschema.ValidationError) {
	if len(e.Causes) == 0 {
		*out = append(*out, e)
		return
	}
	for _, c := range e.Causes {
		collectLeaves(c, out)
	}
}

// leafMessages renders the leaves, merging type errors at one location (the
// branches of a oneOf such as null-or-object) into a single "expected X or Y", and
// sorts the result so the message does not depend on map iteration order.
func leafMessages(leaves []*jsonschema.ValidationError, doc any) []string {
	typeWants := map[string][]string{}
	typeGot := map[string]string{}
	var order []string
	seen := map[string]bool{}
	var msgs []string
	for _, l := range leaves {
		path := renderPath(l.InstanceLocation, doc)
		if t, ok := l.ErrorKind.(*kind.Type); ok {
			if _, ok := typeWants[path]; !ok {
				order = append(order, path)
			}
			typeWants[path] = append(typeWants[path], t.Want...)
			typeGot[path] = t.Got
			continue
		}
		m := leafMessage(path, l.ErrorKind)
		if m != "" && !seen[m] {
			seen[m] = true
			msgs = append(msgs, m)
		}
	}
	for _, path := range order {
		want := slices.Compact(slices.Sorted(slices.Values(typeWants[path])))
		m := withPath(path, fmt.Sprintf("expected %s, got %s", strings.Join(want, " or "), typeGot[path]))
		if !seen[m] {
			seen[m] = true
			msgs = append(msgs, m)
		}
	}
	slices.Sort(msgs)
	return msgs
}

// renderPath writes an instance location as `labels[0].name`, consulting the
// document to tell array indexes from object keys.
func renderPath(loc []string, doc any) string {
	var b strings.Builder
	cur := doc
	for _, tok := range loc {
		switch v := cur.(type) {
		case []any:
			b.WriteString("[" + tok + "]")
			if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(v) {
				cur = v[i]
			} else {
				cur = nil
			}
		default:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(tok)
			if m, ok := v.(map[string]any); ok {
				cur = m[tok]
			} else {
				cur = nil
			}
		}
	}
	return b.String()
}

func withPath(path, msg string) string {
	if path == "" {
		return msg
	}
	return path + ": " + msg
}

var englishPrinter = message.NewPrinter(language.English)

func leafMessage(path string, k jsonschema.ErrorKind) string {
	switch k := k.(type) {
	case *kind.Required:
		return withPath(path, plural(len(k.Missing), "missing required field ", "missing required fields ")+quoteAll(k.Missing))
	case *kind.AdditionalProperties:
		return withPath(path, plural(len(k.Properties), "unknown field ", "unknown fields ")+quoteAll(k.Properties))
	case *kind.FalseSchema:
		if path == "" {
			return "arguments are not allowed"
		}
		return path + ": not allowed"
	case *kind.Enum:
		vals := make([]string, 0, len(k.Want))
		for _, w := range k.Want {
			vals = append(vals, display(w))
		}
		if len(vals) == 1 {
			return withPath(path, "must be "+vals[0])
		}
		return withPath(path, "must be one of "+strings.Join(vals, ", "))
	case *kind.Const:
		return withPath(path, "must be "+display(k.Want))
	case *kind.MinLength:
		return withPath(path, fmt.Sprintf("must be at least %d characters", k.Want))
	case *kind.MaxLength:
		return withPath(path, fmt.Sprintf("must be at most %d characters", k.Want))
	case *kind.Pattern:
		return withPath(path, fmt.Sprintf("must match the pattern %s", k.Want))
	case *kind.Format:
		return withPath(path, fmt.Sprintf("must be a valid %s", k.Want))
	case *kind.Minimum:
		return withPath(path, "must be at least "+ratString(k.Want))
	case *kind.Maximum:
		return withPath(path, "must be at most "+ratString(k.Want))
	case *kind.ExclusiveMinimum:
		return withPath(path, "must be greater than "+ratString(k.Want))
	case *kind.ExclusiveMaximum:
		return withPath(path, "must be less than "+ratString(k.Want))
	case *kind.MultipleOf:
		return withPath(path, "must be a multiple of "+ratString(k.Want))
	case *kind.MinItems:
		return withPath(path, fmt.Sprintf("must have at least %d items", k.Want))
	case *kind.MaxItems:
		return withPath(path, fmt.Sprintf("must have at most %d items", k.Want))
	case *kind.UniqueItems:
		return withPath(path, "items must be unique")
	case *kind.MinProperties:
		return withPath(path, fmt.Sprintf("must have at least %d fields", k.Want))
	case *kind.MaxProperties:
		return withPath(path, fmt.Sprintf("must have at most %d fields", k.Want))
	case *kind.Not:
		return withPath(path, "is not allowed here")
	case *kind.OneOf:
		// A oneOf with no cause matched several branches.
		return withPath(path, "matches more than one allowed form")
	}
	return withPath(path, k.LocalizedString(englishPrinter))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}

// display renders a schema value (enum member, const) as JSON.
func display(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func ratString(r *big.Rat) string {
	if r == nil {
		return "the limit"
	}
	if r.IsInt() {
		return r.Num().String()
	}
	return r.FloatString(6)
}
