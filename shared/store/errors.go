package store

import (
	"errors"
	"fmt"
)

// The storage errors. Every backend returns them, alone or wrapped with context, for
// the failures a caller may act on; callers test them with errors.Is. They say what
// happened to the data, not what a client sees: the guard maps them to the error
// contract (shared/apperr) in one table, and the other callers (the OAuth server, the
// token verifier, the CLI) decide for themselves what a missing or taken item means.
// Any other error from a backend is a failure of the backend itself.
var (
	// ErrNotFound: no such item in the workspace (or it expired, or it belongs to
	// another workspace: the two are never told apart).
	ErrNotFound = errors.New("not found")
	// ErrAlreadyExists: a create named an id, key or secret that is taken.
	ErrAlreadyExists = errors.New("already exists")
	// ErrVersionMismatch: an update's expected version is not the stored one.
	ErrVersionMismatch = errors.New("version mismatch")
	// ErrConflict: the item is held or changed by another call (a claimed key, a
	// rotated refresh token, a concurrent write); reading it again tells what.
	ErrConflict = errors.New("conflict")
	// ErrInvalid: the request can never succeed as given (a malformed cursor, an id
	// that is no id, a date that is no date).
	ErrInvalid = errors.New("invalid")
)

// ErrNonceUsed is what ConsumeConfirmationNonce returns for a replay, this very value
// (errors.Is); it is an ErrConflict too.
var ErrNonceUsed error = &Error{Kind: ErrConflict, Detail: "this confirmation was already used"}

// Error is a storage error that names the item or the rule that failed ("issue not
// found", "cursor is malformed; ..."). Detail is written in the API's own terms and
// holds nothing of the backend (no SQL, no AWS text, no key layout), so a caller may
// show it; the backend's cause, if any, is kept for logs only. errors.Is(err, Kind)
// holds for an *Error and anything that wraps one.
type Error struct {
	Kind   error // one of the Err* sentinels above
	Detail string
	cause  error
}

func (e *Error) Error() string {
	if e.cause != nil {
		return e.Detail + ": " + e.cause.Error()
	}
	return e.Detail
}

// Unwrap returns the kind and the cause, so errors.Is finds either.
func (e *Error) Unwrap() []error {
	if e.cause != nil {
		return []error{e.Kind, e.cause}
	}
	return []error{e.Kind}
}

// Errorf returns an *Error of kind whose Detail is formatted.
func Errorf(kind error, format string, args ...any) error {
	return &Error{Kind: kind, Detail: fmt.Sprintf(format, args...)}
}

// Wrap returns an *Error of kind that keeps cause for logs.
func Wrap(kind error, detail string, cause error) error {
	return &Error{Kind: kind, Detail: detail, cause: cause}
}

// NotFound is the ErrNotFound of one kind of item: "issue not found".
func NotFound(what string) error { return Errorf(ErrNotFound, "%s not found", what) }

// Invalid is an ErrInvalid with a fixed detail.
func Invalid(detail string) error { return &Error{Kind: ErrInvalid, Detail: detail} }

// Kinds lists every storage error kind, for the code that must handle each (the
// guard's table has a test that it does).
var Kinds = []error{ErrNotFound, ErrAlreadyExists, ErrVersionMismatch, ErrConflict, ErrInvalid}

// IsStorage reports whether err is one of the storage errors above, so that a
// backend's error helper lets it pass unchanged rather than treat it as a failure of
// the backend.
func IsStorage(err error) bool {
	for _, k := range Kinds {
		if errors.Is(err, k) {
			return true
		}
	}
	return false
}
