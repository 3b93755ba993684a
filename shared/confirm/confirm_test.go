package confirm

import (
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)

func testKey(id string, b byte) Key {
	return Key{ID: id, Secret: []byte(strings.Repeat(string(rune(b)), KeySize))}
}

func claims() Claims {
	return Claims{Workspace: "w1", User: "u1", Principal: "tok1", Tool: "delete_issue", ArgsDigest: "abc", ItemVersion: "3"}
}

func TestSealOpen(t *testing.T) {
	old := testKey("k1", 'a')
	cur := testKey("k2", 'b')
	ringOld, err := NewKeyring(old)
	if err != nil {
		t.Fatal(err)
	}
	ring, err := NewKeyring(cur, old)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := NewKeyring(testKey("k2", 'c'))
	state, sealed, err := ring.Seal(claims(), t0)
	if err != nil {
		t.Fatal(err)
	}
	oldState, _, _ := ringOld.Seal(claims(), t0)
	raw, _ := base64.RawURLEncoding.DecodeString(state)
	flipped := append([]byte(nil), raw...)
	flipped[len(flipped)-1] ^= 1
	tests := []struct {
		name  string
		ring  *Keyring
		state string
		now   time.Time
		want  error
	}{
		{"fresh", ring, state, t0, nil},
		{"just before expiry", ring, state, t0.Add(Lifetime - time.Second), nil},
		{"expired", ring, state, t0.Add(Lifetime), ErrExpired},
		{"previous key still opens", ring, oldState, t0, nil},
		{"rotated out", ringOld, state, t0, ErrUnknownKey},
		{"same id other secret", other, state, t0, ErrTampered},
		{"bit flipped", ring, base64.RawURLEncoding.EncodeToString(flipped), t0, ErrTampered},
		{"empty", ring, "", t0, ErrMalformed},
		{"not base64", ring, "!!!", t0, ErrMalformed},
		{"too long", ring, strings.Repeat("A", MaxStateLen+1), t0, ErrMalformed},
		{"truncated", ring, state[:20], t0, ErrMalformed},
		{"sealed in the future", ring, state, t0.Add(-time.Hour), ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := tt.ring.Open(tt.state, tt.now)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Open = %v, want %v", err, tt.want)
			}
			if err == nil && c.Check(claims()) != nil {
				t.Fatalf("opened claims %+v do not match", c)
			}
			if err == nil && tt.state == state && c != sealed {
				t.Fatalf("opened %+v, sealed %+v", c, sealed)
			}
		})
	}
	s2, c2, _ := ring.Seal(claims(), t0)
	if s2 == state || c2.Nonce == sealed.Nonce {
		t.Fatal("two seals share a nonce or a state")
	}
}

func TestCheck(t *testing.T) {
	base := claims()
	for name, mut := range map[string]func(*Claims){
		"workspace": func(c *Claims) { c.Workspace = "w2" },
		"user":      func(c *Claims) { c.User = "u2" },
		"principal": func(c *Claims) { c.Principal = "tok2" },
		"tool":      func(c *Claims) { c.Tool = "delete_comment" },
		"args":      func(c *Claims) { c.ArgsDigest = "abd" },
		"version":   func(c *Claims) { c.ItemVersion = "4" },
	} {
		want := base
		mut(&want)
		if err := base.Check(want); !errors.Is(err, ErrMismatch) {
			t.Errorf("%s changed: Check = %v", name, err)
		}
	}
	if err := base.Check(base); err != nil {
		t.Fatal(err)
	}
}

