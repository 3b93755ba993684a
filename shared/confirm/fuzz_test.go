package confirm

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzOpen: whatever a client sends as requestState, Open returns a typed error
// or claims that round-trip, and never panics.
func FuzzOpen(f *testing.F) {
	ring, err := NewKeyring(testKey("k1", 'a'))
	if err != nil {
		f.Fatal(err)
	}
	state, _, _ := ring.Seal(claims(), t0)
	f.Add(state)
	f.Add("")
	f.Add("AQJrMQ")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ring.Open(s, t0)
		if err != nil {
			if Reason(err) == "" {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if c.Nonce == "" || !t0.Before(c.Expires) {
			t.Fatalf("opened invalid claims %+v", c)
		}
	})
}

// FuzzDecodeAnswer: any inputResponses document decodes to an answer with a known
// action, to "not answered", or to ErrMalformed.
func FuzzDecodeAnswer(f *testing.F) {
	f.Add([]byte(`{"confirm":{"action":"accept","content":{"confirmation":"AAC-1"}}}`))
	f.Add([]byte(`{"confirm":{"action":"decline"}}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, ok, err := DecodeAnswer(b)
		if err != nil {
			if err != ErrMalformed || ok {
				t.Fatalf("error %v ok %v", err, ok)
			}
			return
		}
		if !ok {
			if a != (Answer{}) {
				t.Fatalf("unanswered with %+v", a)
			}
			return
		}
		switch a.Action {
		case "accept":
		case "decline", "cancel":
			if a.Typed != "" {
				t.Fatalf("declined with typed %q", a.Typed)
			}
		default:
			t.Fatalf("action %q", a.Action)
		}
		if !utf8.ValidString(a.Typed) {
			t.Fatal("typed is not UTF-8")
		}
	})
}

// FuzzDecodeSecret: whatever the key secret holds, decoding never panics and
// either refuses it or yields a 32-byte key whose id is derived from it.
func FuzzDecodeSecret(f *testing.F) {
	f.Add(b64('a'))
	f.Add(strings.Repeat("61", KeySize))
	f.Add(" " + strings.Repeat("ab", KeySize) + "\n")
	f.Add("%%%")
	f.Fuzz(func(t *testing.T, v string) {
		k, err := decodeSecret(v)
		if err != nil {
			return
		}
		if len(k.Secret) != KeySize || k.ID != keyID(k.Secret) {
			t.Fatalf("decoded %q to a %d-byte key with id %q", v, len(k.Secret), k.ID)
		}
	})
}
