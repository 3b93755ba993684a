package guard

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// TestErrorOf holds the one mapping from storage errors to the error contract: the
// code of each kind, the store's detail as the message (the bytes clients saw when
// the stores built apperr values themselves), a fixed message for a bare sentinel,
// and nothing of any other error.
func TestErrorOf(t *testing.T) {
	own := apperr.New(apperr.PermissionDenied, "only a workspace admin can")
	tests := []struct {
		name     string
		err      error
		wantCode apperr.Code
		wantMsg  string
	}{
		{"nil", nil, "", ""},
		{"a handler's own decision", own, apperr.PermissionDenied, own.Message},
		{"a handler's decision, wrapped", fmt.Errorf("delete: %w", own), apperr.PermissionDenied, own.Message},
		{"not found", store.NotFound("issue"), apperr.NotFound, "issue not found"},
		{"not found with context", fmt.Errorf("sqlite GetIssue: %w", store.NotFound("issue")), apperr.NotFound, "issue not found"},
		{"bare not found", store.ErrNotFound, apperr.NotFound, "not found"},
		{"bare not found with context", fmt.Errorf("lookup x: %w", store.ErrNotFound), apperr.NotFound, "not found"},
		{"already exists", store.Errorf(store.ErrAlreadyExists, "comment id already used"), apperr.Conflict, "comment id already used"},
		{"version mismatch", store.Errorf(store.ErrVersionMismatch, "issue %s is at version %d, not %d; read it again and retry", "AAC-1", 2, 1),
			apperr.Conflict, "issue AAC-1 is at version 2, not 1; read it again and retry"},
		{"conflict", store.Errorf(store.ErrConflict, "issue is being updated concurrently; retry"), apperr.Conflict, "issue is being updated concurrently; retry"},
		{"invalid", store.Invalid("cursor is malformed; use next_cursor from a previous page"), apperr.InvalidArguments,
			"cursor is malformed; use next_cursor from a previous page"},
		{"replayed confirmation", store.ErrNonceUsed, apperr.ConfirmationInvalid, "this confirmation was already used"},
		{"replayed confirmation with context", fmt.Errorf("dynamo ConsumeConfirmationNonce: %w", store.ErrNonceUsed),
			apperr.ConfirmationInvalid, "this confirmation was already used"},
		{"detail with a backend cause", store.Wrap(store.ErrConflict, "grant is revoked", errors.New("ConditionalCheckFailed: SECRET")),
			apperr.Conflict, "grant is revoked"},
		{"a backend failure", errors.New("sqlite: database is locked SELECT * FROM issues"), apperr.InternalError, "internal error"},
		{"a cancelled call", context.Canceled, apperr.InternalError, "internal error"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := errorOf(tc.err)
			if tc.err == nil {
				if got != nil {
					t.Fatalf("errorOf(nil) = %v", got)
				}
				return
			}
			if got.Code != tc.wantCode || got.Message != tc.wantMsg {
				t.Errorf("errorOf(%v) = %s %q, want %s %q", tc.err, got.Code, got.Message, tc.wantCode, tc.wantMsg)
			}
			if got.Body().Error != tc.wantMsg {
				t.Errorf("body message %q, want %q", got.Body().Error, tc.wantMsg)
			}
		})
	}
}

// TestErrorOfCoversEveryKind: a storage error kind without a row would reach clients
// as internal_error; every kind must have its own row.
func TestErrorOfCoversEveryKind(t *testing.T) {
	for _, k := range store.Kinds {
		matched := 0
		for _, row := range storeCodes {
			if row.kind == k {
				matched++
			}
		}
		if matched != 1 {
			t.Errorf("storage error %v has %d rows in storeCodes, want 1", k, matched)
		}
		if c := errorOf(k).Code; c == apperr.InternalError {
			t.Errorf("storage error %v maps to internal_error", k)
		}
	}
}
