package store

import (
	"context"
	"slices"
	"time"
)

// The OAuth 2.1 authorization server (shared/oauth) keeps its state behind OAuthStore.
// Every secret it hands out (authorization codes, refresh tokens, client secrets,
// browser-binding cookies, CSRF tokens) is stored only as its hex SHA-256, like
// personal tokens; access tokens are auth.TokenRecord rows in the tokens table, so
// the verifier and the Lambda authorizer accept them with no second code path.
//
// Every record carries an expiry. A backend may drop expired records at any time
// (DynamoDB TTL, SQLite sweeps); a reader must treat an expired record as absent,
// and the methods below do so: they report not_found for it.

// OAuthClient is a client registered through Dynamic Client Registration (RFC 7591).
// Clients identified by a Client ID Metadata Document are not stored: their document
// is fetched and cached (shared/oauth/clientmeta).
type OAuthClient struct {
	ClientID string `json:"client_id"`
	// SecretHash is the hex SHA-256 of the client secret; "" for a public client
	// (token_endpoint_auth_method "none").
	SecretHash              string    `json:"-"`
	Name                    string    `json:"client_name"`
	RedirectURIs            []string  `json:"redirect_uris"`
	ApplicationType         string    `json:"application_type"`           // "web" or "native"
	TokenEndpointAuthMethod string    `json:"token_endpoint_auth_method"` // none, client_secret_post, client_secret_basic, private_key_jwt
	GrantTypes              []string  `json:"grant_types"`
	ClientURI               string    `json:"client_uri,omitempty"`
	SourceIP                string    `json:"source_ip,omitempty"` // who registered it, for the audit trail
	CreatedAt               time.Time `json:"created_at"`
	// LastUsedAt moves on every authorization and token request; a registration
	// unused for OAuthClientLapse is treated as unknown.
	LastUsedAt time.Time `json:"last_used_at"`

	// JWKSURI or JWKS (a JSON Web Key Set) holds a private_key_jwt client's public
	// keys; SigningAlg is the one algorithm it signs with ("" for any allowed).
	JWKSURI    string `json:"jwks_uri,omitempty"`
	JWKS       string `json:"jwks,omitempty"`
	SigningAlg string `json:"token_endpoint_auth_signing_alg,omitempty"`
}

// OAuthClientLapse is how long a registration may go unused before it lapses.
const OAuthClientLapse = 90 * 24 * time.Hour

// OAuthAccount is one AACWorkflow identity a signed-in person may act as: a member
// record. A person found by e-mail may hold several (one per workspace).
type OAuthAccount struct {
	WorkspaceID string `json:"workspace_id"`
	UserID      string `json:"user_id"`
	Role        Role   `json:"role"`
}

// OAuthPending is an authorization request between GET /oauth/authorize and the
// person's answer on the consent page, or a sign-in to the grants page.
type OAuthPending struct {
	ID string `json:"id"` // random; names the request in URLs
	// Purpose is "authorize" (ends in a code) or "grants" (ends in a session).
	Purpose string `json:"purpose"`
	// BrowserHash is the SHA-256 of a cookie set on the browser that started the
	// request: a link to someone else's pending request is useless without it.
	BrowserHash string `json:"-"`
	// CSRFHash is the SHA-256 of the token embedded in the form the server rendered.
	CSRFHash string `json:"-"`

	ClientID      string   `json:"client_id"`
	ClientName    string   `json:"client_name"`
	RedirectURI   string   `json:"redirect_uri"`
	State         string   `json:"state"`
	CodeChallenge string   `json:"code_challenge"` // S256 only
	Resource      string   `json:"resource"`
	Scopes        []string `json:"scopes"` // requested; empty: the person chooses

	// The upstream OpenID Connect leg (empty under the dev sign-in).
	UpstreamNonce    string `json:"-"`
	UpstreamVerifier string `json:"-"`

	// Set once the person has signed in.
	Subject  string         `json:"subject,omitempty"` // "<issuer> <sub>" or "dev:<user>"
	Email    string         `json:"email,omitempty"`
	Accounts []OAuthAccount `json:"accounts,omitempty"`

	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
}

