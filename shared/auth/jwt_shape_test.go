package auth

import (
	"strings"
	"testing"

	"github.com/aacworkflow/aacmcp/shared/apperr"
)

func TestParseBearerOrJWT(t *testing.T) {
	secret, _, err := Mint()
	if err != nil {
		t.Fatal(err)
	}
	const jwt = "eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJ4In0.c2ln"
	tests := []struct {
		header string
		cred   string
		isJWT  bool
		reason Reason
	}{
		{header: "Bearer " + secret, cred: secret},
		{header: "Bearer " + jwt, cred: jwt, isJWT: true},
		{header: "bearer " + jwt, cred: jwt, isJWT: true},
		{header: "Bearer eyJhbGciOiJub25lIn0.eyJpc3MiOiJ4In0.", cred: "eyJhbGciOiJub25lIn0.eyJpc3MiOiJ4In0.", isJWT: true},
		{header: "", reason: ReasonMissing},
		{header: "Basic " + jwt, reason: ReasonMalformed},
		{header: "Bearer a.b", reason: ReasonMalformed},
		{header: "Bearer a.b.c.d", reason: ReasonMalformed},
		{header: "Bearer .b.c", reason: ReasonMalformed},
		{header: "Bearer a..c", reason: ReasonMalformed},
		{header: "Bearer a+b.c.d", reason: ReasonMalformed},
		{header: "Bearer " + jwt + " x", reason: ReasonMalformed},
		{header: "Bearer aac_nope", reason: ReasonMalformed},
	}
	for _, tt := range tests {
		cred, isJWT, err := ParseBearerOrJWT(tt.header)
		if tt.reason != "" {
			if got := RejectReason(err); got != tt.reason || !apperr.Is(err, apperr.InvalidToken) {
				t.Errorf("%q: err %v (reason %q), want %q", tt.header, err, got, tt.reason)
			}
			continue
		}
		if err != nil || cred != tt.cred || isJWT != tt.isJWT {
			t.Errorf("%q = %q, %v, %v; want %q, %v", tt.header, cred, isJWT, err, tt.cred, tt.isJWT)
		}
	}
	// ParseBearer itself is unchanged: a JWT is malformed to a server without one.
	if _, err := ParseBearer("Bearer " + jwt); RejectReason(err) != ReasonMalformed {
		t.Errorf("ParseBearer accepts a JWT: %v", err)
	}
}

func FuzzParseBearerOrJWT(f *testing.F) {
	secret, _, _ := Mint()
	for _, s := range []string{"", "Bearer " + secret, "Bearer a.b.c", "Bearer a.b.", "Bearer ..", "bearer eyJ.eyJ.x", "Bearer a.b.c d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		cred, isJWT, err := ParseBearerOrJWT(header)
		if err != nil {
			if cred != "" || RejectReason(err) == "" || apperr.As(err).Message != PublicMessage {
				t.Fatalf("%q: %q, %v", header, cred, err)
			}
			return
		}
		if !strings.Contains(header, cred) || isJWT != LooksLikeJWT(cred) || (!isJWT && !ValidFormat(cred)) {
			t.Fatalf("%q: accepted %q (jwt %v)", header, cred, isJWT)
		}
		if isJWT && (strings.Count(cred, ".") != 2 || strings.ContainsAny(cred, " \t+/=")) {
			t.Fatalf("%q: %q is no compact JWS", header, cred)
		}
	})
}
