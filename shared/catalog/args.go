package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/store"
)

const (
	defaultLimit = 25
	maxLimit     = 100
	// maxResourceIDLen bounds what ResourceID puts in an audit record, which must stay
	// small whatever a client sends.
	maxResourceIDLen = 128
)

// decode reads validated arguments into the tool's argument struct. The guard has
// already applied the input schema; this is the second line: unknown fields, wrong
// types and trailing data are invalid_arguments here too, never a panic or a 500.
func decode(raw json.RawMessage, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage(`{}`)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return apperr.Newf(apperr.InvalidArguments, "argument %q has the wrong type", te.Field)
		}
		return apperr.New(apperr.InvalidArguments, "arguments do not match the tool's input schema")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return apperr.New(apperr.InvalidArguments, "arguments must be a single JSON object")
	}
	return nil
}

// pageLimit applies the default and the bounds of limit (0 means absent).
func pageLimit(n int) (int, error) {
	switch {
	case n == 0:
		return defaultLimit, nil
	case n < 1 || n > maxLimit:
		return 0, apperr.Newf(apperr.InvalidArguments, "limit must be between 1 and %d", maxLimit)
	}
	return n, nil
}

// checkEnum is a second check of values the store trusts (status, priority).
func checkEnum(field, v string, allowed []string) error {
	if !slices.Contains(allowed, v) {
		return apperr.Newf(apperr.InvalidArguments, "%s must be one of %s", field, strings.Join(allowed, ", "))
	}
	return nil
}

// cleanTitle trims the title; a title of only spaces is no title.
func cleanTitle(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", apperr.New(apperr.InvalidArguments, "title must not be blank")
	}
	return s, nil
}

// cleanLabels trims labels and drops repeats, keeping the first occurrence's order, so
// ["bug", "bug "] and ["bug"] store the same thing. Never returns nil.
func cleanLabels(in []string) ([]string, error) {
	out := make([]string, 0, len(in))
	for _, l := range in {
		l = strings.TrimSpace(l)
		if l == "" {
			return nil, apperr.New(apperr.InvalidArguments, "labels must not be blank")
		}
		if !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return out, nil
}

// wireIssue guarantees the wire shape the output schema promises whatever the backend
// returns: labels is an array, never null. The result encodes itself (encode.go).
func wireIssue(i store.Issue) issueResult {
	if i.Labels == nil {
		i.Labels = []string{}
	}
	return issueResult(i)
}
