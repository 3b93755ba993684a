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
	// HumanApprovalRequired belongs to the policy approve: the refusal carries the
	// link to aacmcp's approval page, where the person approves the call.
	HumanApprovalRequired Code = "human_approval_required"
	// WAFBlocked is never answered by the server: the web application firewall in
	// front of it refused the request, and the audit forwarder records that refusal
	// from the firewall's log.
	WAFBlocked Code = "waf_blocked"
)

// Outcome is the audit outcome of a tool call.
type Outcome string

const (
	OutcomeSuccess Outcome = "success"
	OutcomeDenied  Outcome = "denied"
	OutcomeError   Outcome = "error"
)

// JSON-RPC error codes of the /mcp answers that are protocol errors rather than tool
// results. -32001 and -32003 are server-defined (the -32000..-32099 range).
const (
	RPCInvalidParams = -32602
	RPCInternalError = -32603
	RPCUnauthorized  = -32001
	RPCForbidden     = -32003
)

// Spec is everything the transports, the audit log and the docs' error table know about a code.
// It is one row of Table, so that no fact about a code is decided in two places.
type Spec struct {
	Code Code
	// HTTPStatus is the REST status (and the /mcp HTTP status of a challenge).
	HTTPStatus int
	Outcome    Outcome
	// RPCCode is the JSON-RPC error code /mcp answers with; 0 means /mcp answers with a
	// tool result carrying isError: true (HTTP 200), which the model can act on.
	RPCCode int
	// MCPForm is the error table's wording of how /mcp carries the code.
	MCPForm string
	// Meaning is the one-line meaning, for the error table and `aacmcp tools`.
	Meaning string
	// Header is the HTTP header an answer with the code carries besides its body.
	Header Header
}

// Header names an HTTP header that goes with an error answer.
type Header int

const (
	HeaderNone Header = iota
	// HeaderBearerChallenge: WWW-Authenticate: Bearer resource_metadata=... (RFC 6750,
	// RFC 9728), with error="invalid_token" when a token was sent.
	HeaderBearerChallenge
	// HeaderScopeChallenge: WWW-Authenticate: Bearer error="insufficient_scope",
	// scope=... (RFC 6750 section 3.1).
	HeaderScopeChallenge
	// HeaderRetryAfter: Retry-After in whole seconds, at least 1 (RFC 9110).
	HeaderRetryAfter
)

const toolResult = "tool result with `isError: true`"

// Table lists every code once, in documentation order (docs/architecture.md section 7).
var Table = []Spec{
	{InvalidToken, http.StatusUnauthorized, OutcomeDenied, RPCUnauthorized,
		"HTTP 401 with `WWW-Authenticate: Bearer resource_metadata=...`",
		"the bearer token is missing, malformed, unknown, expired or revoked", HeaderBearerChallenge},
	{InsufficientScope, http.StatusForbidden, OutcomeDenied, RPCForbidden,
		"HTTP 403 with `WWW-Authenticate: Bearer error=\"insufficient_scope\", scope=...`, JSON-RPC error with `data.code`",
		"the token lacks a scope the tool requires", HeaderScopeChallenge},
	{DestructiveFlagMissing, http.StatusBadRequest, OutcomeDenied, 0, toolResult,
		"a destructive tool was called without the JSON boolean confirm: true", HeaderNone},
	{PermissionDenied, http.StatusForbidden, OutcomeDenied, 0, toolResult,
		"the user's role in the workspace does not allow the call", HeaderNone},
	{RateLimited, http.StatusTooManyRequests, OutcomeDenied, 0, toolResult,
		"too many calls for this token and tool; retry after retry_after_seconds", HeaderRetryAfter},
	{InvalidArguments, http.StatusBadRequest, OutcomeError, 0, toolResult,
		"the arguments do not match the tool's input schema", HeaderNone},
	{NotFound, http.StatusNotFound, OutcomeError, 0, toolResult,
		"no such item in the caller's workspace", HeaderNone},
	{Conflict, http.StatusConflict, OutcomeError, 0, toolResult,
		"expected_version is stale, or an idempotency key was reused with other arguments", HeaderNone},
	{InternalError, http.StatusInternalServerError, OutcomeError, 0, toolResult,
		"the server failed; nothing internal is disclosed", HeaderNone},
	{UnknownTool, http.StatusNotFound, OutcomeError, RPCInvalidParams,
		"JSON-RPC error -32602 with `data.code`",
		"no tool of that name", HeaderNone},
	{WAFBlocked, http.StatusForbidden, OutcomeDenied, 0,
		"HTTP 403 (or the firewall rule's own status) from the firewall; the server never sees the request",
		"the web application firewall refused the request before it reached the server (recorded from its log)", HeaderNone},
	{HumanConfirmationRequired, http.StatusForbidden, OutcomeDenied, 0, toolResult,
		"the workspace requires a person to confirm destructive calls, and this client cannot ask one (form elicitation, 2026-07-28)", HeaderNone},
	{ConfirmationInvalid, http.StatusForbidden, OutcomeDenied, 0, toolResult,
		"the confirmation state is tampered, expired, replayed, or bound to other arguments, another principal or an older item version", HeaderNone},
	{ConfirmationDeclined, http.StatusForbidden, OutcomeDenied, 0, toolResult,
		"the person declined or cancelled the confirmation, or typed the wrong value", HeaderNone},
	{HumanApprovalRequired, http.StatusForbidden, OutcomeDenied, 0, toolResult,
		"the workspace has a person approve destructive calls on aacmcp's page: the message carries the link; open it, approve, then make the same call again", HeaderNone},
}

