package oauth

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// Grant types.
const (
	grantCode    = "authorization_code"
	grantRefresh = "refresh_token"
)

// tokenRequest is the decoded POST /oauth/token body (RFC 6749 sections 4.1.3 and 6).
type tokenRequest struct {
	GrantType    string
	Code         string // authorization_code
	RedirectURI  string // authorization_code
	CodeVerifier string // authorization_code
	RefreshToken string // refresh_token
	Scopes       []string
	Resource     string
}

// parseTokenRequest decodes and checks a token request's form, apart from client
// authentication (which needs the Authorization header too).
func parseTokenRequest(v url.Values) (tokenRequest, *Error) {
	var t tokenRequest
	var e *Error
	if t.GrantType, e = param(v, "grant_type", true); e != nil {
		return t, e
	}
	res, e := single(v, "resource")
	if e != nil {
		return t, oerr(ErrInvalidTarget, "only one resource may be requested: this server's /mcp")
	}
	t.Resource = res
	switch t.GrantType {
	case grantCode:
		if t.Code, e = param(v, "code", true); e != nil {
			return t, e
		}
		if t.RedirectURI, e = param(v, "redirect_uri", true); e != nil {
			return t, e
		}
		if t.CodeVerifier, e = param(v, "code_verifier", true); e != nil {
			return t, oerr(ErrInvalidRequest, "code_verifier is required: this server requires PKCE")
		}
		if !validVerifier(t.CodeVerifier) {
			return t, oerr(ErrInvalidRequest, "code_verifier must be 43 to 128 characters of A-Z a-z 0-9 - . _ ~ (RFC 7636)")
		}
	case grantRefresh:
		if t.RefreshToken, e = param(v, "refresh_token", true); e != nil {
			return t, e
		}
		sc, e := single(v, "scope")
		if e != nil {
			return t, oerr(ErrInvalidScope, "the parameter scope is repeated; send one space-separated list")
		}
		if t.Scopes, e = parseScope(sc); e != nil {
			return t, e
		}
	default:
		return t, oerr(ErrUnsupportedGrantType, "grant_type must be authorization_code or refresh_token; got "+quote(t.GrantType))
	}
	return t, nil
}

// clientCredentials are how a request authenticated its client.
type clientCredentials struct {
	ID, Secret, Method string
	Assertion          assertion // private_key_jwt
}

