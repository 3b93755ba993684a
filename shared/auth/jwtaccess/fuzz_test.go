package jwtaccess

import (
	"slices"
	"testing"

	"github.com/aacworkflow/aacmcp/shared/auth"
)

// FuzzDecodeClaims: whatever the payload, no panic; a decoded set holds only known
// scopes, sorted and unique, and bounded control-free strings.
func FuzzDecodeClaims(f *testing.F) {
	for _, s := range []string{
		`{"iss":"https://idp","aud":["a","b"],"exp":1e9,"scope":"issues:read openid","email":"a@b"}`,
		`{"scp":["issues:write","x"],"exp":1.5,"nbf":null,"azp":"c"}`,
		`{"scp":"comments:read comments:read","email_verified":"true"}`,
		`{"exp":-1}`, `{"exp":1e300}`, `{"aud":7}`, `{} {}`, `[]`, `null`, `{"email":"a\u0000b"}`,
		`{"iss":1}`, `{"email_verified":1}`,
	} {
		f.Add([]byte(s), "email", "ws")
	}
	f.Fuzz(func(t *testing.T, payload []byte, userClaim, wsClaim string) {
		c, err := decodeClaims(payload, userClaim, wsClaim)
		if err != nil {
			return
		}
		if !slices.IsSorted(c.Scopes) || len(slices.Compact(slices.Clone(c.Scopes))) != len(c.Scopes) {
			t.Fatalf("scopes %q", c.Scopes)
		}
		for _, s := range c.Scopes {
			if !slices.Contains(auth.AllScopes, s) {
				t.Fatalf("unknown scope %q kept", s)
			}
		}
		for _, s := range []string{c.Issuer, c.ID, c.ClientID, c.User, c.Workspace} {
			if len(s) > maxClaimLen {
				t.Fatalf("claim of %d bytes", len(s))
			}
			for _, r := range s {
				if isControl(r) {
					t.Fatalf("control character in %q", s)
				}
			}
		}
		for _, d := range []struct{ y int }{{c.Expiry.Year()}, {c.NotBefore.Year()}, {c.IssuedAt.Year()}} {
			if d.y > 9999 {
				t.Fatalf("year %d", d.y)
			}
		}
	})
}
