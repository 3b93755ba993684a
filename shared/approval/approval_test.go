package approval

import (
	"bytes"
	"encoding/base64"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/confirm"
)

// TestBinding: every bound field changes the binding, the nonce and expiry do
// not, and the length prefixes keep two fields from trading bytes.
func TestBinding(t *testing.T) {
	base := confirm.Claims{Workspace: "demo", User: "alice", Principal: "tok_1", Tool: "delete_issue", ArgsDigest: "ab12", ItemVersion: "3"}
	b := Binding(base)
	same := base
	same.Nonce, same.Expires = "n", time.Unix(1, 0)
	if Binding(same) != b {
		t.Fatal("the nonce or expiry changed the binding")
	}
	for name, edit := range map[string]func(*confirm.Claims){
		"workspace": func(c *confirm.Claims) { c.Workspace = "other" },
		"user":      func(c *confirm.Claims) { c.User = "bob" },
		"principal": func(c *confirm.Claims) { c.Principal = "tok_2" },
		"tool":      func(c *confirm.Claims) { c.Tool = "delete_comment" },
		"args":      func(c *confirm.Claims) { c.ArgsDigest = "ab13" },
		"version":   func(c *confirm.Claims) { c.ItemVersion = "4" },
		"shifted":   func(c *confirm.Claims) { c.Workspace, c.User = "demoa", "lice" },
	} {
		c := base
		edit(&c)
		if Binding(c) == b {
			t.Errorf("%s: the binding did not change", name)
		}
	}
}

// TestLinkRoundTrip: the token a link carries is the one ParseToken accepts.
func TestLinkRoundTrip(t *testing.T) {
	keys, err := confirm.EphemeralKeyring()
	if err != nil {
		t.Fatal(err)
	}
	tok, _, err := keys.Seal(confirm.Claims{Workspace: "demo"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(Link("http://127.0.0.1:8080/", tok))
	if err != nil || u.Path != PagePath || u.Host != "127.0.0.1:8080" {
		t.Fatalf("link %v: %v", u, err)
	}
	got, err := ParseToken(u.Query().Get(TokenParam))
	if err != nil || got != tok {
		t.Fatalf("ParseToken = %q, %v", got, err)
	}
	for _, bad := range []string{"", "a b", "a=", "a+b", "a/b", strings.Repeat("a", confirm.MaxStateLen+1), "é"} {
		if _, err := ParseToken(bad); err != ErrMalformedToken {
			t.Errorf("ParseToken(%q) = %v", bad, err)
		}
	}
}

// FuzzToken feeds the page's decoder (ParseToken, then the seal's Open) text a
// browser could send: nothing panics, and nothing but a token sealed under the
// key opens.
func FuzzToken(f *testing.F) {
	keys, err := confirm.EphemeralKeyring()
	if err != nil {
		f.Fatal(err)
	}
	now := time.Now()
	tok, _, err := keys.Seal(confirm.Claims{Workspace: "demo", User: "alice"}, now)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(tok)
	f.Add(tok[:len(tok)-1])
	f.Add("AQ")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseToken(s)
		if err != nil {
			return
		}
		c, err := keys.Open(p, now)
		// Base64 ignores a last character's unused bits, so compare what it says.
		want, _ := base64.RawURLEncoding.DecodeString(tok)
		got, _ := base64.RawURLEncoding.DecodeString(s)
		if err == nil && (!bytes.Equal(got, want) || c.Workspace != "demo") {
			t.Fatalf("%q opened as %+v", s, c)
		}
	})
}
