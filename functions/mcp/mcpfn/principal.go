package mcpfn

import (
	"net/http"
	"strings"

	"github.com/awslabs/aws-lambda-go-api-proxy/core"

	"github.com/aacworkflow/aacmcp/functions/authorizer/authorizerfn"
	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/auth"
)

// AuthorizerContext is the PrincipalSource of the Lambda: the context the REQUEST
// authorizer returned, which API Gateway passes in the proxy event's request context.
// The token was verified there; this function never sees the secret.
type AuthorizerContext struct{}

// Principal implements mcpserver.PrincipalSource. A request without a complete
// authorizer context (a route deployed without the authorizer, or an event built by
// hand) is invalid_token: 401, never an anonymous call.
func (AuthorizerContext) Principal(r *http.Request) (auth.Principal, error) {
	rc, ok := core.GetAPIGatewayContextFromContext(r.Context())
	if !ok {
		return auth.Principal{}, missing()
	}
	p := auth.Principal{
		WorkspaceID: str(rc.Authorizer[authorizerfn.CtxWorkspaceID]),
		UserID:      str(rc.Authorizer[authorizerfn.CtxUserID]),
		TokenID:     str(rc.Authorizer[authorizerfn.CtxTokenID]),
		Scopes:      auth.ParseScopes(str(rc.Authorizer[authorizerfn.CtxScopes])),
		// Absent (an authorizer answer cached from before OAuth) is "", which is
		// what it meant then: a personal token.
		ClientID: str(rc.Authorizer[authorizerfn.CtxClientID]),
	}
	if p.WorkspaceID == "" || p.UserID == "" || p.TokenID == "" {
		return auth.Principal{}, missing()
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