// parseClientAuth reads the client's credentials from the Authorization header
// (client_secret_basic, RFC 6749 section 2.3.1: both parts form-encoded) or the form
// (client_secret_post, private_key_jwt's client_assertion, or none with a bare
// client_id). Using two methods at once is invalid_request.
func parseClientAuth(header string, v url.Values) (clientCredentials, *Error) {
	formID, e := param(v, "client_id", false)
	if e != nil {
		return clientCredentials{}, e
	}
	formSecret, e := param(v, "client_secret", false)
	if e != nil {
		return clientCredentials{}, e
	}
	aType, e := param(v, "client_assertion_type", false)
	if e != nil {
		return clientCredentials{}, e
	}
	// Not param: an assertion may pass its 2 KB bound; parseAssertion has its own.
	aJWT, e := single(v, "client_assertion")
	if e != nil {
		return clientCredentials{}, e
	}
	if aType != "" || aJWT != "" {
		switch {
		case header != "" || formSecret != "":
			return clientCredentials{}, oerr(ErrInvalidRequest, "the client authenticated twice (client_assertion and a secret); use one method")
		case aType != assertionTypeJWT:
			return clientCredentials{ID: cmp.Or(formID, unverifiedSubject(aJWT))}, oerr(ErrInvalidClient, "client_assertion_type must be "+assertionTypeJWT)
		case aJWT == "":
			return clientCredentials{}, oerr(ErrInvalidClient, "client_assertion is required with client_assertion_type")
		}
		a, e := parseAssertion(aJWT)
		if e != nil {
			return clientCredentials{ID: assertionClientID(formID, a)}, e
		}
		id := assertionClientID(formID, a)
		if id == "" {
			return clientCredentials{}, oerr(ErrInvalidClient, "client_id is required (in the form, or as the client_assertion's sub)")
		}
		return clientCredentials{ID: id, Method: authPrivateKeyJWT, Assertion: a}, nil
	}
	if header != "" {
		scheme, cred, _ := strings.Cut(header, " ")
		if !strings.EqualFold(scheme, "Basic") {
			return clientCredentials{}, oerr(ErrInvalidClient, "the Authorization header must use the Basic scheme (client_secret_basic)")
		}
		r := http.Request{Header: http.Header{"Authorization": {"Basic " + strings.TrimSpace(cred)}}}
		user, pass, ok := r.BasicAuth()
		if !ok {
			return clientCredentials{}, oerr(ErrInvalidClient, "the Basic credentials are not valid base64 of client_id:client_secret")
		}
		id, err1 := url.QueryUnescape(user)
		secret, err2 := url.QueryUnescape(pass)
		if err1 != nil || err2 != nil || id == "" {
			return clientCredentials{}, oerr(ErrInvalidClient, "the Basic credentials must be the form-encoded client_id and client_secret")
		}
		if formSecret != "" {
			return clientCredentials{}, oerr(ErrInvalidRequest, "the client authenticated twice (Basic and client_secret); use one method")
		}
		if formID != "" && formID != id {
			return clientCredentials{}, oerr(ErrInvalidRequest, "client_id in the form differs from the one in the Basic credentials")
		}
		return clientCredentials{ID: id, Secret: secret, Method: authSecretBasic}, nil
	}
	if formID == "" {
		return clientCredentials{}, oerr(ErrInvalidClient, "client_id is required (in the form, or in Basic credentials)")
	}
	if formSecret != "" {
		return clientCredentials{ID: formID, Secret: formSecret, Method: authSecretPost}, nil
	}
	return clientCredentials{ID: formID, Method: authNone}, nil
}

// authenticateClient resolves the client and checks its credentials by the method it
// registered.
func (q *request) authenticateClient(ctx context.Context, v url.Values) (client, *Error) {
	q.claimed = v.Get("client_id")
	cred, e := parseClientAuth(q.r.Header.Get("Authorization"), v)
	if cred.ID != "" {
		q.claimed = cred.ID
	}
	if e != nil {
		return client{}, e
	}
	c, e := q.resolveClient(ctx, cred.ID)
	if e != nil {
		return client{}, e
	}
	want := c.TokenEndpointAuthMethod
	if want == "" {
		want = authNone
	}
	if cred.Method != want {
		return client{}, oerr(ErrInvalidClient, "client "+quote(c.ClientID)+" authenticates with "+want+", but this request used "+cred.Method)
	}
	switch want {
	case authNone:
	case authPrivateKeyJWT:
		if e := q.verifyAssertion(ctx, c, cred.Assertion); e != nil {
			return client{}, e
		}
	default:
		if !hashEqual(cred.Secret, c.secretHash) {
			return client{}, oerr(ErrInvalidClient, "client authentication failed: wrong client_secret")
		}
	}
	return c, nil
}

// tokenResponse is RFC 6749 section 5.1.
type tokenResponse struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int64  `json:"expires_in"`
	RefreshToken string `json:"refresh_token"`
	Scope        string `json:"scope"`
}

