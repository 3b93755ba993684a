package oauth

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// revoke is POST /oauth/revoke (RFC 7009). Revoking either token of a grant revokes
// the grant: both stand for one decision of the person's, and a client that asks to
// end one of them is done with the connection. An unknown token, or one of another
// client, is answered 200 like a revoked one (section 2.2), so the endpoint tells
// nobody which tokens exist.
func (q *request) revoke() {
	ctx := q.ctx()
	if mt, _, _ := strings.Cut(q.r.Header.Get("Content-Type"), ";"); !strings.EqualFold(strings.TrimSpace(mt), "application/x-www-form-urlencoded") {
		q.refuse(audit.ActionRevocationRefused, oerr(ErrInvalidRequest, "the revocation request must be application/x-www-form-urlencoded"))
		return
	}
	if err := q.r.ParseForm(); err != nil {
		q.refuse(audit.ActionRevocationRefused, oerr(ErrInvalidRequest, "the revocation request body could not be read (too large or malformed)"))
		return
	}
	v := q.r.PostForm
	q.claimed = v.Get("client_id")
	tok, e := param(v, "token", true)
	if e != nil {
		q.refuse(audit.ActionRevocationRefused, e)
		return
	}
	if _, e := param(v, "token_type_hint", false); e != nil {
		q.refuse(audit.ActionRevocationRefused, e)
		return
	}
	c, e := q.authenticateClient(ctx, v)
	if e != nil {
		q.refuse(audit.ActionRevocationRefused, e)
		return
	}
	grantID, err := q.grantOf(ctx, tok)
	if err != nil {
		q.refuse(audit.ActionRevocationRefused, q.internal("looked up the token", err))
		return
	}
	if grantID != "" {
		g, err := q.s.cfg.Store.GetOAuthGrant(ctx, grantID)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			q.refuse(audit.ActionRevocationRefused, q.internal("read the grant", err))
			return
		case g.ClientID == c.ClientID:
			if _, err := q.s.revokeGrant(ctx, g.ID, "client", q.event("")); err != nil && !errors.Is(err, store.ErrNotFound) {
				q.refuse(audit.ActionRevocationRefused, q.internal("revoked the grant", err))
				return
			}
		}
	}
	q.w.Header().Set("Cache-Control", "no-store")
	q.w.WriteHeader(http.StatusOK)
}

// grantOf is the grant a refresh or OAuth access token belongs to ("" for an
// unknown token, or a personal token, which is not the OAuth server's to revoke).
func (q *request) grantOf(ctx context.Context, tok string) (string, error) {
	switch {
	case auth.ValidRefreshFormat(tok):
		g, _, err := q.s.cfg.Store.GetOAuthGrantByRefresh(ctx, auth.Hash(tok))
		if errors.Is(err, store.ErrNotFound) {
			return "", nil
		}
		return g.ID, err
	case strings.HasPrefix(tok, auth.AccessTokenPrefix) && auth.ValidFormat(tok):
		rec, err := q.s.cfg.Tokens.GetTokenByHash(ctx, auth.Hash(tok))
		if errors.Is(err, store.ErrNotFound) {
			return "", nil
		}
		return rec.GrantID, err
	}
	return "", nil
}

// RevokerAgent begins the user_agent of a grant_revoked record that no request
// caused: "aacmcp-cli (admin)" for `aacmcp oauth grants revoke`.
const RevokerAgent = "aacmcp-cli"

// RevokeGrant revokes a grant: its refresh token fails at once, and its access
// tokens are revoked in the tokens table, so they fail within the verifier's cache
// bound (60 s). by says who asked ("admin", "user:<id>", "client", "code_replay",
// "refresh_reuse") and goes to the log line beside the grant_revoked audit record.
// Revoking a revoked grant revokes its tokens again and succeeds.
func (s *Server) RevokeGrant(ctx context.Context, grantID string, by string) (store.OAuthGrant, error) {
	// No request: the record's user agent names the revoker (an admin through the
	// CLI), where a revocation on the grants page carries the person's browser.
	return s.revokeGrant(ctx, grantID, by, event{action: audit.ActionGrantRevoked, ua: RevokerAgent + " (" + by + ")"})
}

func (s *Server) revokeGrant(ctx context.Context, grantID, by string, ev event) (store.OAuthGrant, error) {
	ctx = context.WithoutCancel(ctx) // a revocation must not stop half-way
	now := s.now().UTC()
	g, err := s.cfg.Store.UpdateOAuthGrantRevoked(ctx, grantID, now)
	if err != nil {
		return store.OAuthGrant{}, err
	}
	var errs []error
	for _, id := range g.AccessTokenIDs {
		if _, err := s.cfg.Tokens.UpdateTokenRevoked(ctx, id, now); err != nil && !errors.Is(err, store.ErrNotFound) {
			errs = append(errs, err)
		}
	}
	if s.cfg.OnRevoke != nil && len(g.AccessTokenIDs) > 0 {
		s.cfg.OnRevoke(slices.Clone(g.AccessTokenIDs))
	}
	s.log.InfoContext(ctx, "oauth: grant revoked", "grant_id", g.ID, "client_id", g.ClientID,
		"workspace_id", g.WorkspaceID, "user_id", g.UserID, "by", by)
	ev.action = audit.ActionGrantRevoked
	ev.clientID, ev.name, ev.workspace, ev.user, ev.grantID, ev.scopes = g.ClientID, g.ClientName, g.WorkspaceID, g.UserID, g.ID, g.Scopes
	// The revocation has happened; a failed audit write is logged by record and
	// does not undo it.
	_ = s.record(ctx, ev)
	if len(errs) > 0 {
		return g, apperr.Internal(errors.Join(errs...))
	}
	return g, nil
}
