package mcpfn

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/awslabs/aws-lambda-go-api-proxy/core"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/authzctx"
)

// AuthorizerContext is the PrincipalSource of the Lambda: the context the REQUEST
// authorizer returned, which API Gateway passes in the proxy event's request context.
// The token was verified there; this function never sees the secret.
type AuthorizerContext struct {
	// Now is the clock the token's expiry is held to; nil means time.Now.
	Now func() time.Time
}

// Principal implements mcpserver.PrincipalSource. A request without a complete
// authorizer context (a route deployed without the authorizer, or an event built by
// hand) is invalid_token: 401, never an anonymous call.
//
// API Gateway answers later requests with the same token from its cache of the
// authorizer's answer, for the cache's TTL, without asking the authorizer again;
// the expiry it carries is what keeps a token that expires meanwhile from working
// until the cache lets go. An answer without a readable expiry is refused like one
// past it (fail closed, as the verifier treats a token without an expiry).
func (a AuthorizerContext) Principal(r *http.Request) (auth.Principal, error) {
	rc, ok := core.GetAPIGatewayContextFromContext(r.Context())
	if !ok {
		return auth.Principal{}, missing()
	}
	p := auth.Principal{
		WorkspaceID: str(rc.Authorizer[authzctx.WorkspaceID]),
		UserID:      str(rc.Authorizer[authzctx.UserID]),
		TokenID:     str(rc.Authorizer[authzctx.TokenID]),
		Scopes:      auth.ParseScopes(str(rc.Authorizer[authzctx.Scopes])),
		ClientID:    str(rc.Authorizer[authzctx.ClientID]),
	}
	if p.WorkspaceID == "" || p.UserID == "" || p.TokenID == "" {
		return auth.Principal{}, missing()
	}
	sec, err := strconv.ParseInt(str(rc.Authorizer[authzctx.ExpiresAt]), 10, 64)
	if err != nil {
		return auth.Principal{}, missing()
	}
	p.ExpiresAt = time.Unix(sec, 0).UTC()
	now := time.Now
	if a.Now != nil {
		now = a.Now
	}
	if !now().Before(p.ExpiresAt) {
		return auth.Principal{}, apperr.Wrap(apperr.InvalidToken, auth.PublicMessage,
			&auth.RejectError{Reason: auth.ReasonExpired, TokenID: p.TokenID})
	}
	return p, nil
}

func missing() error {
	return apperr.Wrap(apperr.InvalidToken, auth.PublicMessage, &auth.RejectError{Reason: auth.ReasonMissing})
}

// str reads a context value; API Gateway delivers authorizer context values as
// strings, and anything else is treated as absent.
func str(v any) string {
	s, _ := v.(string)
	return strings.TrimSpace(s)
}
