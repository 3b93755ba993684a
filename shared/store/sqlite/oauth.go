package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aacworkflow/aacmcp/shared/store"
)

var _ store.OAuthStore = (*Store)(nil)

// Conventions of this file, beyond store.OAuthStore's comments:
//   - a Create* over a record that has expired (and is not yet purged) replaces it,
//     as it would on a backend whose TTL had already dropped the row; over a live
//     record it is conflict;
//   - list columns hold JSON arrays; lists come back non-nil;
//   - writes go through writeUncached: no table here is in the read cache (members
//     are written by UpdateMember, through write).

func stringsJSON(v []string) (string, error) {
	if v == nil {
		v = []string{}
	}
	b, err := json.Marshal(v)
	return string(b), err
}

func decodeStrings(col, s string) ([]string, error) {
	var v []string
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return nil, fmt.Errorf("sqlite: %s column: %w", col, err)
	}
	if v == nil {
		v = []string{}
	}
	return v, nil
}

// foldEmail is how e-mails are stored and looked up: Unicode lower case, by Go
// (SQLite's lower() only knows ASCII).
func foldEmail(e string) string { return strings.ToLower(e) }

// ---- clients ----

const clientCols = `client_id, secret_hash, name, redirect_uris, application_type,
	token_endpoint_auth_method, grant_types, client_uri, source_ip, created_at, last_used_at,
	jwks_uri, jwks, signing_alg`

func scanClient(r scanner) (store.OAuthClient, error) {
	var c store.OAuthClient
	var redirects, grants string
	var created, used int64
	if err := r.Scan(&c.ClientID, &c.SecretHash, &c.Name, &redirects, &c.ApplicationType,
		&c.TokenEndpointAuthMethod, &grants, &c.ClientURI, &c.SourceIP, &created, &used,
		&c.JWKSURI, &c.JWKS, &c.SigningAlg); err != nil {
		return store.OAuthClient{}, err
	}
	var err error
	if c.RedirectURIs, err = decodeStrings("redirect_uris", redirects); err != nil {
		return store.OAuthClient{}, err
	}
	if c.GrantTypes, err = decodeStrings("grant_types", grants); err != nil {
		return store.OAuthClient{}, err
	}
	c.CreatedAt, c.LastUsedAt = fromNanos(created), fromNanos(used)
	return c, nil
}

// lapseCutoff is the last_used_at at or before which a client has lapsed.
func (s *Store) lapseCutoff() int64 { return s.now().Add(-store.OAuthClientLapse).UnixNano() }

// CreateOAuthClient implements store.OAuthStore. LastUsedAt defaults to CreatedAt,
// which defaults to now.
func (s *Store) CreateOAuthClient(ctx context.Context, c store.OAuthClient) error {
	if c.ClientID == "" {
		return store.Invalid("client id is required")
	}
	c.CreatedAt, c.LastUsedAt = store.UseTimes(s.now(), c.CreatedAt, c.LastUsedAt)
	redirects, err := stringsJSON(c.RedirectURIs)
	if err != nil {
		return err
	}
	grants, err := stringsJSON(c.GrantTypes)
	if err != nil {
		return err
	}
	return s.writeUncached(ctx, func(x q) error {
		res, err := x.exec(`INSERT OR REPLACE INTO oauth_clients (`+clientCols+`)
			SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?
			WHERE NOT EXISTS (SELECT 1 FROM oauth_clients WHERE client_id = ? AND last_used_at > ?)`,
			c.ClientID, c.SecretHash, c.Name, redirects, c.ApplicationType, c.TokenEndpointAuthMethod, grants,
			c.ClientURI, c.SourceIP, nanos(c.CreatedAt), nanos(c.LastUsedAt), c.JWKSURI, c.JWKS, c.SigningAlg,
			c.ClientID, s.lapseCutoff())
		return oneOrConflict(res, err, "client")
	})
}

