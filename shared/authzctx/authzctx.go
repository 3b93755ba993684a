// Package authzctx names the keys of the context the Lambda REQUEST authorizer
// returns to API Gateway, which API Gateway hands to the MCP function in the proxy
// event's request context. Both functions read the names from here, so neither
// imports the other's package.
package authzctx

// Keys of the authorizer context. Values are strings: API Gateway's context map
// cannot carry arrays or nested objects.
const (
	WorkspaceID = "workspace_id"
	UserID      = "user_id"
	TokenID     = "token_id"
	Scopes      = "scopes"    // space-separated
	ClientID    = "client_id" // the OAuth client; "" for a personal token
	// ExpiresAt is the token's expiry in Unix seconds (a decimal string, rounded
	// down). API Gateway caches the authorizer's answer per token for its TTL: the
	// function refuses a cached answer past the token's own expiry with it.
	ExpiresAt = "expires_at"
)
