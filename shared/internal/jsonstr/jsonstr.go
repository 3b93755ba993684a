// Package jsonstr writes JSON strings byte for byte as encoding/json's Marshal writes
// them, for the hand-written encoders of the hot paths (audit lines, tool results,
// the tool result quoted as MCP text content). Their output is compared with
// encoding/json's by tests and fuzz targets, and stored and golden bytes depend on
// it, so every rule here is encoding/json's, not a choice of this package.
package jsonstr

import (
	"encoding/binary"
	"math/bits"
	"slices"
	"unicode/utf8"
)

// plain marks the bytes encoding/json copies into a string unchanged with HTML
// escaping on (its htmlSafeSet): printable ASCII and DEL, except '"', '\\' and the
// HTML-unsafe '<', '>' and '&'. Bytes from 0x80 up are false: they start a UTF-8
// sequence that has to be checked.
var plain = func() (t [256]bool) {
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

// Bytes repeated in the eight lanes of a word.
const (
	lanes1   = 0x0101010101010101
	lanesTop = 0x8080808080808080
)

// attention returns, for the eight bytes of x (the first in the low lane), a word
// whose lowest set bit is the top bit of the first byte that is not plain: a control
// character, '"', '\\', '<', '>', '&' or a byte from 0x80 up. Zero means all eight
// are plain. Only that lowest bit is meaningful: a lane that matches can make the
// lanes above it match falsely (the borrow of a subtraction carries upward), never
// the lanes below it, and the caller only uses the first.
//
// A lane is zero after y := x ^ c exactly where x holds c; (y - 1) &^ y has the top
// bit set exactly there. '"' (0x22) and '&' (0x26) differ in one bit only, as do
// '<' (0x3c) and '>' (0x3e): clearing that bit tests both with one subtraction.
func attention(x uint64) uint64 {
	ctl := (x - 0x20*lanes1) &^ x // below 0x20 (a lane from 0x80 up is caught by x itself)
	qa := (x ^ '"'*lanes1) &^ (0x04 * lanes1)
	lg := (x ^ '<'*lanes1) &^ (0x02 * lanes1)
	bs := x ^ '\\'*lanes1
	return (ctl | (qa-lanes1)&^qa | (lg-lanes1)&^lg | (bs-lanes1)&^bs | x) & lanesTop
}

// Append appends s as a JSON string, quoted and escaped exactly as encoding/json's
// Marshal escapes a Go string holding the same bytes (HTML escaping on): '"' and
// '\\' with a backslash; \b \f \n \r \t by name; other control characters and '<',
// '>', '&' as \u00XX; U+2028 and U+2029 as \u2028 and \u2029; each byte of invalid
// UTF-8 as \ufffd. Everything else is copied.
//
// Like append, it may write into dst's spare capacity, and only within the part of
// it the returned slice covers.
func Append[S ~string | ~[]byte](dst []byte, s S) []byte {
	dst = append(dst, '"')
	i := 0
	// Eight bytes at a time: the word is stored whole, then the output is cut back
	// to the first byte needing attention, which is escaped next. The bytes stored
	// past the cut are overwritten later, since escaping never shortens the text.
	// This keeps short plain runs, which are most of JSON text (a '"' every few
	// bytes), from costing a copy call each.
	for len(s)-i >= 8 {
		if cap(dst)-len(dst) < 8+len(`\ufffd`) {
			dst = slices.Grow(dst, len(s)-i+8+len(`\ufffd`))
		}
		w := s[i : i+8]
		x := uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
			uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
		n := len(dst)
		binary.LittleEndian.PutUint64(dst[n:n+8], x)
		m := attention(x)
		if m == 0 {
			dst = dst[:n+8]
			i += 8
			continue
		}
		k := bits.TrailingZeros64(m) / 8
		dst = dst[:n+k]
		i += k
		if b := s[i]; b == '"' || b == '\\' { // the usual case, kept out of a call
			dst = append(dst, '\\', b)
			i++
			continue
		}
		dst, i = appendSpecial(dst, s, i)
	}
	for i < len(s) {
		if b := s[i]; plain[b] {
			dst = append(dst, b)
			i++
			continue
		}
		dst, i = appendSpecial(dst, s, i)
	}
	return append(dst, '"')
}

// appendSpecial appends the byte of s at i that is not plain, escaped, or the
// UTF-8 sequence it starts, and returns the index after it.
func appendSpecial[S ~string | ~[]byte](dst []byte, s S, i int) ([]byte, int) {
	b := s[i]
	if b < utf8.RuneSelf {
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
			// The other control characters, and <, > and & so that the text
			// pasted into HTML cannot close a script element.
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
		}
		return dst, i + 1
	}
	// Converting at most UTFMax bytes keeps the conversion of a []byte on the
	// stack (encoding/json does the same, for the same reason).
	n := min(len(s)-i, utf8.UTFMax)
	c, size := utf8.DecodeRuneInString(string(s[i : i+n]))
	switch {
	case c == utf8.RuneError && size == 1:
		// Invalid UTF-8 is replaced, byte by byte, so that the output is valid
		// UTF-8 (Athena, the schema validator, every JSON client).
		dst = append(dst, `\ufffd`...)
	case c == '\u2028' || c == '\u2029':
		// Valid JSON but line breaks to JavaScript (JSONP).
		dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
	default:
		dst = append(dst, s[i:i+size]...)
	}
	return dst, i + size
}
