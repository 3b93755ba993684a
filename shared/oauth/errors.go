package oauth

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/oauth/clientmeta"
)

// ErrorCode is an OAuth error code (RFC 6749 sections 4.1.2.1 and 5.2, RFC 7591
// section 3.2.2, RFC 8707 section 2). Its string is part of the wire contract: clients
// branch on it.
type ErrorCode string

// The codes this server sends. The client-metadata codes are clientmeta's: a
// registration passes its errors on as they come (ErrorCode(ce.Code)), so each of
// those strings is written once, where the refusals are decided.
const (
	ErrInvalidRequest          ErrorCode = "invalid_request"
	ErrInvalidClient           ErrorCode = clientmeta.CodeInvalidClient
	ErrInvalidGrant            ErrorCode = "invalid_grant"
	ErrUnauthorizedClient      ErrorCode = "unauthorized_client"
	ErrUnsupportedGrantType    ErrorCode = "unsupported_grant_type"
	ErrUnsupportedResponseType ErrorCode = "unsupported_response_type"
	ErrInvalidScope            ErrorCode = "invalid_scope"
	ErrInvalidTarget           ErrorCode = "invalid_target"
	ErrAccessDenied            ErrorCode = "access_denied"
	ErrServerError             ErrorCode = "server_error"
	ErrTemporarilyUnavailable  ErrorCode = "temporarily_unavailable"
	ErrInvalidClientMetadata   ErrorCode = clientmeta.CodeInvalidClientMetadata
	ErrInvalidRedirectURI      ErrorCode = clientmeta.CodeInvalidRedirectURI
)

// Error is a refusal with its RFC code and a description that says exactly what is
// wrong; the description is safe to show (it never holds a secret or internal detail).
type Error struct {
	Code        ErrorCode
	Description string
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Description }

func oerr(code ErrorCode, desc string) *Error { return &Error{Code: code, Description: desc} }

// status is the HTTP status of e at the token, registration and revocation endpoints
// (RFC 6749 section 5.2: 400, or 401 for failed client authentication).
func (e *Error) status() int {
	switch e.Code {
	case ErrInvalidClient:
		return http.StatusUnauthorized
	case ErrServerError:
		return http.StatusInternalServerError
	case ErrTemporarilyUnavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusBadRequest
}

// errorBody is the JSON error of every JSON endpoint.
type errorBody struct {
	Error       string `json:"error"`
	Description string `json:"error_description,omitempty"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"server_error"}`)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if h.Get("Cache-Control") == "" {
		h.Set("Cache-Control", "no-store")
		h.Set("Pragma", "no-cache")
	}
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// jsonError answers a JSON endpoint's refusal. invalid_client carries the challenge
// RFC 6749 section 5.2 asks for.
func (q *request) jsonError(e *Error) {
	if e.Code == ErrInvalidClient {
		q.w.Header().Set("WWW-Authenticate", `Basic realm="aacmcp", charset="UTF-8"`)
	}
	writeJSON(q.w, e.status(), errorBody{Error: string(e.Code), Description: e.Description})
}

// internal logs a store or sink failure and returns the public server_error.
func (q *request) internal(what string, err error) *Error {
	q.s.log.ErrorContext(q.ctx(), "oauth: "+what, "path", q.r.URL.Path, "err", err, "code", apperr.CodeOf(err))
	return oerr(ErrServerError, "the authorization server failed while it "+what+"; try again")
}

// redirectError sends the browser back to a validated redirect URI with an RFC 6749
// section 4.1.2.1 error, the state and the issuer (RFC 9207).
func (q *request) redirectError(redirectURI, state string, e *Error) {
	v := url.Values{}
	v.Set("error", string(e.Code))
	v.Set("error_description", e.Description)
	q.redirectTo(redirectURI, state, v)
}

// redirectTo adds v, state and iss to redirectURI, keeping its own query as it was
// (RFC 6749 section 3.1.2: the query component is retained).
func (q *request) redirectTo(redirectURI, state string, v url.Values) {
	if state != "" {
		v.Set("state", state)
	}
	v.Set("iss", q.issuer)
	sep := "?"
	if strings.Contains(redirectURI, "?") {
		sep = "&"
	}
	status := http.StatusFound
	if q.r.Method == http.MethodPost {
		status = http.StatusSeeOther // the browser must GET the client's redirect URI
	}
	q.w.Header().Set("Cache-Control", "no-store")
	q.w.Header().Set("Referrer-Policy", "no-referrer")
	http.Redirect(q.w, q.r, redirectURI+sep+v.Encode(), status)
}
