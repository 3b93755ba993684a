package guard

import (
	"errors"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// storeCodes is the one place a storage error (shared/store) becomes an error a client
// sees: its code, and its message when the store gave no detail. The first row that
// errors.Is matches wins, so the specific ErrNonceUsed comes before ErrConflict.
var storeCodes = []struct {
	kind error
	code apperr.Code
	msg  string
}{
	// A replayed confirmation is refused as an invalid confirmation, not a conflict:
	// the person's answer was spent, and asking again is the way on.
	{store.ErrNonceUsed, apperr.ConfirmationInvalid, "this confirmation was already used"},
	{store.ErrNotFound, apperr.NotFound, "not found"},
	{store.ErrAlreadyExists, apperr.Conflict, "already exists"},
	{store.ErrVersionMismatch, apperr.Conflict, "the item has changed; read it again and retry"},
	{store.ErrConflict, apperr.Conflict, "the item is being changed by another call; retry"},
	{store.ErrInvalid, apperr.InvalidArguments, "invalid arguments"},
}

// errorOf is the client's view of err, returned by a tool handler or the store. An
// apperr value (a handler's own decision) passes as it is; a storage error takes its
// row of storeCodes, with the store's detail, which names the item or rule and holds
// nothing of the backend; anything else is internal_error, its text kept for logs.
func errorOf(err error) *apperr.Error {
	if err == nil {
		return nil
	}
	var ae *apperr.Error
	if errors.As(err, &ae) {
		return ae
	}
	for _, row := range storeCodes {
		if !errors.Is(err, row.kind) {
			continue
		}
		msg := row.msg
		var se *store.Error
		if errors.As(err, &se) && se.Detail != "" {
			msg = se.Detail
		}
		return apperr.Wrap(row.code, msg, err)
	}
	return apperr.Internal(err)
}