// OAuthCode is an authorization code: single use, short-lived, bound to everything
// the token request must repeat.
type OAuthCode struct {
	Hash          string    `json:"-"`
	GrantID       string    `json:"grant_id"` // the grant the consent created
	ClientID      string    `json:"client_id"`
	RedirectURI   string    `json:"redirect_uri"`
	CodeChallenge string    `json:"code_challenge"`
	Resource      string    `json:"resource"`
	Scopes        []string  `json:"scopes"`
	WorkspaceID   string    `json:"workspace_id"`
	UserID        string    `json:"user_id"`
	CreatedAt     time.Time `json:"created_at"`
	ExpiresAt     time.Time `json:"expires_at"`
	// UsedAt is set by the first redemption; a second one finds it set.
	UsedAt *time.Time `json:"used_at,omitempty"`
}

// OAuthGrant is what a person allowed one client in one workspace: the scopes, and
// the refresh token that carries them forward. Revoking it ends its refresh token at
// once and its access tokens within the verifier's cache bound.
type OAuthGrant struct {
	ID          string   `json:"grant_id"`
	ClientID    string   `json:"client_id"`
	ClientName  string   `json:"client_name"`
	WorkspaceID string   `json:"workspace_id"`
	UserID      string   `json:"user_id"`
	Scopes      []string `json:"scopes"`
	Resource    string   `json:"resource"`
	// RefreshHash is the hex SHA-256 of the one refresh token that is current; ""
	// before the code is redeemed.
	RefreshHash string `json:"-"`
	// AccessTokenIDs are the token ids of access tokens issued under the grant that
	// may still be live, so a revocation can reach them.
	AccessTokenIDs []string   `json:"access_token_ids"`
	CreatedAt      time.Time  `json:"created_at"`
	LastUsedAt     time.Time  `json:"last_used_at"`
	ExpiresAt      time.Time  `json:"expires_at"`
	RevokedAt      *time.Time `json:"revoked_at,omitempty"`
}

// UseTimes returns a new client's or grant's CreatedAt and LastUsedAt, in UTC:
// CreatedAt defaults to now, and LastUsedAt to CreatedAt (a record is used when it
// is made).
func UseTimes(now, createdAt, lastUsedAt time.Time) (time.Time, time.Time) {
	if createdAt.IsZero() {
		createdAt = now
	}
	if lastUsedAt.IsZero() {
		lastUsedAt = createdAt
	}
	return createdAt.UTC(), lastUsedAt.UTC()
}

// OAuthRotation is one refresh: the current refresh token is replaced, the access
// token issued with it recorded, and the scopes possibly narrowed.
type OAuthRotation struct {
	GrantID        string
	OldRefreshHash string // must be the grant's current one ("" for the code redemption)
	NewRefreshHash string
	Scopes         []string // the grant's scopes after the rotation (never wider)
	AccessTokenID  string
	// DropTokenIDs are access token ids known to be expired, pruned from the grant.
	DropTokenIDs []string
	At           time.Time
	ExpiresAt    time.Time // the grant's new expiry
}

// Check refuses a rotation that names no grant or no new refresh hash, or that
// keeps the refresh hash it replaces.
func (r OAuthRotation) Check() error {
	if r.GrantID == "" || r.NewRefreshHash == "" {
		return Invalid("rotation needs a grant id and a new refresh hash")
	}
	if r.NewRefreshHash == r.OldRefreshHash {
		return Invalid("rotation must change the refresh hash")
	}
	return nil
}

// Apply returns g as the rotation leaves it, or conflict when g is revoked or
// r.OldRefreshHash is no longer its current hash. Every backend applies a rotation
// through it, inside its own atomic check-and-write: empty r.Scopes keeps the
// grant's scopes, a zero r.ExpiresAt its expiry, and an empty r.AccessTokenID adds
// no token. g's slices are not modified.
func (r OAuthRotation) Apply(g OAuthGrant) (OAuthGrant, error) {
	if g.RevokedAt != nil {
		return OAuthGrant{}, Errorf(ErrConflict, "grant is revoked")
	}
	if g.RefreshHash != r.OldRefreshHash {
		return OAuthGrant{}, Errorf(ErrConflict, "refresh token is no longer current")
	}
	if len(r.Scopes) > 0 {
		g.Scopes = slices.Clone(r.Scopes)
	}
	g.AccessTokenIDs = slices.DeleteFunc(slices.Clone(g.AccessTokenIDs), func(id string) bool {
		return slices.Contains(r.DropTokenIDs, id) || id == r.AccessTokenID
	})
	if r.AccessTokenID != "" {
		g.AccessTokenIDs = append(g.AccessTokenIDs, r.AccessTokenID)
	}
	if !r.ExpiresAt.IsZero() {
		g.ExpiresAt = r.ExpiresAt.UTC()
	}
	g.RefreshHash, g.LastUsedAt = r.NewRefreshHash, r.At
	return g, nil
}