// oneOrConflict judges an INSERT OR REPLACE ... WHERE NOT EXISTS <a live record>:
// no row written means a live record holds the key.
func oneOrConflict(res sql.Result, err error, what string) error {
	if isUnique(err) {
		return store.Errorf(store.ErrAlreadyExists, "%s already exists", what)
	}
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return store.Errorf(store.ErrAlreadyExists, "%s already exists", what)
	}
	return nil
}

// GetOAuthClient implements store.OAuthStore; a lapsed client is not_found.
func (s *Store) GetOAuthClient(ctx context.Context, clientID string) (store.OAuthClient, error) {
	c, err := scanClient(s.read(ctx).queryRow(`SELECT `+clientCols+` FROM oauth_clients
		WHERE client_id = ? AND last_used_at > ?`, clientID, s.lapseCutoff()))
	if errors.Is(err, sql.ErrNoRows) {
		return store.OAuthClient{}, notFound("client")
	}
	if err != nil {
		return store.OAuthClient{}, s.fail(err)
	}
	return c, nil
}

// UpdateOAuthClientUsed implements store.OAuthStore.
func (s *Store) UpdateOAuthClientUsed(ctx context.Context, clientID string, at time.Time) error {
	at = s.orNow(at)
	return s.writeUncached(ctx, func(x q) error {
		return x.execOne("client", `UPDATE oauth_clients SET last_used_at = MAX(last_used_at, ?)
			WHERE client_id = ? AND last_used_at > ?`, nanos(at), clientID, s.lapseCutoff())
	})
}

// DeleteOAuthClient implements store.OAuthStore; an absent or lapsed client is
// not_found.
func (s *Store) DeleteOAuthClient(ctx context.Context, clientID string) error {
	return s.writeUncached(ctx, func(x q) error {
		return x.execOne("client", `DELETE FROM oauth_clients WHERE client_id = ? AND last_used_at > ?`,
			clientID, s.lapseCutoff())
	})
}

// ListOAuthClients implements store.OAuthStore: newest first, lapsed ones left out.
func (s *Store) ListOAuthClients(ctx context.Context) ([]store.OAuthClient, error) {
	return queryList(ctx, s, scanClient, `SELECT `+clientCols+` FROM oauth_clients WHERE last_used_at > ?
		ORDER BY created_at DESC, client_id DESC`, s.lapseCutoff())
}

// ---- pending authorizations ----

const pendingCols = `id, purpose, browser_hash, csrf_hash, client_id, client_name, redirect_uri, state,
	code_challenge, resource, scopes, upstream_nonce, upstream_verifier, subject, email, accounts,
	created_at, expires_at`

func scanPending(r scanner) (store.OAuthPending, error) {
	var p store.OAuthPending
	var scopes, accounts string
	var created, expires int64
	if err := r.Scan(&p.ID, &p.Purpose, &p.BrowserHash, &p.CSRFHash, &p.ClientID, &p.ClientName, &p.RedirectURI,
		&p.State, &p.CodeChallenge, &p.Resource, &scopes, &p.UpstreamNonce, &p.UpstreamVerifier, &p.Subject,
		&p.Email, &accounts, &created, &expires); err != nil {
		return store.OAuthPending{}, err
	}
	var err error
	if p.Scopes, err = decodeStrings("scopes", scopes); err != nil {
		return store.OAuthPending{}, err
	}
	if err := json.Unmarshal([]byte(accounts), &p.Accounts); err != nil {
		return store.OAuthPending{}, fmt.Errorf("sqlite: accounts column: %w", err)
	}
	if p.Accounts == nil {
		p.Accounts = []store.OAuthAccount{}
	}
	p.CreatedAt, p.ExpiresAt = fromNanos(created), fromNanos(expires)
	return p, nil
}

