package apperr

import (
	"net/http"
	"testing"
)

// TestTable holds each code's transport and audit facts to the contract of
// docs/architecture.md sections 6 and 7, written out here independently of Table.
func TestTable(t *testing.T) {
	tests := []struct {
		code    Code
		status  int
		outcome Outcome
		rpc     int
	}{
		{"", http.StatusInternalServerError, OutcomeSuccess, RPCInternalError},
		{InvalidToken, http.StatusUnauthorized, OutcomeDenied, RPCUnauthorized},
		{InsufficientScope, http.StatusForbidden, OutcomeDenied, RPCForbidden},
		{DestructiveFlagMissing, http.StatusBadRequest, OutcomeDenied, RPCInternalError},
		{PermissionDenied, http.StatusForbidden, OutcomeDenied, RPCInternalError},
		{RateLimited, http.StatusTooManyRequests, OutcomeDenied, RPCInternalError},
		{InvalidArguments, http.StatusBadRequest, OutcomeError, RPCInternalError},
		{NotFound, http.StatusNotFound, OutcomeError, RPCInternalError},
		{Conflict, http.StatusConflict, OutcomeError, RPCInternalError},
		{InternalError, http.StatusInternalServerError, OutcomeError, RPCInternalError},
		{UnknownTool, http.StatusNotFound, OutcomeError, RPCInvalidParams},
		{WAFBlocked, http.StatusForbidden, OutcomeDenied, RPCInternalError},
		{HumanConfirmationRequired, http.StatusForbidden, OutcomeDenied, RPCInternalError},
		{ConfirmationInvalid, http.StatusForbidden, OutcomeDenied, RPCInternalError},
		{ConfirmationDeclined, http.StatusForbidden, OutcomeDenied, RPCInternalError},
		{"no_such_code", http.StatusInternalServerError, OutcomeError, RPCInternalError},
	}
	for _, tt := range tests {
		t.Run(string(tt.code), func(t *testing.T) {
			if got := tt.code.HTTPStatus(); got != tt.status {
				t.Errorf("HTTPStatus = %d, want %d", got, tt.status)
			}
			if got := tt.code.Outcome(); got != tt.outcome {
				t.Errorf("Outcome = %q, want %q", got, tt.outcome)
			}
			if got := tt.code.RPCCode(); got != tt.rpc {
				t.Errorf("RPCCode = %d, want %d", got, tt.rpc)
			}
		})
	}
}

// TestTableRows checks that every row is complete and every code appears once.
func TestTableRows(t *testing.T) {
	seen := map[Code]bool{}
	for _, s := range Table {
		if seen[s.Code] {
			t.Errorf("%s appears twice", s.Code)
		}
		seen[s.Code] = true
		if s.Code == "" || s.HTTPStatus == 0 || s.Outcome == "" || s.MCPForm == "" || s.Meaning == "" {
			t.Errorf("incomplete row %+v", s)
		}
		if s.Outcome == OutcomeSuccess {
			t.Errorf("%s: an error code cannot be a success", s.Code)
		}
	}
	if len(Codes) != len(Table) {
		t.Errorf("Codes has %d entries, Table %d", len(Codes), len(Table))
	}
}
