// Package auth turns bearer tokens into principals.
//
// The same Verifier runs in the Lambda authorizer (against the DynamoDB tokens table)
// and in the local server (against SQLite), so a token behaves the same everywhere.
// Only the SHA-256 of a secret is ever stored; the secret is shown once at creation.
package auth

import (
	"context"
	"slices"
	"strings"
	"time"
)

// Principal is who is calling: resolved from a token, never from request arguments.
type Principal struct {
	WorkspaceID string   `json:"workspace_id"`
	UserID      string   `json:"user_id"`
	TokenID     string   `json:"token_id"`
	Scopes      []string `json:"scopes"`
	// ClientID is the OAuth client the token was issued to; "" for a personal token.
	ClientID string `json:"client_id,omitempty"`
	// ExpiresAt is the token's own expiry, so a cached answer (the API Gateway
	// authorizer cache, CachedVerifier) is never honoured past it.
	ExpiresAt time.Time `json:"-"`
}

// Has reports whether every scope in required is held. Scopes imply nothing:
// issues:write does not grant issues:read.
func (p Principal) Has(required ...string) bool {
	for _, s := range required {
		if !slices.Contains(p.Scopes, s) {
			return false
		}
	}
	return true
}

// ScopeString is the space-separated form used in authorizer context and OAuth.
func (p Principal) ScopeString() string { return strings.Join(p.Scopes, " ") }

// ParseScopes splits a space- or comma-separated scope list, dropping empties.
func ParseScopes(s string) []string {
	f := strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' })
	return slices.Compact(slices.Sorted(slices.Values(f)))
}

// Every scope a token can hold.
var AllScopes = []string{
	"issues:read", "issues:write",
	"comments:read", "comments:write",
	"dashboard:read", "agents:write", "autopilot:run",
}

// TokenRecord is what the tokens table holds for one token (never the secret).
type TokenRecord struct {
	Hash        string     `json:"-"` // hex SHA-256 of the secret: the lookup key
	TokenID     string     `json:"token_id"`
	Name        string     `json:"name"`
	WorkspaceID string     `json:"workspace_id"`
	UserID      string     `json:"user_id"`
	Scopes      []string   `json:"scopes"`
	CreatedAt   time.Time  `json:"created_at"`
	ExpiresAt   time.Time  `json:"expires_at"`
	RevokedAt   *time.Time `json:"revoked_at,omitempty"`
	// ClientID and GrantID are set on OAuth access tokens ("" on personal tokens).
	ClientID string `json:"client_id,omitempty"`
	GrantID  string `json:"grant_id,omitempty"`
}

// TokenStore persists token records. Backends: sqlite and dynamo.
type TokenStore interface {
	// CreateToken stores a new record; conflict if the hash or id exists.
	CreateToken(ctx context.Context, t TokenRecord) error
	// GetTokenByHash returns not_found when no token has that hash.
	GetTokenByHash(ctx context.Context, hash string) (TokenRecord, error)
	// ListTokens lists the tokens of a workspace ("" for all), newest first.
	ListTokens(ctx context.Context, ws string) ([]TokenRecord, error)
	// UpdateTokenRevoked marks the token revoked at the given time; not_found if the id
	// is unknown. Revoking a revoked token keeps the first time.
	UpdateTokenRevoked(ctx context.Context, tokenID string, at time.Time) (TokenRecord, error)
}
