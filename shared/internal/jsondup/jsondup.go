// Package jsondup finds a member name that occurs twice in one JSON object, at any
// depth. RFC 8259 leaves such documents' meaning to the parser ("the names within an
// object SHOULD be unique"), and parsers disagree: encoding/json keeps the last
// value, others the first. A request a policy layer reads one way and the server
// another is refused instead.
package jsondup

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// Find reports the first member name that repeats within one object of doc, as
// decoded (so "a" and "\u0061" are the same name). ok is false when every object's
// names are distinct, and also when doc is not valid JSON: whoever decodes doc
// reports that.
func Find(doc []byte) (name string, ok bool) {
	// A document without an object has no names; one that is not JSON is not ours
	// to judge (and its tokens up to the error would be).
	if bytes.IndexByte(doc, '{') < 0 || !json.Valid(doc) {
		return "", false
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	// One entry per open container: the names seen so far for an object, nil for
	// an array. expectName says the next string token of an object is a name.
	type frame struct {
		names      map[string]struct{}
		object     bool
		expectName bool
	}
	var stack []frame
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return "", false
		}
		if err != nil {
			return "", false
		}
		var top *frame
		if len(stack) > 0 {
			top = &stack[len(stack)-1]
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				if top != nil && top.object {
					top.expectName = true // the container was a member's value
				}
				stack = append(stack, frame{object: t == '{', expectName: t == '{'})
			case '}', ']':
				stack = stack[:len(stack)-1]
				if len(stack) > 0 && stack[len(stack)-1].object {
					stack[len(stack)-1].expectName = true
				}
			}
		case string:
			if top != nil && top.object && top.expectName {
				if top.names == nil {
					top.names = make(map[string]struct{}, 4)
				}
				if _, seen := top.names[t]; seen {
					return t, true
				}
				top.names[t] = struct{}{}
				top.expectName = false
				continue
			}
			if top != nil && top.object {
				top.expectName = true
			}
		default:
			if top != nil && top.object {
				top.expectName = true
			}
		}
	}
}