// Codes lists every code in documentation order. A test keeps docs/architecture.md in step.
var Codes = func() []Code {
	cs := make([]Code, len(Table))
	for i, s := range Table {
		cs[i] = s.Code
	}
	return cs
}()

var specs = func() map[Code]Spec {
	m := make(map[Code]Spec, len(Table))
	for _, s := range Table {
		m[s.Code] = s
	}
	return m
}()

// unknownSpec answers for a code outside Table: the server failed.
var unknownSpec = Spec{HTTPStatus: http.StatusInternalServerError, Outcome: OutcomeError, RPCCode: RPCInternalError}

// Spec returns c's row of Table; a code outside it is treated as internal_error's
// transport facts with an empty meaning.
func (c Code) Spec() Spec {
	if s, ok := specs[c]; ok {
		return s
	}
	s := unknownSpec
	s.Code = c
	return s
}

// HTTPStatus is the status the REST transport answers with (docs/architecture.md section 7).
func (c Code) HTTPStatus() int { return c.Spec().HTTPStatus }

// Outcome maps a code to the audit outcome: authorization decisions are "denied",
// everything else that failed is "error", and no code at all is "success".
func (c Code) Outcome() Outcome {
	if c == "" {
		return OutcomeSuccess
	}
	return c.Spec().Outcome
}

// RPCCode is the JSON-RPC error code /mcp answers c with when it is a protocol error;
// codes that /mcp carries as tool results answer RPCInternalError here, for callers
// that must send a JSON-RPC error anyway.
func (c Code) RPCCode() int {
	if s := c.Spec(); s.RPCCode != 0 {
		return s.RPCCode
	}
	return RPCInternalError
}

// Describe is the one-line meaning of each code, used by the error table and `aacmcp tools`.
func (c Code) Describe() string { return c.Spec().Meaning }

// Error is the error value used everywhere a caller-visible failure is produced.
type Error struct {
	Code    Code
	Message string
	// RetryAfter is set for rate_limited.
	RetryAfter time.Duration
	// Scopes lists the scopes the call needs, for insufficient_scope.
	Scopes []string
	// Preview names what a destructive call would delete, on its
	// destructive_flag_missing refusal to a caller who may read and delete it.
	Preview *Preview
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
	Preview           *Preview `json:"preview,omitempty"`
}

// Preview is the item a destructive call would delete, so that a host can ask its
// user about the real item before it sends confirm: true. Title is plain text,
// control characters stripped and capped. Key is the key (for a comment,
// its issue's, when the caller may read issues). CommentCount is set for an
// issue only: deleting one deletes its comments.
type Preview struct {
	Kind         string `json:"kind"`
	ID           string `json:"id"`
	Key          string `json:"key,omitempty"`
	Title        string `json:"title"`
	CommentCount *int64 `json:"comment_count,omitempty"`
}

// Body returns the public representation of e.
func (e *Error) Body() Body {
	b := Body{Error: e.Message, Code: e.Code, RequiredScopes: e.Scopes, Preview: e.Preview}
	if e.RetryAfter > 0 {
		b.RetryAfterSeconds = int((e.RetryAfter + time.Second - 1) / time.Second)
	}
	return b
}
