package auth

import (
	"context"
	"slices"
	"time"

	"github.com/aacworkflow/aacmcp/shared/apperr"
)

// MaxTokenTTL is the longest lifetime a token may be issued with.
const MaxTokenTTL = 366 * 24 * time.Hour

// TokenRequest describes a token to issue.
type TokenRequest struct {
	WorkspaceID string
	UserID      string
	Name        string
	Scopes      []string
	TTL         time.Duration
}

// IssueToken mints a secret, stores its record and returns both. The secret exists
// only in the return value: show it once. Scopes are validated against AllScopes and
// stored sorted and deduplicated.
func IssueToken(ctx context.Context, ts TokenStore, req TokenRequest, now time.Time) (secret string, rec TokenRecord, err error) {
	switch {
	case req.WorkspaceID == "":
		return "", TokenRecord{}, apperr.New(apperr.InvalidArguments, "workspace is required")
	case req.UserID == "":
		return "", TokenRecord{}, apperr.New(apperr.InvalidArguments, "user is required")
	case req.TTL <= 0 || req.TTL > MaxTokenTTL:
		return "", TokenRecord{}, apperr.Newf(apperr.InvalidArguments, "ttl must be positive and at most %s", MaxTokenTTL)
	}
	scopes := slices.Compact(slices.Sorted(slices.Values(req.Scopes)))
	if len(scopes) == 0 {
		return "", TokenRecord{}, apperr.New(apperr.InvalidArguments, "at least one scope is required")
	}
	for _, s := range scopes {
		if !slices.Contains(AllScopes, s) {
			return "", TokenRecord{}, apperr.Newf(apperr.InvalidArguments, "unknown scope %q", s)
		}
	}
	secret, hash, err := Mint()
	if err != nil {
		return "", TokenRecord{}, err
	}
	now = now.UTC()
	rec = TokenRecord{
		Hash:        hash,
		TokenID:     NewTokenID(),
		Name:        req.Name,
		WorkspaceID: req.WorkspaceID,
		UserID:      req.UserID,
		Scopes:      scopes,
		CreatedAt:   now,
		ExpiresAt:   now.Add(req.TTL),
	}
	if err := ts.CreateToken(ctx, rec); err != nil {
		return "", TokenRecord{}, err
	}
	return secret, rec, nil
}
