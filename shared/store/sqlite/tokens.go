package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"github.com/aacworkflow/aacmcp/shared/store"
	"time"

	"github.com/aacworkflow/aacmcp/shared/auth"
)

const tokenCols = `hash, token_id, name, workspace_id, user_id, scopes, created_at, expires_at, revoked_at, client_id, grant_id`

func scanToken(r scanner) (auth.TokenRecord, error) {
	var t auth.TokenRecord
	var scopes string
	var created, expires int64
	var revoked sql.NullInt64
	if err := r.Scan(&t.Hash, &t.TokenID, &t.Name, &t.WorkspaceID, &t.UserID, &scopes, &created, &expires, &revoked,
		&t.ClientID, &t.GrantID); err != nil {
		return auth.TokenRecord{}, err
	}
	if err := json.Unmarshal([]byte(scopes), &t.Scopes); err != nil {
		return auth.TokenRecord{}, err
	}
	if t.Scopes == nil {
		t.Scopes = []string{}
	}
	t.CreatedAt, t.ExpiresAt = fromNanos(created), fromNanos(expires)
	t.RevokedAt = fromNullNanos(revoked)
	return t, nil
}

// CreateToken implements auth.TokenStore.
func (s *Store) CreateToken(ctx context.Context, t auth.TokenRecord) error {
	if t.Hash == "" || t.TokenID == "" {
		return store.Invalid("token needs a hash and an id")
	}
	if t.Scopes == nil {
		t.Scopes = []string{}
	}
	scopes, err := json.Marshal(t.Scopes)
	if err != nil {
		return err
	}
	created := s.orNow(t.CreatedAt)
	revoked := nullNanos(t.RevokedAt)
	var expires int64 // zero stays zero: the verifier treats it as expired
	if !t.ExpiresAt.IsZero() {
		expires = nanos(t.ExpiresAt)
	}
	return s.write(ctx, func(x q) error {
		_, err := x.exec(`INSERT INTO tokens (`+tokenCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			t.Hash, t.TokenID, t.Name, t.WorkspaceID, t.UserID, string(scopes), nanos(created), expires, revoked,
			t.ClientID, t.GrantID)
		if isUnique(err) {
			return store.Errorf(store.ErrAlreadyExists, "token already exists")
		}
		return err
	})
}

// GetTokenByHash implements auth.TokenStore.
func (s *Store) GetTokenByHash(ctx context.Context, hash string) (auth.TokenRecord, error) {
	t, err := scanToken(s.read(ctx).queryRow(`SELECT `+tokenCols+` FROM tokens WHERE hash = ?`, hash))
	if errors.Is(err, sql.ErrNoRows) {
		return auth.TokenRecord{}, notFound("token")
	}
	if err != nil {
		return auth.TokenRecord{}, s.fail(err)
	}
	return t, nil
}

// ListTokens implements auth.TokenStore: newest first; ws "" lists every workspace.
func (s *Store) ListTokens(ctx context.Context, ws string) ([]auth.TokenRecord, error) {
	if ws == "" {
		return queryList(ctx, s, scanToken, `SELECT `+tokenCols+` FROM tokens ORDER BY created_at DESC, token_id DESC`)
	}
	return queryList(ctx, s, scanToken, `SELECT `+tokenCols+` FROM tokens WHERE workspace_id = ?
		ORDER BY created_at DESC, token_id DESC`, ws)
}

// UpdateTokenRevoked implements auth.TokenStore; the first revocation time is kept.
func (s *Store) UpdateTokenRevoked(ctx context.Context, tokenID string, at time.Time) (auth.TokenRecord, error) {
	at = s.orNow(at)
	var out auth.TokenRecord
	err := s.write(ctx, func(x q) error {
		t, err := scanToken(x.queryRow(`UPDATE tokens SET revoked_at = COALESCE(revoked_at, ?) WHERE token_id = ?
			RETURNING `+tokenCols, nanos(at), tokenID))
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("token")
		}
		out = t
		return err
	})
	if err != nil {
		return auth.TokenRecord{}, err
	}
	return out, nil
}