// token is POST /oauth/token.
func (q *request) token() {
	ctx := q.ctx()
	if mt, _, _ := strings.Cut(q.r.Header.Get("Content-Type"), ";"); !strings.EqualFold(strings.TrimSpace(mt), "application/x-www-form-urlencoded") {
		q.refuse(audit.ActionTokenRefused, oerr(ErrInvalidRequest, "the token request must be application/x-www-form-urlencoded"))
		return
	}
	if err := q.r.ParseForm(); err != nil {
		q.refuse(audit.ActionTokenRefused, oerr(ErrInvalidRequest, "the token request body could not be read (too large or malformed)"))
		return
	}
	// Only the body counts (RFC 6749 section 3.2: POST); ParseForm merged the query in.
	v := q.r.PostForm
	q.claimed = v.Get("client_id")
	t, e := parseTokenRequest(v)
	if e != nil {
		q.refuse(audit.ActionTokenRefused, e)
		return
	}
	c, e := q.authenticateClient(ctx, v)
	if e != nil {
		q.refuse(audit.ActionTokenRefused, e)
		return
	}
	q.touch(ctx, c)
	var resp tokenResponse
	if t.GrantType == grantCode {
		resp, e = q.redeemCode(ctx, c, t)
	} else {
		resp, e = q.refresh(ctx, c, t)
	}
	if e != nil {
		q.refuse(audit.ActionTokenRefused, e)
		return
	}
	writeJSON(q.w, http.StatusOK, resp)
}

// redeemCode is the authorization_code grant. The code is consumed before anything
// else is checked: a code presented with the wrong verifier or by the wrong client is
// spent, and presenting it again revokes what it issued.
func (q *request) redeemCode(ctx context.Context, c client, t tokenRequest) (tokenResponse, *Error) {
	now := q.s.now().UTC()
	code, err := q.s.cfg.Store.ConsumeOAuthCode(ctx, auth.Hash(t.Code), now)
	if errors.Is(err, store.ErrNotFound) {
		return tokenResponse{}, oerr(ErrInvalidGrant, "the authorization code is unknown or expired (codes live 60 seconds)")
	}
	if err != nil {
		return tokenResponse{}, q.internal("redeemed the code", err)
	}
	if code.UsedAt != nil {
		// RFC 6749 section 4.1.2: a code used twice was probably stolen; what it
		// issued is revoked.
		if _, err := q.s.revokeGrant(ctx, code.GrantID, "code_replay", q.event("")); err != nil && !errors.Is(err, store.ErrNotFound) {
			q.s.log.ErrorContext(ctx, "oauth: revoking the grant of a replayed code failed", "grant_id", code.GrantID, "err", err)
		}
		return tokenResponse{}, oerr(ErrInvalidGrant, "the authorization code was already used; as a precaution everything issued from it is revoked")
	}
	switch {
	case code.ClientID != c.ClientID:
		return tokenResponse{}, oerr(ErrInvalidGrant, "the authorization code was issued to another client")
	case code.RedirectURI != t.RedirectURI:
		return tokenResponse{}, oerr(ErrInvalidGrant, "redirect_uri differs from the one in the authorization request")
	case !verifierMatches(t.CodeVerifier, code.CodeChallenge):
		return tokenResponse{}, oerr(ErrInvalidGrant, "code_verifier does not match the code_challenge of the authorization request")
	case t.Resource != "" && t.Resource != code.Resource:
		return tokenResponse{}, oerr(ErrInvalidTarget, "resource must be "+code.Resource+" (the one authorized) or absent")
	}
	g, err := q.s.cfg.Store.GetOAuthGrant(ctx, code.GrantID)
	if errors.Is(err, store.ErrNotFound) || err == nil && g.RevokedAt != nil {
		return tokenResponse{}, oerr(ErrInvalidGrant, "the grant behind this code was revoked")
	}
	if err != nil {
		return tokenResponse{}, q.internal("read the grant", err)
	}
	resp, tokenID, e := q.issue(ctx, g, code.Scopes, "")
	if e != nil {
		return tokenResponse{}, e
	}
	ev := q.event(audit.ActionTokenIssued)
	ev.clientID, ev.name, ev.workspace, ev.user = g.ClientID, g.ClientName, g.WorkspaceID, g.UserID
	ev.tokenID, ev.grantID, ev.scopes, ev.requested = tokenID, g.ID, code.Scopes, code.Scopes
	if q.s.record(ctx, ev) != nil {
		q.revokeToken(tokenID)
		return tokenResponse{}, oerr(ErrServerError, "the token could not be audited, so it was not issued; try again")
	}
	return resp, nil
}