// pendingArgs returns the values of pendingCols after id, and validates p.
func (s *Store) pendingArgs(p *store.OAuthPending) ([]any, error) {
	if p.ID == "" {
		return nil, store.Invalid("pending authorization id is required")
	}
	if p.ExpiresAt.IsZero() {
		return nil, store.Invalid("pending authorization needs an expiry")
	}
	p.CreatedAt = s.orNow(p.CreatedAt)
	scopes, err := stringsJSON(p.Scopes)
	if err != nil {
		return nil, err
	}
	accounts := p.Accounts
	if accounts == nil {
		accounts = []store.OAuthAccount{}
	}
	acc, err := json.Marshal(accounts)
	if err != nil {
		return nil, err
	}
	return []any{p.Purpose, p.BrowserHash, p.CSRFHash, p.ClientID, p.ClientName, p.RedirectURI, p.State,
		p.CodeChallenge, p.Resource, scopes, p.UpstreamNonce, p.UpstreamVerifier, p.Subject, p.Email,
		string(acc), nanos(p.CreatedAt), nanos(p.ExpiresAt)}, nil
}

// CreateOAuthPending implements store.OAuthStore.
func (s *Store) CreateOAuthPending(ctx context.Context, p store.OAuthPending) error {
	args, err := s.pendingArgs(&p)
	if err != nil {
		return err
	}
	return s.writeUncached(ctx, func(x q) error {
		res, err := x.exec(`INSERT OR REPLACE INTO oauth_pending (`+pendingCols+`)
			SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?
			WHERE NOT EXISTS (SELECT 1 FROM oauth_pending WHERE id = ? AND expires_at > ?)`,
			append(append([]any{p.ID}, args...), p.ID, s.now().UnixNano())...)
		return oneOrConflict(res, err, "pending authorization")
	})
}

// GetOAuthPending implements store.OAuthStore.
func (s *Store) GetOAuthPending(ctx context.Context, id string) (store.OAuthPending, error) {
	p, err := scanPending(s.read(ctx).queryRow(`SELECT `+pendingCols+` FROM oauth_pending
		WHERE id = ? AND expires_at > ?`, id, s.now().UnixNano()))
	if errors.Is(err, sql.ErrNoRows) {
		return store.OAuthPending{}, notFound("pending authorization")
	}
	if err != nil {
		return store.OAuthPending{}, s.fail(err)
	}
	return p, nil
}

// UpdateOAuthPending implements store.OAuthStore.
func (s *Store) UpdateOAuthPending(ctx context.Context, p store.OAuthPending) error {
	args, err := s.pendingArgs(&p)
	if err != nil {
		return err
	}
	return s.writeUncached(ctx, func(x q) error {
		return x.execOne("pending authorization", `UPDATE oauth_pending SET
			purpose = ?, browser_hash = ?, csrf_hash = ?, client_id = ?, client_name = ?, redirect_uri = ?,
			state = ?, code_challenge = ?, resource = ?, scopes = ?, upstream_nonce = ?, upstream_verifier = ?,
			subject = ?, email = ?, accounts = ?, created_at = ?, expires_at = ?
			WHERE id = ? AND expires_at > ?`, append(args, p.ID, s.now().UnixNano())...)
	})
}

// DeleteOAuthPending implements store.OAuthStore. Write transactions run one at a
// time, so of concurrent callers only the first finds the row.
func (s *Store) DeleteOAuthPending(ctx context.Context, id string) error {
	return s.writeUncached(ctx, func(x q) error {
		return x.execOne("pending authorization", `DELETE FROM oauth_pending WHERE id = ? AND expires_at > ?`,
			id, s.now().UnixNano())
	})
}

// ---- codes ----

const codeCols = `hash, grant_id, client_id, redirect_uri, code_challenge, resource, scopes,
	workspace_id, user_id, created_at, expires_at, used_at`

func scanCode(r scanner) (store.OAuthCode, error) {
	var c store.OAuthCode
	var scopes string
	var created, expires int64
	var used sql.NullInt64
	if err := r.Scan(&c.Hash, &c.GrantID, &c.ClientID, &c.RedirectURI, &c.CodeChallenge, &c.Resource, &scopes,
		&c.WorkspaceID, &c.UserID, &created, &expires, &used); err != nil {
		return store.OAuthCode{}, err
	}
	var err error
	if c.Scopes, err = decodeStrings("scopes", scopes); err != nil {
		return store.OAuthCode{}, err
	}
	c.CreatedAt, c.ExpiresAt = fromNanos(created), fromNanos(expires)
	c.UsedAt = fromNullNanos(used)
	return c, nil
}

