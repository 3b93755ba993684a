package oauth

import (
	"github.com/aacworkflow/aacmcp/shared/apperr"
)

// refusalReason is the audit reason a refusal at the token or revocation endpoint
// is filed under. The audit log's reasons are apperr codes, so each OAuth error
// code maps to the one whose meaning it shares:
//
//	invalid_client                          invalid_token      the client's credentials failed
//	invalid_grant                           permission_denied  the code or refresh token is not this client's to use
//	invalid_scope                           insufficient_scope more scopes than the grant holds
//	invalid_target, unauthorized_client     permission_denied
//	invalid_request, unsupported_grant_type invalid_arguments  the request is malformed
//	server_error and the rest               internal_error
//
// The OAuth code and its description are in the log line beside the record.
func refusalReason(c ErrorCode) apperr.Code {
	switch c {
	case ErrInvalidClient:
		return apperr.InvalidToken
	case ErrInvalidGrant, ErrInvalidTarget, ErrUnauthorizedClient:
		return apperr.PermissionDenied
	case ErrInvalidScope:
		return apperr.InsufficientScope
	case ErrInvalidRequest, ErrUnsupportedGrantType:
		return apperr.InvalidArguments
	}
	return apperr.InternalError
}

// refuse answers a refused token or revocation request and audits it with what
// is known of who tried: the client id the request named (not necessarily
// authenticated), the source address and the user agent. The refusal stands
// whatever the audit sink says.
func (q *request) refuse(action string, e *Error) {
	ev := q.event(action)
	ev.clientID, ev.denied = q.claimed, refusalReason(e.Code)
	q.s.log.InfoContext(q.ctx(), "oauth: request refused", "path", q.r.URL.Path, "client_id", q.claimed,
		"source_ip", ev.addr, "error", string(e.Code), "error_description", e.Description)
	_ = q.s.record(q.ctx(), ev)
	q.jsonError(e)
}
