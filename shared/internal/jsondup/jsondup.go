// Package jsondup finds a member name that occurs twice in one JSON object, at any
// depth. RFC 8259 leaves such documents' meaning to the parser ("the names within an
// object SHOULD be unique"), and parsers disagree: encoding/json keeps the last
// value, others the first. A request a policy layer reads one way and the server
// another is refused instead.
//
// Two names are the same when encoding/json would decode both into one struct
// field: it matches names case-insensitively, by Unicode simple folding ("NAME",
// "Name" and "name"; "\u212aind", with a KELVIN SIGN, and "kind"), and the last
// match wins. So {"name":"get_issue","NAME":"delete_issue"} names one tool to a
// proxy that reads params.name exactly and another to this server.
package jsondup

import (
	"bytes"
	"encoding/json"
	"unicode"
	"unicode/utf8"
)

// smallObject is how many names an object's duplicate check compares pairwise;
// from there on they go into a map, so a huge object costs linear time, not
// quadratic.
const smallObject = 16

// Find reports the first member name that repeats within one object of doc, as
// decoded (so "a" and "\u0061" are the same name) and folded as encoding/json folds
// it (so "a" and "A" are too); name is the later spelling. ok is false when every
// object's names are distinct, and also when doc is not valid JSON: whoever decodes
// doc reports that.
//
// It runs on every /mcp body and every tool's arguments, so it walks the bytes
// itself instead of json.Decoder's token stream, which allocates for every token:
// a name is compared as it appears in doc and decoded only when escapes or invalid
// UTF-8 make its decoded form differ from its bytes.
func Find(doc []byte) (name string, ok bool) {
	// A document without an object has no names; one that is not JSON is not ours
	// to judge. After json.Valid the walk below can rely on the grammar.
	if bytes.IndexByte(doc, '{') < 0 || !json.Valid(doc) {
		return "", false
	}
	// One frame per open container. The names of the innermost objects are the
	// tail of names (from frame.first); an object past smallObject names keeps
	// them in seen instead.
	type frame struct {
		object     bool
		expectName bool
		first      int
		seen       map[string]struct{}
	}
	var (
		stackBuf [16]frame
		namesBuf [32][]byte
		stack    = stackBuf[:0]
		names    = namesBuf[:0]
	)
	for i := 0; i < len(doc); {
		switch c := doc[i]; c {
		case '{', '[':
			stack = append(stack, frame{object: c == '{', expectName: c == '{', first: len(names)})
			i++
		case '}', ']':
			names = names[:stack[len(stack)-1].first]
			stack = stack[:len(stack)-1]
			i++
		case ',':
			// In an object a comma is followed by a name; in valid JSON nothing
			// else sets expectName again.
			if n := len(stack); n > 0 && stack[n-1].object {
				stack[n-1].expectName = true
			}
			i++
		case '"':
			end, plain := stringEnd(doc, i)
			n := len(stack)
			if n == 0 || !stack[n-1].object || !stack[n-1].expectName {
				i = end
				continue
			}
			top := &stack[n-1]
			top.expectName = false
			nm := doc[i+1 : end-1]
			if !plain {
				var s string
				if json.Unmarshal(doc[i:end], &s) != nil {
					return "", false // cannot happen after json.Valid
				}
				nm = []byte(s)
			}
			i = end
			if top.seen != nil {
				key := string(appendFolded(nil, nm))
				if _, dup := top.seen[key]; dup {
					return string(nm), true
				}
				top.seen[key] = struct{}{}
				continue
			}
			for _, prev := range names[top.first:] {
				// bytes.EqualFold is the relation appendFolded's keys stand for.
				if bytes.EqualFold(prev, nm) {
					return string(nm), true
				}
			}
			if len(names)-top.first < smallObject {
				names = append(names, nm)
				continue
			}
			top.seen = make(map[string]struct{}, 2*smallObject)
			for _, prev := range names[top.first:] {
				top.seen[string(appendFolded(nil, prev))] = struct{}{}
			}
			top.seen[string(appendFolded(nil, nm))] = struct{}{}
			names = names[:top.first]
		default:
			i++
		}
	}
	return "", false
}

// appendFolded appends name's folded form, the one encoding/json compares names in
// (its foldName): ASCII letters upper-cased, any other rune r replaced by
// unicode.ToUpper(unicode.ToLower(r)). Two names fold alike exactly when
// bytes.EqualFold calls them equal.
func appendFolded(dst, name []byte) []byte {
	for i := 0; i < len(name); {
		c := name[i]
		if c < utf8.RuneSelf {
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			dst = append(dst, c)
			i++
			continue
		}
		r, n := utf8.DecodeRune(name[i:])
		dst = utf8.AppendRune(dst, unicode.ToUpper(unicode.ToLower(r)))
		i += n
	}
	return dst
}

// stringEnd returns the index just past the string literal starting at doc[start]
// (a '"'), and whether its decoded value equals its bytes: no escapes and valid
// UTF-8 (encoding/json decodes invalid UTF-8 as U+FFFD).
func stringEnd(doc []byte, start int) (end int, plain bool) {
	plain = true
	ascii := true
	for i := start + 1; i < len(doc); i++ {
		switch c := doc[i]; {
		case c == '\\':
			plain = false
			i++ // the escaped byte; \uXXXX's hex digits cannot be '"' or '\\'
		case c == '"':
			if plain && !ascii && !utf8.Valid(doc[start+1:i]) {
				plain = false
			}
			return i + 1, plain
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return len(doc), plain
}
