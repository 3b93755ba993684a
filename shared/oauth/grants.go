package oauth

import (
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/oauth/clientmeta"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// sessionCookie names a grants-page session. Strict: no other site can make the
// browser send it, so no cross-site request can act in the session.
const sessionCookie = "aacmcp_session"

// A session is a pending record of purpose "session" whose id is the SHA-256 of the
// cookie: the store never holds the cookie itself. The revoke forms' CSRF token is
// derived from the cookie, so it needs no storage either and dies with the session.
func sessionCSRF(secret string) string { return auth.Hash("csrf " + secret) }

// session finds the signed-in session of this browser.
func (q *request) session() (store.OAuthPending, string, bool) {
	c, err := q.r.Cookie(sessionCookie)
	if err != nil || c.Value == "" || len(c.Value) > 128 {
		return store.OAuthPending{}, "", false
	}
	p, err := q.s.cfg.Store.GetOAuthPending(q.ctx(), auth.Hash(c.Value))
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			q.s.log.ErrorContext(q.ctx(), "oauth: reading a session failed", "err", err)
		}
		return store.OAuthPending{}, "", false
	}
	if p.Purpose != purposeSession || len(p.Accounts) == 0 {
		return store.OAuthPending{}, "", false
	}
	return p, c.Value, true
}

type grantsView struct {
	Action, CSRF, Who, Notice string
	Grants                    []grantView
}

type grantView struct {
	ID, ClientName, ClientHost, WorkspaceID, LastUsed string
	Scopes                                            []string
}

// grants is GET /oauth/grants: a signed-in person's grants, each with a Revoke
// button. Without a session it starts a sign-in (the same flow as an authorization)
// that comes back here with ?request=.
func (q *request) grants() {
	if p, secret, ok := q.session(); ok {
		q.renderGrants(p, secret, "")
		return
	}
	id := pendingParam(q.r.URL.Query())
	if id == "" {
		q.startSignin(store.OAuthPending{Purpose: purposeGrants})
		return
	}
	p, pe := q.loadPending(id, purposeGrants)
	if pe == nil && p.Subject == "" {
		pe = &pageError{http.StatusForbidden, "Not signed in", "Sign in first: open the grants page again."}
	}
	if pe != nil {
		q.errorPage(pe.status, pe.title, pe.message)
		return
	}
	if err := q.s.cfg.Store.DeleteOAuthPending(q.ctx(), p.ID); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			q.errorPage(errUnknownRequest.status, errUnknownRequest.title, "This sign-in was already used. Open the grants page again.")
			return
		}
		q.errorPageFor(q.internal("ended the sign-in", err), "")
		return
	}
	secret := randomString()
	now := q.s.now().UTC()
	sess := store.OAuthPending{
		ID: auth.Hash(secret), Purpose: purposeSession, CSRFHash: auth.Hash(sessionCSRF(secret)),
		Subject: p.Subject, Email: p.Email, Accounts: p.Accounts,
		CreatedAt: now, ExpiresAt: now.Add(SessionTTL),
	}
	if err := q.s.cfg.Store.CreateOAuthPending(q.ctx(), sess); err != nil {
		q.errorPageFor(q.internal("started the session", err), "")
		return
	}
	http.SetCookie(q.w, &http.Cookie{
		Name: sessionCookie, Value: secret, Path: q.cookiePath(), MaxAge: int(SessionTTL.Seconds()),
		HttpOnly: true, Secure: q.secure(), SameSite: http.SameSiteStrictMode,
	})
	// Rendered here rather than redirected: after an upstream sign-in this response
	// ends a cross-site redirect chain, in which the browser would not yet send a
	// Strict cookie back.
	q.renderGrants(sess, secret, "")
}

func (q *request) renderGrants(sess store.OAuthPending, secret, notice string) {
	if notice == "" && q.r.URL.Query().Get("revoked") == "1" {
		notice = "Access revoked. The application's tokens stop working within a minute."
	}
	v := grantsView{Action: q.url(pathGrantsRevoke), CSRF: sessionCSRF(secret), Who: sess.Email, Notice: notice}
	if v.Who == "" {
		v.Who = sess.Accounts[0].UserID
	}
	now := q.s.now()
	for _, a := range sess.Accounts {
		gs, err := q.s.cfg.Store.ListOAuthGrants(q.ctx(), a.WorkspaceID, a.UserID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			q.errorPageFor(q.internal("listed your grants", err), "")
			return
		}
		for _, g := range gs {
			if g.RevokedAt != nil || !now.Before(g.ExpiresAt) {
				continue
			}
			gv := grantView{ID: g.ID, ClientName: g.ClientName, WorkspaceID: g.WorkspaceID, Scopes: g.Scopes,
				LastUsed: g.LastUsedAt.UTC().Format(time.DateTime) + " UTC"}
			if clientmeta.IsMetadataURL(g.ClientID) {
				gv.ClientHost = hostOf(g.ClientID)
			} else {
				gv.ClientHost = "registered client " + g.ClientID
			}
			v.Grants = append(v.Grants, gv)
		}
	}
	q.page(http.StatusOK, "grants", v)
}

// grantsRevoke is POST /oauth/grants/revoke.
func (q *request) grantsRevoke() {
	if !q.parseForm() {
		return
	}
	sess, secret, ok := q.session()
	if !ok {
		q.errorPage(http.StatusForbidden, "Signed out", "Your session on this page ended (after 15 minutes). Open the grants page again to sign in.")
		return
	}
	csrf, _ := single(q.r.PostForm, "csrf")
	if csrf == "" || csrf != sessionCSRF(secret) || !hashEqual(csrf, sess.CSRFHash) {
		q.errorPage(http.StatusForbidden, "This form has expired", "The revoke form was not submitted from the page this server rendered. Nothing was revoked.")
		return
	}
	id, e := param(q.r.PostForm, "grant", true)
	if e != nil {
		q.errorPage(http.StatusBadRequest, "This form is not valid", e.Description)
		return
	}
	g, err := q.s.cfg.Store.GetOAuthGrant(q.ctx(), id)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		q.errorPageFor(q.internal("read the grant", err), "")
		return
	}
	mine := err == nil && slices.ContainsFunc(sess.Accounts, func(a store.OAuthAccount) bool {
		return a.WorkspaceID == g.WorkspaceID && a.UserID == g.UserID
	})
	if !mine {
		q.errorPage(http.StatusNotFound, "No such grant", "That grant does not exist or is not yours. Nothing was revoked.")
		return
	}
	ev := q.event("")
	if _, err := q.s.revokeGrant(q.ctx(), g.ID, "user:"+g.UserID, ev); err != nil {
		q.errorPageFor(q.internal("revoked the grant", err), "")
		return
	}
	q.w.Header().Set("Cache-Control", "no-store")
	http.Redirect(q.w, q.r, q.url(pathGrants)+"?revoked=1", http.StatusSeeOther)
}
