package oauth

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/oauth/upstream"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// browserCookie binds a pending request to the browser that started it: the id in a
// consent URL is useless in another browser. A fresh value per request, so a value
// planted in a victim's browser cannot be made to match a request the attacker
// started.
const browserCookie = "aacmcp_oauth"

// startSignin stores p (filling its id, binding, expiry and upstream leg), sets the
// browser cookie and sends the browser to sign in.
func (q *request) startSignin(p store.OAuthPending) {
	if q.s.upstream == nil && !q.s.cfg.Dev {
		q.errorPage(http.StatusServiceUnavailable, "Sign-in is not configured",
			"This server has no identity provider configured (--oidc-issuer), so nobody can sign in. An administrator must configure one.")
		return
	}
	if q.s.upstream == nil && !loopbackIssuer(q.issuer) {
		q.devOnLoopbackOnly()
		return
	}
	// The pending row is the one an anonymous caller makes this server store:
	// bounded per source (sourcelimit.go).
	if retry, e := q.countSource("oauth_pending", PendingTTL, q.s.cfg.PendingLimit); e != nil || retry > 0 {
		if e != nil {
			q.errorPageFor(e, "")
			return
		}
		q.errorPage(http.StatusTooManyRequests, "Too many sign-ins",
			"Too many sign-ins were started from your network in the last minutes. Wait "+strconv.FormatInt(retry, 10)+" seconds, then connect again from your application.")
		return
	}
	now := q.s.now().UTC()
	cookie := randomString()
	p.ID = randomString()
	p.BrowserHash = auth.Hash(cookie)
	p.CreatedAt = now
	p.ExpiresAt = now.Add(PendingTTL)
	if q.s.upstream != nil {
		p.UpstreamNonce = upstream.NewNonce()
		p.UpstreamVerifier = upstream.NewVerifier()
	}
	if err := q.s.cfg.Store.CreateOAuthPending(q.ctx(), p); err != nil {
		q.errorPageFor(q.internal("stored the authorization request", err), "")
		return
	}
	http.SetCookie(q.w, &http.Cookie{
		Name: browserCookie, Value: cookie, Path: q.cookiePath(),
		MaxAge: int(PendingTTL.Seconds()), HttpOnly: true, Secure: q.secure(),
		// Lax, not Strict: the upstream provider's redirect to /oauth/callback is a
		// cross-site navigation, and the cookie must come with it.
		SameSite: http.SameSiteLaxMode,
	})
	q.w.Header().Set("Cache-Control", "no-store")
	q.w.Header().Set("Referrer-Policy", "no-referrer")
	if q.s.upstream != nil {
		http.Redirect(q.w, q.r, q.s.upstream.AuthCodeURL(q.url(pathCallback), p.ID, p.UpstreamNonce, p.UpstreamVerifier), http.StatusFound)
		return
	}
	http.Redirect(q.w, q.r, q.url(pathSignin)+"?request="+url.QueryEscape(p.ID), http.StatusFound)
}

// pageError is a refusal shown as a page: its status, title and message.
type pageError struct {
	status         int
	title, message string
}

var errUnknownRequest = &pageError{http.StatusBadRequest, "This request has expired or was already answered",
	"The authorization request is unknown, expired (after 10 minutes) or already answered. Go back to your application and connect again."}

// loadPending finds the pending request named by id and checks that this browser
// started it and that it is for one of purposes.
func (q *request) loadPending(id string, purposes ...string) (store.OAuthPending, *pageError) {
	if id == "" || len(id) > maxParamLen {
		return store.OAuthPending{}, &pageError{http.StatusBadRequest, "This link is not valid", "The request parameter is missing."}
	}
	p, err := q.s.cfg.Store.GetOAuthPending(q.ctx(), id)
	if errors.Is(err, store.ErrNotFound) {
		return store.OAuthPending{}, errUnknownRequest
	}
	if err != nil {
		e := q.internal("read the authorization request", err)
		return store.OAuthPending{}, &pageError{http.StatusInternalServerError, "Something went wrong", e.Description}
	}
	if !slices.Contains(purposes, p.Purpose) || !q.sameBrowser(p) {
		return store.OAuthPending{}, &pageError{http.StatusForbidden, "This request belongs to another browser",
			"This authorization was started in another browser or tab (or its cookie expired). Go back to your application and connect again from this browser."}
	}
	return p, nil
}

func (q *request) sameBrowser(p store.OAuthPending) bool {
	c, err := q.r.Cookie(browserCookie)
	return err == nil && hashEqual(c.Value, p.BrowserHash)
}

// pendingParam reads the one "request" parameter (query or form).
func pendingParam(v url.Values) string {
	s, e := single(v, "request")
	if e != nil {
		return ""
	}
	return s
}