// CreateOAuthCode implements store.OAuthStore.
func (s *Store) CreateOAuthCode(ctx context.Context, c store.OAuthCode) error {
	if c.Hash == "" || c.ExpiresAt.IsZero() {
		return store.Invalid("authorization code needs a hash and an expiry")
	}
	c.CreatedAt = s.orNow(c.CreatedAt)
	scopes, err := stringsJSON(c.Scopes)
	if err != nil {
		return err
	}
	used := nullNanos(c.UsedAt)
	return s.writeUncached(ctx, func(x q) error {
		res, err := x.exec(`INSERT OR REPLACE INTO oauth_codes (`+codeCols+`)
			SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?
			WHERE NOT EXISTS (SELECT 1 FROM oauth_codes WHERE hash = ? AND expires_at > ?)`,
			c.Hash, c.GrantID, c.ClientID, c.RedirectURI, c.CodeChallenge, c.Resource, scopes,
			c.WorkspaceID, c.UserID, nanos(c.CreatedAt), nanos(c.ExpiresAt), used, c.Hash, s.now().UnixNano())
		return oneOrConflict(res, err, "authorization code")
	})
}

// ConsumeOAuthCode implements store.OAuthStore. The read and the mark share one
// write transaction, and those run one at a time: of concurrent redemptions exactly
// one sees UsedAt nil. The first redemption's time is kept.
func (s *Store) ConsumeOAuthCode(ctx context.Context, hash string, at time.Time) (store.OAuthCode, error) {
	at = s.orNow(at)
	var out store.OAuthCode
	err := s.writeUncached(ctx, func(x q) error {
		c, err := scanCode(x.queryRow(`SELECT `+codeCols+` FROM oauth_codes WHERE hash = ? AND expires_at > ?`,
			hash, s.now().UnixNano()))
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("authorization code")
		}
		if err != nil {
			return err
		}
		if c.UsedAt == nil {
			if _, err := x.exec(`UPDATE oauth_codes SET used_at = ? WHERE hash = ?`, nanos(at), hash); err != nil {
				return err
			}
		}
		out = c
		return nil
	})
	if err != nil {
		return store.OAuthCode{}, err
	}
	return out, nil
}

// ---- client assertions ----

// CreateOAuthAssertion implements store.OAuthStore.
func (s *Store) CreateOAuthAssertion(ctx context.Context, hash string, expiresAt time.Time) error {
	if hash == "" || expiresAt.IsZero() {
		return store.Invalid("client assertion needs a hash and an expiry")
	}
	return s.writeUncached(ctx, func(x q) error {
		res, err := x.exec(`INSERT OR REPLACE INTO oauth_assertions (hash, expires_at)
			SELECT ?, ? WHERE NOT EXISTS (SELECT 1 FROM oauth_assertions WHERE hash = ? AND expires_at > ?)`,
			hash, nanos(expiresAt), hash, s.now().UnixNano())
		return oneOrConflict(res, err, "client assertion")
	})
}

// ---- grants ----

const grantCols = `id, client_id, client_name, workspace_id, user_id, scopes, resource, refresh_hash,
	access_token_ids, created_at, last_used_at, expires_at, revoked_at`

func scanGrant(r scanner) (store.OAuthGrant, error) {
	var g store.OAuthGrant
	var scopes, tokens string
	var created, used, expires int64
	var revoked sql.NullInt64
	if err := r.Scan(&g.ID, &g.ClientID, &g.ClientName, &g.WorkspaceID, &g.UserID, &scopes, &g.Resource,
		&g.RefreshHash, &tokens, &created, &used, &expires, &revoked); err != nil {
		return store.OAuthGrant{}, err
	}
	var err error
	if g.Scopes, err = decodeStrings("scopes", scopes); err != nil {
		return store.OAuthGrant{}, err
	}
	if g.AccessTokenIDs, err = decodeStrings("access_token_ids", tokens); err != nil {
		return store.OAuthGrant{}, err
	}
	g.CreatedAt, g.LastUsedAt, g.ExpiresAt = fromNanos(created), fromNanos(used), fromNanos(expires)
	g.RevokedAt = fromNullNanos(revoked)
	return g, nil
}

