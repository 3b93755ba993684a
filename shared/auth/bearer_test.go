package auth

import (
	"context"
	"testing"
)

type verifyAs string

func (v verifyAs) Verify(_ context.Context, cred string) (Principal, error) {
	return Principal{UserID: string(v), TokenID: cred}, nil
}

// TestVerifyBearer: a token-format secret goes to the opaque verifier, a JWT to the
// JWT verifier when there is one and is malformed when there is none; anything
// else is refused before either verifier runs.
func TestVerifyBearer(t *testing.T) {
	secret, _, err := Mint()
	if err != nil {
		t.Fatal(err)
	}
	const jwt = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhIn0.c2ln"
	tests := []struct {
		name, header string
		jwt          CredentialVerifier
		by           string
		reason       Reason
	}{
		{"secret", "Bearer " + secret, nil, "opaque", ""},
		{"secret beside a JWT verifier", "Bearer " + secret, verifyAs("jwt"), "opaque", ""},
		{"JWT", "Bearer " + jwt, verifyAs("jwt"), "jwt", ""},
		{"JWT without a JWT verifier", "Bearer " + jwt, nil, "", ReasonMalformed},
		{"neither", "Bearer not-a-token", verifyAs("jwt"), "", ReasonMalformed},
		{"no header", "", verifyAs("jwt"), "", ReasonMissing},
	}
	for _, tt := range tests {
		p, err := VerifyBearer(context.Background(), tt.header, verifyAs("opaque"), tt.jwt)
		if p.UserID != tt.by || RejectReason(err) != tt.reason {
			t.Errorf("%s: verified by %q, reason %q; want %q, %q", tt.name, p.UserID, RejectReason(err), tt.by, tt.reason)
		}
	}
}