// refresh is the refresh_token grant: rotation on every use, reuse revokes.
func (q *request) refresh(ctx context.Context, c client, t tokenRequest) (tokenResponse, *Error) {
	now := q.s.now().UTC()
	if !auth.ValidRefreshFormat(t.RefreshToken) {
		return tokenResponse{}, oerr(ErrInvalidGrant, "refresh_token is not a refresh token of this server")
	}
	hash := auth.Hash(t.RefreshToken)
	g, current, err := q.s.cfg.Store.GetOAuthGrantByRefresh(ctx, hash)
	if errors.Is(err, store.ErrNotFound) {
		return tokenResponse{}, oerr(ErrInvalidGrant, "the refresh token is unknown, expired or revoked")
	}
	if err != nil {
		return tokenResponse{}, q.internal("looked up the refresh token", err)
	}
	switch {
	case g.ClientID != c.ClientID:
		return tokenResponse{}, oerr(ErrInvalidGrant, "the refresh token was issued to another client")
	case g.RevokedAt != nil:
		return tokenResponse{}, oerr(ErrInvalidGrant, "the grant of this refresh token was revoked; sign in again")
	case !current:
		// A rotated token came back: either the client or a thief holds a copy.
		// Which one cannot be told, so the grant ends for both (RFC 9700 4.14.2).
		if _, err := q.s.revokeGrant(ctx, g.ID, "refresh_reuse", q.event("")); err != nil {
			q.s.log.ErrorContext(ctx, "oauth: revoking a grant after refresh reuse failed", "grant_id", g.ID, "err", err)
		}
		ev := q.event(audit.ActionRefreshReuseDetected)
		ev.clientID, ev.name, ev.workspace, ev.user, ev.grantID = g.ClientID, g.ClientName, g.WorkspaceID, g.UserID, g.ID
		ev.scopes, ev.denied = g.Scopes, apperr.InvalidToken
		_ = q.s.record(ctx, ev) // the refusal stands whatever the sink says
		return tokenResponse{}, oerr(ErrInvalidGrant, "this refresh token was already used; as a precaution the grant is revoked: sign in again")
	case !now.Before(g.ExpiresAt):
		return tokenResponse{}, oerr(ErrInvalidGrant, "the refresh token expired; sign in again")
	case t.Resource != "" && t.Resource != g.Resource:
		return tokenResponse{}, oerr(ErrInvalidTarget, "resource must be "+g.Resource+" (the one authorized) or absent")
	}
	scopes := g.Scopes
	if len(t.Scopes) > 0 {
		if !subset(t.Scopes, g.Scopes) {
			return tokenResponse{}, oerr(ErrInvalidScope, "a refresh may narrow the scopes, never widen them: "+strings.Join(minus(t.Scopes, g.Scopes), " ")+" was not granted")
		}
		scopes = t.Scopes
	}
	// The member record may have gone since the grant: no new token for it.
	ms, err := q.s.cfg.Store.ListMembersOfUser(ctx, g.UserID)
	if err != nil {
		return tokenResponse{}, q.internal("checked the membership", err)
	}
	if !slices.ContainsFunc(ms, func(m store.Member) bool { return m.WorkspaceID == g.WorkspaceID }) {
		return tokenResponse{}, oerr(ErrInvalidGrant, "the user is no longer a member of the workspace this grant is for")
	}
	resp, tokenID, e := q.issue(ctx, g, scopes, hash)
	if e != nil {
		return tokenResponse{}, e
	}
	ev := q.event(audit.ActionTokenRefreshed)
	ev.clientID, ev.name, ev.workspace, ev.user = g.ClientID, g.ClientName, g.WorkspaceID, g.UserID
	ev.tokenID, ev.grantID, ev.scopes, ev.requested = tokenID, g.ID, scopes, t.Scopes
	if q.s.record(ctx, ev) != nil {
		q.revokeToken(tokenID)
		return tokenResponse{}, oerr(ErrServerError, "the token could not be audited, so it was not issued; the refresh token used is spent: sign in again")
	}
	return resp, nil
}