// signin is GET|POST /oauth/signin: the dev sign-in page, one button per member of
// the dev workspace. It exists only under --dev with no upstream provider.
func (q *request) signin() {
	if !q.s.cfg.Dev || q.s.upstream != nil {
		q.errorPage(http.StatusNotFound, "No dev sign-in here", "The dev sign-in page exists only under --dev with no identity provider configured.")
		return
	}
	if !loopbackIssuer(q.issuer) {
		q.devOnLoopbackOnly()
		return
	}
	var v url.Values
	if q.r.Method == http.MethodPost {
		if !q.parseForm() {
			return
		}
		v = q.r.PostForm
	} else {
		v = q.r.URL.Query()
	}
	id := pendingParam(v)
	p, pe := q.pendingForSignin(id)
	if pe != nil {
		q.page(pe.status, "error", errorView{Title: pe.title, Message: pe.message})
		return
	}
	members, err := q.s.cfg.Store.ListMembers(q.ctx(), q.s.cfg.DevWorkspace)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		q.errorPageFor(q.internal("listed the dev workspace's members", err), "")
		return
	}
	var users []string
	for _, m := range members {
		users = append(users, m.UserID)
	}
	slices.Sort(users)
	users = slices.Compact(users)

	if q.r.Method == http.MethodGet {
		csrf := randomString()
		p.CSRFHash = auth.Hash(csrf)
		if err := q.s.cfg.Store.UpdateOAuthPending(q.ctx(), p); err != nil {
			q.pendingWriteFailed(err)
			return
		}
		q.page(http.StatusOK, "signin", signinView{Action: q.url(pathSignin), Request: p.ID, CSRF: csrf, Users: users, Workspace: q.s.cfg.DevWorkspace})
		return
	}
	csrf, _ := single(v, "csrf")
	if !hashEqual(csrf, p.CSRFHash) {
		q.errorPage(http.StatusForbidden, "This form has expired", "The sign-in form was not submitted from the page this server rendered (its CSRF token is missing or stale). Reload the sign-in page and try again.")
		return
	}
	user, _ := single(v, "user")
	if !slices.Contains(users, user) {
		q.errorPage(http.StatusBadRequest, "Unknown user", "Pick one of the members listed on the sign-in page.")
		return
	}
	ms, err := q.s.cfg.Store.ListMembersOfUser(q.ctx(), user)
	if err != nil {
		q.errorPageFor(q.internal("looked up the user's memberships", err), "")
		return
	}
	q.finishSignin(p, "dev:"+user, "", user, ms)
}

// pendingForSignin loads a pending request, of either purpose, that nobody has
// signed in to yet.
func (q *request) pendingForSignin(id string) (store.OAuthPending, *pageError) {
	p, pe := q.loadPending(id, purposeAuthorize, purposeGrants, purposeApprove)
	if pe != nil {
		return p, pe
	}
	if p.Subject != "" {
		return store.OAuthPending{}, &pageError{http.StatusConflict, "Already signed in",
			"Someone already signed in to this request. Go back to your application and connect again."}
	}
	return p, nil
}

// callback is GET /oauth/callback: the upstream provider's answer.
func (q *request) callback() {
	if q.s.upstream == nil {
		q.errorPage(http.StatusNotFound, "No identity provider", "This server has no upstream identity provider configured.")
		return
	}
	v := q.r.URL.Query()
	state, _ := single(v, "state")
	p, pe := q.pendingForSignin(state)
	if pe != nil {
		q.page(pe.status, "error", errorView{Title: pe.title, Message: pe.message})
		return
	}
	if upErr, _ := single(v, "error"); upErr != "" {
		// The person cancelled, or the provider refused: the request ends here. The
		// person has approved nothing, so refuseAuthorization decides where the
		// answer goes.
		q.consume(p)
		if p.Purpose == purposeAuthorize {
			q.refuseAuthorization(p.ClientID, p.RedirectURI, p.State, oerr(ErrAccessDenied, "sign-in at the identity provider did not complete ("+quote(upErr)+")"))
			return
		}
		q.errorPage(http.StatusForbidden, "Sign-in did not complete", "The identity provider answered "+quote(upErr)+".")
		return
	}
	code, _ := single(v, "code")
	if code == "" {
		q.errorPage(http.StatusBadRequest, "Sign-in did not complete", "The identity provider's answer carries no code.")
		return
	}
	id, err := q.s.upstream.Exchange(q.ctx(), q.url(pathCallback), code, p.UpstreamVerifier, p.UpstreamNonce)
	if err != nil {
		q.consume(p)
		q.s.log.WarnContext(q.ctx(), "oauth: upstream sign-in failed", "err", err)
		q.errorPage(http.StatusBadGateway, "Sign-in could not be verified",
			"The identity provider's answer could not be verified (its code or ID token was refused). Go back to your application and connect again.")
		return
	}
	if id.Email == "" || !id.EmailVerified {
		q.consume(p)
		q.errorPage(http.StatusForbidden, "Your e-mail address is not verified",
			"The identity provider did not vouch for an e-mail address of yours (email_verified is not true), and AACWorkflow finds people by verified e-mail. Verify your address with the provider and try again.")
		return
	}
	ms, err := q.s.cfg.Store.ListMembersByEmail(q.ctx(), id.Email)
	if err != nil {
		q.errorPageFor(q.internal("looked up the members with your e-mail", err), "")
		return
	}
	q.finishSignin(p, id.Issuer+" "+id.Subject, id.Email, id.Email, ms)
}