// CreateOAuthGrant implements store.OAuthStore. LastUsedAt defaults to CreatedAt,
// which defaults to now. A refresh hash held by another live grant is conflict.
func (s *Store) CreateOAuthGrant(ctx context.Context, g store.OAuthGrant) error {
	if g.ID == "" || g.ExpiresAt.IsZero() {
		return store.Invalid("grant needs an id and an expiry")
	}
	g.CreatedAt, g.LastUsedAt = store.UseTimes(s.now(), g.CreatedAt, g.LastUsedAt)
	scopes, err := stringsJSON(g.Scopes)
	if err != nil {
		return err
	}
	tokens, err := stringsJSON(g.AccessTokenIDs)
	if err != nil {
		return err
	}
	revoked := nullNanos(g.RevokedAt)
	return s.writeUncached(ctx, func(x q) error {
		now := s.now().UnixNano()
		var live bool
		if err := x.queryRow(`SELECT EXISTS (SELECT 1 FROM oauth_grants WHERE id = ? AND expires_at > ?)`,
			g.ID, now).Scan(&live); err != nil {
			return err
		}
		if live {
			return store.Errorf(store.ErrAlreadyExists, "grant already exists")
		}
		// An expired grant under this id goes with its rotated hashes (the cascade):
		// they belonged to another grant.
		if _, err := x.exec(`DELETE FROM oauth_grants WHERE id = ?`, g.ID); err != nil {
			return err
		}
		_, err := x.exec(`INSERT INTO oauth_grants (`+grantCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			g.ID, g.ClientID, g.ClientName, g.WorkspaceID, g.UserID, scopes, g.Resource, g.RefreshHash, tokens,
			nanos(g.CreatedAt), nanos(g.LastUsedAt), nanos(g.ExpiresAt), revoked)
		if isUnique(err) {
			return store.Errorf(store.ErrAlreadyExists, "refresh token already belongs to a grant")
		}
		return err
	})
}

// GetOAuthGrant implements store.OAuthStore. A revoked grant is returned (with
// RevokedAt) until it expires.
func (s *Store) GetOAuthGrant(ctx context.Context, id string) (store.OAuthGrant, error) {
	return s.getGrant(s.read(ctx), id)
}

func (s *Store) getGrant(x q, id string) (store.OAuthGrant, error) {
	g, err := scanGrant(x.queryRow(`SELECT `+grantCols+` FROM oauth_grants WHERE id = ? AND expires_at > ?`,
		id, s.now().UnixNano()))
	if errors.Is(err, sql.ErrNoRows) {
		return store.OAuthGrant{}, notFound("grant")
	}
	if err != nil {
		return store.OAuthGrant{}, s.fail(err)
	}
	return g, nil
}

// GetOAuthGrantByRefresh implements store.OAuthStore.
func (s *Store) GetOAuthGrantByRefresh(ctx context.Context, refreshHash string) (store.OAuthGrant, bool, error) {
	if refreshHash == "" { // the refresh_hash of a grant whose code is not redeemed yet
		return store.OAuthGrant{}, false, notFound("grant")
	}
	x, now := s.read(ctx), s.now().UnixNano()
	g, err := scanGrant(x.queryRow(`SELECT `+grantCols+` FROM oauth_grants WHERE refresh_hash = ? AND expires_at > ?`,
		refreshHash, now))
	if err == nil {
		return g, true, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return store.OAuthGrant{}, false, s.fail(err)
	}
	g, err = scanGrant(x.queryRow(`SELECT `+grantColsG+` FROM oauth_rotated r
		JOIN oauth_grants g ON g.id = r.grant_id WHERE r.hash = ? AND g.expires_at > ?`, refreshHash, now))
	if errors.Is(err, sql.ErrNoRows) {
		return store.OAuthGrant{}, false, notFound("grant")
	}
	if err != nil {
		return store.OAuthGrant{}, false, s.fail(err)
	}
	return g, false, nil
}

