package file

import (
	"encoding/binary"
	"errors"
)

// errFooter is a Parquet footer whose Thrift encoding is malformed or claims more
// data than it holds.
var errFooter = errors.New("malformed Parquet footer")

// checkCompactStruct walks a Thrift compact-protocol struct and refuses any list,
// set, map or binary that claims more elements or bytes than remain. parquet-go
// v0.32.0 allocates such claims as stated: a 100-byte footer could make it allocate
// terabytes and kill the process, which no recover catches.
func checkCompactStruct(b []byte) error {
	c := compactChecker{b: b}
	c.structure(0)
	return c.err
}

type compactChecker struct {
	b   []byte
	err error
}

const maxThriftDepth = 64

func (c *compactChecker) fail() { c.err = errFooter; c.b = nil }

func (c *compactChecker) byte1() byte {
	if c.err != nil || len(c.b) < 1 {
		c.fail()
		return 0
	}
	v := c.b[0]
	c.b = c.b[1:]
	return v
}

func (c *compactChecker) varint() uint64 {
	if c.err != nil {
		return 0
	}
	v, n := binary.Uvarint(c.b)
	if n <= 0 {
		c.fail()
		return 0
	}
	c.b = c.b[n:]
	return v
}

func (c *compactChecker) skip(n uint64) {
	if c.err != nil || n > uint64(len(c.b)) {
		c.fail()
		return
	}
	c.b = c.b[n:]
}

func (c *compactChecker) structure(depth int) {
	if depth > maxThriftDepth {
		c.fail()
		return
	}
	for c.err == nil {
		h := c.byte1()
		t := h & 0x0f
		if t == 0 { // stop
			return
		}
		if h>>4 == 0 {
			c.varint() // long-form field id
		}
		c.value(t, depth, false)
	}
}

// value skips one value of compact type t; inList marks list elements, where
// booleans take a byte of their own instead of living in the field header.
func (c *compactChecker) value(t byte, depth int, inList bool) {
	switch t {
	case 1, 2: // boolean
		if inList {
			c.byte1()
		}
	case 3: // byte
		c.byte1()
	case 4, 5, 6: // i16, i32, i64
		c.varint()
	case 7: // double
		c.skip(8)
	case 8: // binary
		c.skip(c.varint())
	case 9, 10: // list, set
		h := c.byte1()
		n := uint64(h >> 4)
		if n == 15 {
			n = c.varint()
		}
		// Every element takes at least one byte.
		if n > uint64(len(c.b)) {
			c.fail()
			return
		}
		for i := uint64(0); i < n && c.err == nil; i++ {
			c.value(h&0x0f, depth+1, true)
		}
	case 11: // map
		n := c.varint()
		if n == 0 {
			return
		}
		kv := c.byte1()
		if 2*n > uint64(len(c.b)) {
			c.fail()
			return
		}
		for i := uint64(0); i < n && c.err == nil; i++ {
			c.value(kv>>4, depth+1, true)
			c.value(kv&0x0f, depth+1, true)
		}
	case 12: // struct
		c.structure(depth + 1)
	case 13: // uuid
		c.skip(16)
	default:
		c.fail()
	}
}
