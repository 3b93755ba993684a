package auth

import "context"

// CredentialVerifier checks one bearer credential (Verifier, CachedVerifier and the
// JWT access-token verifier do).
type CredentialVerifier interface {
	Verify(ctx context.Context, credential string) (Principal, error)
}

// VerifyBearer verifies the credential of an Authorization header value: a secret
// of the token format by opaque, and one shaped like a JWT by jwt. With jwt nil a
// JWT is malformed, as for ParseBearer. It is the one choice between the two
// verifiers, for the local server and the Lambda authorizer alike.
func VerifyBearer(ctx context.Context, header string, opaque, jwt CredentialVerifier) (Principal, error) {
	if jwt == nil {
		secret, err := ParseBearer(header)
		if err != nil {
			return Principal{}, err
		}
		return opaque.Verify(ctx, secret)
	}
	cred, isJWT, err := ParseBearerOrJWT(header)
	if err != nil {
		return Principal{}, err
	}
	if isJWT {
		return jwt.Verify(ctx, cred)
	}
	return opaque.Verify(ctx, cred)
}