// grantColsG is grantCols qualified by the alias g, for joins.
var grantColsG = prefixed("g.", grantCols)

// prefixed qualifies each column of a column list with p ("g.").
func prefixed(p, cols string) string {
	fields := strings.Split(cols, ",")
	for i, f := range fields {
		fields[i] = p + strings.TrimSpace(f)
	}
	return strings.Join(fields, ", ")
}

// UpdateOAuthGrantRotate implements store.OAuthStore (store.OAuthRotation.Apply
// says what a rotation changes). The check and the write share one write transaction (they run one at a
// time), so of concurrent rotations from the same hash exactly one wins.
func (s *Store) UpdateOAuthGrantRotate(ctx context.Context, r store.OAuthRotation) (store.OAuthGrant, error) {
	if err := r.Check(); err != nil {
		return store.OAuthGrant{}, err
	}
	r.At = s.orNow(r.At)
	var out store.OAuthGrant
	err := s.writeUncached(ctx, func(x q) error {
		cur, err := s.getGrant(x, r.GrantID)
		if err != nil {
			return err
		}
		g, err := r.Apply(cur)
		if err != nil {
			return err
		}
		scopes, err := stringsJSON(g.Scopes)
		if err != nil {
			return err
		}
		tokens, err := stringsJSON(g.AccessTokenIDs)
		if err != nil {
			return err
		}
		if r.OldRefreshHash != "" {
			_, err := x.exec(`INSERT INTO oauth_rotated (hash, grant_id, rotated_at) VALUES (?, ?, ?)`,
				r.OldRefreshHash, g.ID, nanos(r.At))
			if isUnique(err) {
				return store.Errorf(store.ErrConflict, "refresh token was rotated already")
			}
			if err != nil {
				return err
			}
		}
		_, err = x.exec(`UPDATE oauth_grants SET refresh_hash = ?, scopes = ?, access_token_ids = ?,
			last_used_at = ?, expires_at = ? WHERE id = ?`,
			g.RefreshHash, scopes, tokens, nanos(g.LastUsedAt), nanos(g.ExpiresAt), g.ID)
		if isUnique(err) {
			return store.Errorf(store.ErrConflict, "refresh token already belongs to a grant")
		}
		if err != nil {
			return err
		}
		var rotated bool
		if err := x.queryRow(`SELECT EXISTS (SELECT 1 FROM oauth_rotated WHERE hash = ?)`, g.RefreshHash).
			Scan(&rotated); err != nil {
			return err
		}
		if rotated { // a hash that was current once may never be current again
			return store.Errorf(store.ErrConflict, "refresh token was rotated already")
		}
		out = g
		return nil
	})
	if err != nil {
		return store.OAuthGrant{}, err
	}
	return out, nil
}

// UpdateOAuthGrantRevoked implements store.OAuthStore.
func (s *Store) UpdateOAuthGrantRevoked(ctx context.Context, id string, at time.Time) (store.OAuthGrant, error) {
	at = s.orNow(at)
	var out store.OAuthGrant
	err := s.writeUncached(ctx, func(x q) error {
		g, err := scanGrant(x.queryRow(`UPDATE oauth_grants SET revoked_at = COALESCE(revoked_at, ?)
			WHERE id = ? AND expires_at > ? RETURNING `+grantCols, nanos(at), id, s.now().UnixNano()))
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("grant")
		}
		out = g
		return err
	})
	if err != nil {
		return store.OAuthGrant{}, err
	}
	return out, nil
}