// finishSignin records who signed in and moves on: to the consent page, or to the
// grants page. who is how the no-membership page names the person.
func (q *request) finishSignin(p store.OAuthPending, subject, email, who string, ms []store.Member) {
	if len(ms) == 0 {
		q.consume(p)
		q.page(http.StatusForbidden, "nomember", noMemberView{Who: who, Email: email})
		return
	}
	p.Subject, p.Email = subject, email
	p.Accounts = accounts(ms)
	p.CSRFHash = "" // the sign-in form's token is spent
	if err := q.s.cfg.Store.UpdateOAuthPending(q.ctx(), p); err != nil {
		q.pendingWriteFailed(err)
		return
	}
	next := pathConsent
	if p.Purpose == purposeGrants {
		next = pathGrants
	}
	if p.Purpose == purposeApprove {
		next = pathApprove
	}
	q.w.Header().Set("Cache-Control", "no-store")
	http.Redirect(q.w, q.r, q.url(next)+"?request="+url.QueryEscape(p.ID), http.StatusSeeOther)
}

func accounts(ms []store.Member) []store.OAuthAccount {
	out := make([]store.OAuthAccount, 0, len(ms))
	for _, m := range ms {
		out = append(out, store.OAuthAccount{WorkspaceID: m.WorkspaceID, UserID: m.UserID, Role: m.Role})
	}
	slices.SortFunc(out, func(a, b store.OAuthAccount) int { return strings.Compare(a.WorkspaceID, b.WorkspaceID) })
	return out
}

// consume ends a pending request; losing a race to another consumer is fine here.
func (q *request) consume(p store.OAuthPending) {
	if err := q.s.cfg.Store.DeleteOAuthPending(context.WithoutCancel(q.ctx()), p.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
		q.s.log.WarnContext(q.ctx(), "oauth: ending an authorization request failed", "err", err)
	}
}

// pendingWriteFailed reports an UpdateOAuthPending failure: not_found means the
// request expired or was answered meanwhile.
func (q *request) pendingWriteFailed(err error) {
	if errors.Is(err, store.ErrNotFound) {
		q.page(errUnknownRequest.status, "error", errorView{Title: errUnknownRequest.title, Message: errUnknownRequest.message})
		return
	}
	q.errorPageFor(q.internal("updated the authorization request", err), "")
}

// parseForm reads a form-encoded POST body (bounded by ServeOAuth); false means the
// error page has been written.
func (q *request) parseForm() bool {
	ct := q.r.Header.Get("Content-Type")
	if mt, _, _ := strings.Cut(ct, ";"); !strings.EqualFold(strings.TrimSpace(mt), "application/x-www-form-urlencoded") {
		q.errorPage(http.StatusUnsupportedMediaType, "Unexpected form", "The form must be sent as application/x-www-form-urlencoded.")
		return false
	}
	if err := q.r.ParseForm(); err != nil {
		q.errorPage(http.StatusBadRequest, "Unreadable form", "The form could not be read (too large or malformed).")
		return false
	}
	return true
}

// DevSignInAnswers reports whether the dev sign-in page answers requests that reach
// the server as issuer (its public base URL): only when that is a loopback URL.
func DevSignInAnswers(issuer string) bool { return loopbackIssuer(issuer) }

// loopbackIssuer reports whether the server was reached by a loopback name. The dev
// sign-in page lets anyone act as any member: the process listening on loopback is
// not enough (a tunnel or reverse proxy in front of it reaches it there too), so the
// page is also refused to every request that came by a public name.
func loopbackIssuer(issuer string) bool {
	u, err := url.Parse(issuer)
	if err != nil {
		return false
	}
	switch h := u.Hostname(); h {
	case "localhost":
		return true
	default:
		ip := net.ParseIP(h)
		return ip != nil && ip.IsLoopback()
	}
}

func (q *request) devOnLoopbackOnly() {
	q.errorPage(http.StatusForbidden, "The dev sign-in page is for this machine only",
		"This server was reached as "+q.issuer+", not by a loopback address, and its only sign-in is the dev page, which lets anyone act as any member. "+
			"To sign people in through a public URL, start aacmcp serve with --oidc-issuer.")
}
