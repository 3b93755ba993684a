package auth

import (
	"errors"

	"github.com/aacworkflow/aacmcp/shared/apperr"
)

// PublicMessage is the one message every rejected token gets, whatever the reason:
// telling "unknown" from "revoked" would let a caller probe which secrets exist.
const PublicMessage = "the bearer token is missing, invalid, expired or revoked"

// Reason says why a token was rejected. It is for logs and audit only, never for clients.
type Reason string

const (
	ReasonMissing   Reason = "missing"
	ReasonMalformed Reason = "malformed"
	ReasonUnknown   Reason = "unknown"
	ReasonExpired   Reason = "expired"
	ReasonRevoked   Reason = "revoked"
)

// RejectError is the cause inside an invalid_token error. It never holds the secret.
type RejectError struct {
	Reason  Reason
	TokenID string // set when the token was found (expired, revoked)
	// ClientID is the OAuth client of a found token ("" for a personal token): a
	// refused call still says which client made it.
	ClientID string
}

func (e *RejectError) Error() string {
	if e.TokenID != "" {
		return "token rejected: " + string(e.Reason) + " (" + e.TokenID + ")"
	}
	return "token rejected: " + string(e.Reason)
}

func reject(r Reason, tokenID string) error {
	return apperr.Wrap(apperr.InvalidToken, PublicMessage, &RejectError{Reason: r, TokenID: tokenID})
}

// rejectFound refuses a token that was found: its ids go with the refusal.
func rejectFound(r Reason, rec TokenRecord) error {
	return apperr.Wrap(apperr.InvalidToken, PublicMessage, &RejectError{Reason: r, TokenID: rec.TokenID, ClientID: rec.ClientID})
}

// RejectReason returns why err rejected a token, or "" when err is not a token
// rejection (nil, or a store failure, which is internal_error and not the caller's fault).
func RejectReason(err error) Reason {
	var re *RejectError
	if errors.As(err, &re) {
		return re.Reason
	}
	return ""
}