// ListOAuthGrants implements store.OAuthStore: newest first (created_at, then id),
// revoked grants included until they expire.
func (s *Store) ListOAuthGrants(ctx context.Context, ws, user string) ([]store.OAuthGrant, error) {
	where, args := []string{"expires_at > ?"}, []any{s.now().UnixNano()}
	if ws != "" {
		where, args = append(where, "workspace_id = ?"), append(args, ws)
	}
	if user != "" {
		where, args = append(where, "user_id = ?"), append(args, user)
	}
	return queryList(ctx, s, scanGrant, `SELECT `+grantCols+` FROM oauth_grants WHERE `+strings.Join(where, " AND ")+`
		ORDER BY created_at DESC, id DESC`, args...)
}

// ---- policy ----

// GetOAuthPolicy implements store.OAuthStore.
func (s *Store) GetOAuthPolicy(ctx context.Context) (store.OAuthPolicy, error) {
	var p store.OAuthPolicy
	var allowed string
	err := s.read(ctx).queryRow(`SELECT mode, allowed FROM oauth_policy WHERE id = 1`).Scan(&p.Mode, &allowed)
	if errors.Is(err, sql.ErrNoRows) {
		return store.OAuthPolicy{Mode: store.OAuthPolicyAny, Allowed: []string{}}, nil
	}
	if err != nil {
		return store.OAuthPolicy{}, s.fail(err)
	}
	if p.Allowed, err = decodeStrings("allowed", allowed); err != nil {
		return store.OAuthPolicy{}, s.fail(err)
	}
	return p, nil
}

// UpdateOAuthPolicy implements store.OAuthStore.
func (s *Store) UpdateOAuthPolicy(ctx context.Context, p store.OAuthPolicy) error {
	if p.Mode != store.OAuthPolicyAny && p.Mode != store.OAuthPolicyAllowlist {
		return store.Errorf(store.ErrInvalid, "policy mode must be %q or %q", store.OAuthPolicyAny, store.OAuthPolicyAllowlist)
	}
	allowed, err := stringsJSON(p.Allowed)
	if err != nil {
		return err
	}
	return s.writeUncached(ctx, func(x q) error {
		_, err := x.exec(`INSERT INTO oauth_policy (id, mode, allowed) VALUES (1, ?, ?)
			ON CONFLICT (id) DO UPDATE SET mode = excluded.mode, allowed = excluded.allowed`, p.Mode, allowed)
		return err
	})
}

// ---- members across workspaces ----
//
// These go around the read cache: sign-in reads them a few times per authorization,
// and the cache holds only GetMember's single records.

const memberCols = `workspace_id, user_id, role, email, created_at`

func scanMember(r scanner) (store.Member, error) {
	var m store.Member
	var created int64
	if err := r.Scan(&m.WorkspaceID, &m.UserID, &m.Role, &m.Email, &created); err != nil {
		return store.Member{}, err
	}
	m.CreatedAt = fromNanos(created)
	return m, nil
}

func (s *Store) listMembers(ctx context.Context, query string, args ...any) ([]store.Member, error) {
	return queryList(ctx, s, scanMember, `SELECT `+memberCols+` FROM members WHERE `+query, args...)
}

// ListMembersByEmail implements store.OAuthStore, ordered by workspace then user.
// "" matches nobody (members without an e-mail hold "").
func (s *Store) ListMembersByEmail(ctx context.Context, email string) ([]store.Member, error) {
	if email == "" {
		return []store.Member{}, nil
	}
	return s.listMembers(ctx, `email = ? ORDER BY workspace_id, user_id`, foldEmail(email))
}

// ListMembersOfUser implements store.OAuthStore, ordered by workspace.
func (s *Store) ListMembersOfUser(ctx context.Context, user string) ([]store.Member, error) {
	return s.listMembers(ctx, `user_id = ? ORDER BY workspace_id`, user)
}

// ListMembers implements store.OAuthStore, ordered by user.
func (s *Store) ListMembers(ctx context.Context, ws string) ([]store.Member, error) {
	return s.listMembers(ctx, `workspace_id = ? ORDER BY user_id`, ws)
}
