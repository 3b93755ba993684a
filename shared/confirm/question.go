package confirm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Errors of the person's answer; both map to apperr.ConfirmationDeclined.
var (
	ErrDeclined    = errors.New("confirm: the person declined or cancelled")
	ErrWrongAnswer = errors.New("confirm: the typed value does not match")
)

// MaxTitleRunes caps the item text quoted in the question.
const MaxTitleRunes = 80

// MaxInputResponsesLen caps the inputResponses document before decoding.
const MaxInputResponsesLen = 16 << 10

// ElicitationID is the key of the one input request the server asks, in both
// inputRequests and the client's inputResponses.
const ElicitationID = "confirm"

// Field is the one property of the requested schema the person types into.
const Field = "confirmation"

// Item describes what a destructive call destroys, for the question. It says
// nothing of which tool destroys it: the tool's catalog declaration
// (catalog.Confirmation) fills it in.
type Item struct {
	// Kind is the noun a person knows the item by: "issue", "comment".
	Kind string
	// Key is the item's own key (AAC-42); "" for an item that has none.
	Key string
	// Parent is the key of the item it belongs to (a comment's issue); "" for none.
	Parent string
	// Title is the item's title, or the start of its text.
	Title string
	// Comments is how many comments are destroyed with it; nil for a kind that
	// has none.
	Comments *int64
	// Expect is what the person types: the key for an item whose key names it,
	// otherwise a word ("delete"), since a comment has no name a person knows.
	Expect string
}

// Question is the elicitation put to the person and what they must type.
type Question struct {
	Message string
	// Schema is the requestedSchema: one required string property, Field.
	Schema map[string]any
	// Expect is the exact text the person must type.
	Expect string
}

// Ask builds the question for an item. A person who types the key has read which
// item it is, which a single Accept button does not prove.
func Ask(it Item) (Question, error) {
	title := Plain(it.Title, MaxTitleRunes)
	key := Plain(it.Key, 32)
	expect := Plain(it.Expect, 32)
	if it.Kind == "" || expect == "" {
		return Question{}, fmt.Errorf("confirm: a question needs the item's kind and the value to type, got %q and %q", it.Kind, it.Expect)
	}
	msg := "Delete the " + it.Kind
	if key != "" {
		msg = "Delete " + it.Kind + " " + key
	}
	if parent := Plain(it.Parent, 32); parent != "" {
		msg += " on " + parent
	}
	if title != "" {
		msg += " " + strconv.Quote(title)
	}
	if it.Comments != nil {
		switch n := *it.Comments; n {
		case 0:
		case 1:
			msg += " and its 1 comment"
		default:
			msg += fmt.Sprintf(" and its %d comments", n)
		}
	}
	msg += "? This cannot be undone."
	return Question{
		Message: msg,
		Expect:  expect,
		Schema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				Field: map[string]any{"type": "string", "title": "Confirmation", "description": "Type " + expect + " to confirm"},
			},
			"required": []string{Field},
		},
	}, nil
}

// Plain makes item text safe to quote in a question: control and format
// characters (bidi overrides included) become spaces, runs of space collapse,
// and the result is cut to max runes with an ellipsis.
func Plain(s string, max int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	space := false
	n := 0
	for _, r := range s {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || unicode.IsSpace(r) {
			space = b.Len() > 0
			continue
		}
		if n >= max {
			b.WriteRune('…')
			return b.String()
		}
		if space {
			// A space that would be the last rune before the cut is dropped.
			if n+1 >= max {
				b.WriteRune('…')
				return b.String()
			}
			b.WriteByte(' ')
			n++
			space = false
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}

// Answer is the person's response to the question.
type Answer struct {
	// Action is accept, decline or cancel.
	Action string
	// Typed is the Field value of an accepted answer.
	Typed string
}

// DecodeAnswer reads the elicitation result for ElicitationID from a call's
// inputResponses ({"confirm": {"action": "accept", "content": {...}}}). Absent
// inputResponses, or no entry for the id, is ok == false with no error: the call
// has not been answered yet. A document that cannot be an answer is an error.
func DecodeAnswer(raw json.RawMessage) (a Answer, ok bool, err error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return Answer{}, false, nil
	}
	if len(raw) > MaxInputResponsesLen {
		return Answer{}, false, ErrMalformed
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(raw, &all); err != nil {
		return Answer{}, false, ErrMalformed
	}
	one, present := all[ElicitationID]
	if !present {
		return Answer{}, false, nil
	}
	var r struct {
		Action  string          `json:"action"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(one, &r); err != nil {
		return Answer{}, false, ErrMalformed
	}
	switch r.Action {
	case "accept":
		var content map[string]any
		if c := bytes.TrimSpace(r.Content); len(c) > 0 && !bytes.Equal(c, []byte("null")) {
			if err := json.Unmarshal(c, &content); err != nil {
				return Answer{}, false, ErrMalformed
			}
		}
		typed, _ := content[Field].(string)
		if !utf8.ValidString(typed) {
			return Answer{}, false, ErrMalformed
		}
		return Answer{Action: r.Action, Typed: typed}, true, nil
	case "decline", "cancel":
		return Answer{Action: r.Action}, true, nil
	}
	return Answer{}, false, ErrMalformed
}

// Check reports whether an answer confirms q: accepted, with the expected text
// typed (surrounding space ignored; the issue key compared case-insensitively,
// since AAC-42 and aac-42 name the same issue to a person).
func (q Question) Check(a Answer) error {
	if a.Action != "accept" {
		return ErrDeclined
	}
	if !strings.EqualFold(strings.TrimSpace(a.Typed), q.Expect) {
		return ErrWrongAnswer
	}
	return nil
}
