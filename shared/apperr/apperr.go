// Package apperr defines the error values that cross package boundaries in aacmcp.
//
// Every failure a caller can see carries a stable machine Code and a human Message.
// Transports (MCP, REST), the audit log and the usage counters derive everything they
// need from the Code: HTTP status, audit outcome, whether the client may retry.
// Nothing in the codebase decides anything by matching message text.
package apperr

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Code is a stable, documented error code. Its string form is part of the public
// contract: it appears in tool results, REST bodies and audit records.
type Code string

const (
	InvalidToken           Code = "invalid_token"
	InsufficientScope      Code = "insufficient_scope"
	DestructiveFlagMissing Code = "destructive_flag_missing"
	PermissionDenied       Code = "permission_denied"
	RateLimited            Code = "rate_limited"
	InvalidArguments       Code = "invalid_arguments"
	NotFound               Code = "not_found"
	Conflict               Code = "conflict"
	InternalError          Code = "internal_error"
	UnknownTool            Code = "unknown_tool"
	// The three confirmation codes belong to the workspace policy
	// destructive_confirmation (elicit|require): the person, not the model, confirms.
	HumanConfirmationRequired Code = "human_confirmation_required"
	ConfirmationInvalid       Code = "confirmation_invalid"
	ConfirmationDeclined      Code = "confirmation_declined"
	// WAFBlocked is never answered by the server: the web application firewall in
	// front of it refused the request, and the audit forwarder records that refusal
	// from the firewall's log.
	WAFBlocked Code = "waf_blocked"
)

// Codes lists every code in documentation order. A test keeps the README in step.
var Codes = []Code{
	InvalidToken, InsufficientScope, DestructiveFlagMissing, PermissionDenied, RateLimited,
	InvalidArguments, NotFound, Conflict, InternalError, UnknownTool, WAFBlocked,
	HumanConfirmationRequired, ConfirmationInvalid, ConfirmationDeclined,
}

// Outcome is the audit outcome of a tool call.
type Outcome string

const (
	OutcomeSuccess Outcome = "success"
	OutcomeDenied  Outcome = "denied"
	OutcomeError   Outcome = "error"
)

// HTTPStatus is the status the REST transport answers with (DESIGN.md section 4).
func (c Code) HTTPStatus() int {
	switch c {
	case InvalidToken:
		return http.StatusUnauthorized
	case InsufficientScope, PermissionDenied, WAFBlocked,
		HumanConfirmationRequired, ConfirmationInvalid, ConfirmationDeclined:
		return http.StatusForbidden
	case DestructiveFlagMissing, InvalidArguments:
		return http.StatusBadRequest
	case NotFound, UnknownTool:
		return http.StatusNotFound
	case Conflict:
		return http.StatusConflict
	case RateLimited:
		return http.StatusTooManyRequests
	default:
		return http.StatusInternalServerError
	}
}

// Outcome maps a code to the audit outcome: authorization decisions are "denied",
// everything else that failed is "error".
func (c Code) Outcome() Outcome {
	switch c {
	case "":
		return OutcomeSuccess
	case InvalidToken, InsufficientScope, DestructiveFlagMissing, PermissionDenied, RateLimited, WAFBlocked,
		HumanConfirmationRequired, ConfirmationInvalid, ConfirmationDeclined:
		return OutcomeDenied
	default:
		return OutcomeError
	}
}

// Describe is the one-line meaning of each code, used by the README and `aacmcp tools`.
func (c Code) Describe() string {
	switch c {
	case InvalidToken:
		return "the bearer token is missing, malformed, unknown, expired or revoked"
	case InsufficientScope:
		return "the token lacks a scope the tool requires"
	case DestructiveFlagMissing:
		return "a destructive tool was called without the JSON boolean confirm: true"
	case PermissionDenied:
		return "the user's role in the workspace does not allow the call"
	case RateLimited:
		return "too many calls for this token and tool; retry after retry_after_seconds"
	case InvalidArguments:
		return "the arguments do not match the tool's input schema"
	case NotFound:
		return "no such item in the caller's workspace"
	case Conflict:
		return "expected_version is stale, or an idempotency key was reused with other arguments"
	case InternalError:
		return "the server failed; nothing internal is disclosed"
	case UnknownTool:
		return "no tool of that name"
	case WAFBlocked:
		return "the web application firewall refused the request before it reached the server (recorded from its log)"
	case HumanConfirmationRequired:
		return "the workspace requires a person to confirm destructive calls, and this client cannot ask one (form elicitation, 2026-07-28)"
	case ConfirmationInvalid:
		return "the confirmation state is tampered, expired, replayed, or bound to other arguments, another principal or an older item version"
	case ConfirmationDeclined:
		return "the person declined or cancelled the confirmation, or typed the wrong value"
	}
	return ""
}

// Error is the error value used everywhere a caller-visible failure is produced.
type Error struct {
	Code    Code
	Message string
	// RetryAfter is set for rate_limited.
	RetryAfter time.Duration
	// Scopes lists the scopes the call needs, for insufficient_scope.
	Scopes []string
	// cause is kept for logs only; it never reaches a client.
	cause error
}

func (e *Error) Error() string {
	if e.cause != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.cause)
	}
	return string(e.Code) + ": " + e.Message
}

func (e *Error) Unwrap() error { return e.cause }

// New returns an error with the given code and message.
func New(code Code, msg string) *Error { return &Error{Code: code, Message: msg} }

// Newf is New with formatting.
func Newf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap keeps cause for logging while presenting code and msg to the caller.
func Wrap(code Code, msg string, cause error) *Error {
	return &Error{Code: code, Message: msg, cause: cause}
}

// Internal wraps an unexpected failure. The message is fixed so that no internal
// detail (SQL, AWS error text, file paths) can leak to a client.
func Internal(cause error) *Error {
	return &Error{Code: InternalError, Message: "internal error", cause: cause}
}

// As returns err as *Error; anything that is not one becomes internal_error.
func As(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return Internal(err)
}

// CodeOf returns the code of err ("" for nil, internal_error for foreign errors).
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	return As(err).Code
}

// Is reports whether err carries code.
func Is(err error, code Code) bool { return err != nil && CodeOf(err) == code }

// Body is the wire shape of every error: REST bodies and MCP error results.
type Body struct {
	Error             string   `json:"error"`
	Code              Code     `json:"code"`
	RetryAfterSeconds int      `json:"retry_after_seconds,omitempty"`
	RequiredScopes    []string `json:"required_scopes,omitempty"`
}

// Body returns the public representation of e.
func (e *Error) Body() Body {
	b := Body{Error: e.Message, Code: e.Code, RequiredScopes: e.Scopes}
	if e.RetryAfter > 0 {
		b.RetryAfterSeconds = int((e.RetryAfter + time.Second - 1) / time.Second)
	}
	return b
}
