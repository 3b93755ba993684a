package mcpserver

import (
	"context"
	"net/http"

	"github.com/aacworkflow/aacmcp/shared/auth"
)

// PrincipalSource resolves the caller of an HTTP request. Locally that is the bearer
// token checked in process (BearerSource); on Lambda it is the context the API
// Gateway authorizer attached. An error of code invalid_token means "answer 401";
// any other error is a failure of the source itself.
type PrincipalSource interface {
	Principal(r *http.Request) (auth.Principal, error)
}

// TokenVerifier checks a bearer secret (auth.Verifier and auth.CachedVerifier do).
type TokenVerifier interface {
	Verify(ctx context.Context, secret string) (auth.Principal, error)
}

// BearerSource reads `Authorization: Bearer <secret>` and verifies it.
type BearerSource struct {
	Verifier TokenVerifier
	// JWT, when set, verifies bearer credentials shaped like a JWT: access tokens
	// of an external authorization server (shared/auth/jwtaccess). Opaque secrets
	// still go to Verifier.
	JWT TokenVerifier
}

// Principal implements PrincipalSource.
func (b BearerSource) Principal(r *http.Request) (auth.Principal, error) {
	return auth.VerifyBearer(r.Context(), r.Header.Get("Authorization"), b.Verifier, b.JWT)
}