func TestNewKeyringRefuses(t *testing.T) {
	for name, keys := range map[string][]Key{
		"short":  {{ID: "a", Secret: []byte("x")}},
		"no id":  {{Secret: make([]byte, KeySize)}},
		"dup id": {testKey("a", 'a'), testKey("a", 'b')},
	} {
		if _, err := NewKeyring(keys[0], keys[1:]...); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestLocalKeyring(t *testing.T) {
	dir := t.TempDir()
	r1, err := LocalKeyring(dir)
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(filepath.Join(dir, KeyFile))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v, %v", info.Mode(), err)
	}
	r2, err := LocalKeyring(dir)
	if err != nil {
		t.Fatal(err)
	}
	state, _, _ := r1.Seal(claims(), t0)
	if _, err := r2.Open(state, t0); err != nil {
		t.Fatalf("second load does not open the first's state: %v", err)
	}
	if err := os.Chmod(filepath.Join(dir, KeyFile), 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := LocalKeyring(dir); err == nil {
		t.Fatal("group-readable key accepted")
	}
}

func TestAsk(t *testing.T) {
	three := int64(3)
	q, err := Ask(Item{Kind: "issue", Key: "AAC-42", Title: "Login fails on Safari", Comments: &three, Expect: "AAC-42"})
	if err != nil {
		t.Fatal(err)
	}
	if want := `Delete issue AAC-42 "Login fails on Safari" and its 3 comments? This cannot be undone.`; q.Message != want {
		t.Fatalf("message %q, want %q", q.Message, want)
	}
	tests := []struct {
		a    Answer
		want error
	}{
		{Answer{Action: "accept", Typed: "AAC-42"}, nil},
		{Answer{Action: "accept", Typed: " aac-42 "}, nil},
		{Answer{Action: "accept", Typed: "AAC-43"}, ErrWrongAnswer},
		{Answer{Action: "accept"}, ErrWrongAnswer},
		{Answer{Action: "decline", Typed: "AAC-42"}, ErrDeclined},
		{Answer{Action: "cancel"}, ErrDeclined},
	}
	for _, tt := range tests {
		if err := q.Check(tt.a); !errors.Is(err, tt.want) {
			t.Errorf("Check(%+v) = %v, want %v", tt.a, err, tt.want)
		}
	}
	c, err := Ask(Item{Kind: "comment", Parent: "AAC-42", Title: "see\x1b[31m\u202e log", Expect: "delete"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Expect != "delete" || strings.ContainsAny(c.Message, "\x1b\u202e") ||
		!strings.HasPrefix(c.Message, "Delete the comment on AAC-42 ") {
		t.Fatalf("comment question %+v", c)
	}
	if _, err := Ask(Item{Kind: "issue", Title: "no key to type"}); err == nil {
		t.Fatal("a question with nothing to type accepted")
	}
}

func TestPlain(t *testing.T) {
	tests := []struct{ in, want string }{
		{"  a\n\tb  ", "a b"},
		{"abcdef", "abc…"},
		{"ab cdef", "ab…"},
		{"x\u200by", "x y"},
		{"\xff", "\uFFFD"},
	}
	for _, tt := range tests {
		if got := Plain(tt.in, 3); got != tt.want {
			t.Errorf("Plain(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestDecodeAnswer(t *testing.T) {
	tests := []struct {
		in     string
		want   Answer
		ok     bool
		failed bool
	}{
		{``, Answer{}, false, false},
		{`null`, Answer{}, false, false},
		{`{}`, Answer{}, false, false},
		{`{"other":{"action":"accept"}}`, Answer{}, false, false},
		{`{"confirm":{"action":"accept","content":{"confirmation":"AAC-1"}}}`, Answer{"accept", "AAC-1"}, true, false},
		{`{"confirm":{"action":"accept","content":{"confirmation":7}}}`, Answer{"accept", ""}, true, false},
		{`{"confirm":{"action":"decline"}}`, Answer{Action: "decline"}, true, false},
		{`{"confirm":{"action":"cancel"}}`, Answer{Action: "cancel"}, true, false},
		{`{"confirm":{"action":"yes"}}`, Answer{}, false, true},
		{`{"confirm":{"action":"accept","content":[1]}}`, Answer{}, false, true},
		{`[1]`, Answer{}, false, true},
		{`{"confirm":"accept"}`, Answer{}, false, true},
	}
	for _, tt := range tests {
		a, ok, err := DecodeAnswer([]byte(tt.in))
		if a != tt.want || ok != tt.ok || (err != nil) != tt.failed {
			t.Errorf("DecodeAnswer(%s) = %+v, %v, %v", tt.in, a, ok, err)
		}
	}
}

func TestParsePolicy(t *testing.T) {
	for _, s := range []string{"", "flag", "elicit", "require"} {
		if _, err := ParsePolicy(s); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
	if _, err := ParsePolicy("Require"); err == nil {
		t.Fatal("Require accepted")
	}
}