// issue mints an access token and a refresh token for g with scopes, and rotates the
// grant's refresh token from oldHash ("" at code redemption). The access token row
// is written first and the rotation second: a refresh racing a revocation either
// lands before it (and the revocation reaches its token through the grant) or fails
// its condition (and its token is revoked here), so no live token escapes the grant.
func (q *request) issue(ctx context.Context, g store.OAuthGrant, scopes []string, oldHash string) (tokenResponse, string, *Error) {
	now := q.s.now().UTC()
	access, accessHash, err := auth.MintWithPrefix(auth.AccessTokenPrefix)
	if err != nil {
		return tokenResponse{}, "", q.internal("minted a token", err)
	}
	refresh, refreshHash, err := auth.MintWithPrefix(auth.RefreshTokenPrefix)
	if err != nil {
		return tokenResponse{}, "", q.internal("minted a token", err)
	}
	tokenID := newTokenID(now)
	expires := now.Add(q.s.cfg.AccessTokenTTL)
	if err := q.s.cfg.Tokens.CreateToken(ctx, auth.TokenRecord{
		Hash: accessHash, TokenID: tokenID, Name: "oauth:" + bound(g.ClientName, 200),
		WorkspaceID: g.WorkspaceID, UserID: g.UserID, Scopes: slices.Clone(scopes),
		CreatedAt: now, ExpiresAt: expires, ClientID: g.ClientID, GrantID: g.ID,
	}); err != nil {
		return tokenResponse{}, "", q.internal("stored the access token", err)
	}
	_, err = q.s.cfg.Store.UpdateOAuthGrantRotate(ctx, store.OAuthRotation{
		GrantID: g.ID, OldRefreshHash: oldHash, NewRefreshHash: refreshHash, Scopes: slices.Clone(scopes),
		AccessTokenID: tokenID, DropTokenIDs: expiredTokenIDs(g.AccessTokenIDs, now),
		At: now, ExpiresAt: now.Add(q.s.cfg.RefreshTokenTTL),
	})
	if err != nil {
		q.revokeToken(tokenID)
		if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) {
			if oldHash == "" {
				return tokenResponse{}, "", oerr(ErrInvalidGrant, "the grant behind this code was revoked or already redeemed")
			}
			return tokenResponse{}, "", oerr(ErrInvalidGrant, "the refresh token was used concurrently or its grant revoked; use the newest refresh token, or sign in again")
		}
		return tokenResponse{}, "", q.internal("rotated the refresh token", err)
	}
	return tokenResponse{
		AccessToken: access, TokenType: "Bearer", ExpiresIn: int64(expires.Sub(now) / time.Second),
		RefreshToken: refresh, Scope: strings.Join(scopes, " "),
	}, tokenID, nil
}

// newTokenID is auth.NewTokenID's format ("tok_" + ULID) on this server's clock: the
// ULID's time is when the token was minted, which expiredTokenIDs relies on.
func newTokenID(now time.Time) string {
	return "tok_" + ulid.MustNew(ulid.Timestamp(now), ulid.DefaultEntropy()).String()
}

// expiredTokenIDs are the ids among ids whose tokens have certainly expired: minted
// (their ULID time) more than MaxAccessTokenTTL ago. Pruning them keeps a long-lived
// grant's list short.
func expiredTokenIDs(ids []string, now time.Time) []string {
	var out []string
	for _, id := range ids {
		u, err := ulid.ParseStrict(strings.TrimPrefix(id, "tok_"))
		if err == nil && now.Sub(ulid.Time(u.Time())) > MaxAccessTokenTTL {
			out = append(out, id)
		}
	}
	return out
}

// revokeToken ends an access token that must not be used (its issue failed).
func (q *request) revokeToken(tokenID string) {
	if _, err := q.s.cfg.Tokens.UpdateTokenRevoked(context.WithoutCancel(q.ctx()), tokenID, q.s.now().UTC()); err != nil {
		q.s.log.ErrorContext(q.ctx(), "oauth: revoking an unissued access token failed", "token_id", tokenID, "err", err)
	}
}
