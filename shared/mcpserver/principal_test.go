package mcpserver

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/aacworkflow/aacmcp/shared/auth"
)

type namedVerifier string

func (n namedVerifier) Verify(context.Context, string) (auth.Principal, error) {
	return auth.Principal{TokenID: string(n)}, nil
}

// TestBearerSourceRoutesJWTs: with a JWT verifier, JWT-shaped credentials go to it
// and opaque secrets to the token store; without one, a JWT is malformed.
func TestBearerSourceRoutesJWTs(t *testing.T) {
	secret, _, err := auth.Mint()
	if err != nil {
		t.Fatal(err)
	}
	const jwt = "eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJ4In0.c2ln"
	tests := []struct {
		name   string
		src    BearerSource
		cred   string
		want   string
		reason auth.Reason
	}{
		{"opaque, no JWT verifier", BearerSource{Verifier: namedVerifier("store")}, secret, "store", ""},
		{"JWT, no JWT verifier", BearerSource{Verifier: namedVerifier("store")}, jwt, "", auth.ReasonMalformed},
		{"opaque beside JWTs", BearerSource{Verifier: namedVerifier("store"), JWT: namedVerifier("jwt")}, secret, "store", ""},
		{"JWT", BearerSource{Verifier: namedVerifier("store"), JWT: namedVerifier("jwt")}, jwt, "jwt", ""},
		{"neither", BearerSource{Verifier: namedVerifier("store"), JWT: namedVerifier("jwt")}, "hello", "", auth.ReasonMalformed},
	}
	for _, tt := range tests {
		r := httptest.NewRequest("POST", "/mcp", nil)
		r.Header.Set("Authorization", "Bearer "+tt.cred)
		p, err := tt.src.Principal(r)
		if tt.reason != "" {
			if auth.RejectReason(err) != tt.reason {
				t.Errorf("%s: err %v, want reason %s", tt.name, err, tt.reason)
			}
			continue
		}
		if err != nil || p.TokenID != tt.want {
			t.Errorf("%s: verified by %q (%v), want %q", tt.name, p.TokenID, err, tt.want)
		}
	}
}
