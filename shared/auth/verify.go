package auth

import (
	"context"
	"crypto/subtle"
	"errors"
	"github.com/aacworkflow/aacmcp/shared/store"
	"slices"
	"time"

	"github.com/aacworkflow/aacmcp/shared/apperr"
)

// Verifier turns a secret into a Principal. It is the code the Lambda authorizer and
// the local server share.
type Verifier struct {
	Store TokenStore
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

func (v *Verifier) now() time.Time {
	if v.Now != nil {
		return v.Now()
	}
	return time.Now()
}

// Verify checks format, looks the hash up, compares it in constant time, and checks
// revocation and expiry. Token failures are invalid_token with PublicMessage (the
// reason via RejectReason); a store failure is passed on as internal_error, so an
// outage is not reported to clients as a bad token.
func (v *Verifier) Verify(ctx context.Context, secret string) (Principal, error) {
	p, _, err := v.verify(ctx, secret)
	return p, err
}

// verify also returns the record's expiry, which bounds how long a cache may keep the
// answer.
func (v *Verifier) verify(ctx context.Context, secret string) (Principal, time.Time, error) {
	if !ValidFormat(secret) {
		return Principal{}, time.Time{}, reject(ReasonMalformed, "")
	}
	h := Hash(secret)
	rec, err := v.Store.GetTokenByHash(ctx, h)
	if errors.Is(err, store.ErrNotFound) {
		return Principal{}, time.Time{}, reject(ReasonUnknown, "")
	}
	if err != nil {
		return Principal{}, time.Time{}, apperr.Internal(err)
	}
	// The lookup already matched on the hash; comparing again in constant time keeps
	// the decision independent of how a backend compares keys.
	if subtle.ConstantTimeCompare([]byte(rec.Hash), []byte(h)) != 1 {
		return Principal{}, time.Time{}, reject(ReasonUnknown, "")
	}
	if rec.RevokedAt != nil {
		return Principal{}, time.Time{}, rejectFound(ReasonRevoked, rec)
	}
	// A zero expiry is expired: every token must carry one (fail closed).
	if !v.now().Before(rec.ExpiresAt) {
		return Principal{}, time.Time{}, rejectFound(ReasonExpired, rec)
	}
	if rec.WorkspaceID == "" || rec.UserID == "" || rec.TokenID == "" {
		return Principal{}, time.Time{}, apperr.Internal(errors.New("token record " + rec.TokenID + " lacks workspace, user or id"))
	}
	return Principal{
		WorkspaceID: rec.WorkspaceID,
		UserID:      rec.UserID,
		TokenID:     rec.TokenID,
		Scopes:      slices.Clone(rec.Scopes),
		ClientID:    rec.ClientID,
		ExpiresAt:   rec.ExpiresAt,
	}, rec.ExpiresAt, nil
}
