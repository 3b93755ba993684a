package jwtaccess_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/auth/jwtaccess/jwttest"
)

// FuzzVerify: any string presented as a JWT to a verifier with a live issuer is
// refused as invalid_token with the public message and a reason, unless it is a
// token the issuer's key signed (the seed); it never panics, and the refusal's
// text never carries the token.
func FuzzVerify(f *testing.F) {
	iss := jwttest.NewIssuer(f)
	k := iss.AddRSA(f, "k1")
	good := k.Sign(f, claims(iss.URL))
	parts := strings.Split(good, ".")
	f.Add(good)
	f.Add(parts[0] + "." + parts[1] + ".")
	f.Add(parts[0] + ".e30." + parts[2])
	f.Add("eyJhbGciOiJub25lIn0.e30.")
	f.Add("a.b.c")
	v := newVerifier(f, iss, &clock{t: t0}, nil)
	f.Fuzz(func(t *testing.T, tok string) {
		p, err := v.Verify(context.Background(), tok)
		if err == nil {
			if tok != good || p.UserID != "ada" {
				t.Fatalf("accepted %q as %+v", tok, p)
			}
			return
		}
		e := apperr.As(err)
		if e.Code != apperr.InvalidToken || e.Message != auth.PublicMessage || auth.RejectReason(err) == "" {
			t.Fatalf("%q: %v", tok, err)
		}
		if len(tok) > 16 && strings.Contains(err.Error(), tok) {
			t.Fatalf("the error carries the token")
		}
	})
}