// OAuthPolicy says which clients may connect. Mode "any" (the default) lets every
// client in; "allowlist" only the client ids in Allowed (metadata-document URLs or
// registered client ids).
type OAuthPolicy struct {
	Mode    string   `json:"mode"`
	Allowed []string `json:"allowed"`
}

// OAuth policy modes.
const (
	OAuthPolicyAny       = "any"
	OAuthPolicyAllowlist = "allowlist"
)

// OAuthStore is the authorization server's persistence. Errors are the storage errors:
// ErrNotFound for an unknown or expired record, ErrAlreadyExists for a taken id or
// hash, ErrConflict for a failed condition.
type OAuthStore interface {
	CreateOAuthClient(ctx context.Context, c OAuthClient) error
	GetOAuthClient(ctx context.Context, clientID string) (OAuthClient, error)
	// UpdateOAuthClientUsed moves LastUsedAt forward (never back).
	UpdateOAuthClientUsed(ctx context.Context, clientID string, at time.Time) error
	DeleteOAuthClient(ctx context.Context, clientID string) error
	ListOAuthClients(ctx context.Context) ([]OAuthClient, error)

	CreateOAuthPending(ctx context.Context, p OAuthPending) error
	GetOAuthPending(ctx context.Context, id string) (OAuthPending, error)
	// UpdateOAuthPending replaces the pending request, only while it exists and is
	// unexpired (not_found otherwise).
	UpdateOAuthPending(ctx context.Context, p OAuthPending) error
	// DeleteOAuthPending consumes it: exactly one of several concurrent callers gets
	// nil, the others not_found. This is what makes a consent form single-use.
	DeleteOAuthPending(ctx context.Context, id string) error

	CreateOAuthCode(ctx context.Context, c OAuthCode) error
	// ConsumeOAuthCode marks the code used at `at` and returns it as it was before:
	// UsedAt nil for the first redemption, set for every later one (the caller then
	// revokes the grant). An unknown or expired code is not_found.
	ConsumeOAuthCode(ctx context.Context, hash string, at time.Time) (OAuthCode, error)

	// CreateOAuthAssertion records a client assertion (RFC 7523) as used until
	// expiresAt: hash is the hex SHA-256 of its issuer and jti. A live record with
	// that hash is conflict (ErrAlreadyExists): the assertion is replayed.
	CreateOAuthAssertion(ctx context.Context, hash string, expiresAt time.Time) error

	CreateOAuthGrant(ctx context.Context, g OAuthGrant) error
	GetOAuthGrant(ctx context.Context, id string) (OAuthGrant, error)
	// GetOAuthGrantByRefresh finds the grant a refresh token belongs to. current is
	// false for a token the grant has rotated away from: its reuse is a theft signal.
	GetOAuthGrantByRefresh(ctx context.Context, refreshHash string) (g OAuthGrant, current bool, err error)
	// UpdateOAuthGrantRotate applies r in one conditional write: conflict when the
	// grant is revoked or its current refresh hash is not r.OldRefreshHash (another
	// refresh won the race). The old hash stays findable as rotated.
	UpdateOAuthGrantRotate(ctx context.Context, r OAuthRotation) (OAuthGrant, error)
	// UpdateOAuthGrantRevoked marks the grant revoked (the first time is kept).
	UpdateOAuthGrantRevoked(ctx context.Context, id string, at time.Time) (OAuthGrant, error)
	// ListOAuthGrants lists grants newest first; ws and user "" match any.
	ListOAuthGrants(ctx context.Context, ws, user string) ([]OAuthGrant, error)

	GetOAuthPolicy(ctx context.Context) (OAuthPolicy, error) // Mode "any" when never set
	UpdateOAuthPolicy(ctx context.Context, p OAuthPolicy) error

	// ListMembersByEmail finds every member record with this e-mail (compared
	// case-insensitively), across workspaces.
	ListMembersByEmail(ctx context.Context, email string) ([]Member, error)
	// ListMembersOfUser lists the member records of one user id, across workspaces.
	ListMembersOfUser(ctx context.Context, user string) ([]Member, error)
	// ListMembers lists the members of one workspace.
	ListMembers(ctx context.Context, ws string) ([]Member, error)
}
