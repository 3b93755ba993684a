package oauth

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"

	"github.com/oklog/ulid/v2"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/oauth/clientmeta"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// consentForm is the decoded POST /oauth/consent body.
type consentForm struct {
	Request, CSRF, Workspace string
	Allow                    bool
	Scopes                   []string // sorted, deduplicated, each a known scope
}

// parseConsentForm decodes the consent form. It checks the shape only; whether the
// request, token, workspace and scopes are the ones offered is checked against the
// pending request.
func parseConsentForm(v url.Values) (consentForm, *Error) {
	var f consentForm
	var e *Error
	if f.Request, e = param(v, "request", true); e != nil {
		return f, e
	}
	if f.CSRF, e = param(v, "csrf", false); e != nil {
		return f, e
	}
	if f.Workspace, e = param(v, "workspace", false); e != nil {
		return f, e
	}
	action, e := param(v, "action", true)
	if e != nil {
		return f, e
	}
	switch action {
	case "allow":
		f.Allow = true
	case "deny":
	default:
		return f, oerr(ErrInvalidRequest, "action must be allow or deny")
	}
	for _, s := range v["scope"] {
		sc, e := parseScope(s)
		if e != nil {
			return f, e
		}
		if len(sc) != 1 {
			return f, oerr(ErrInvalidScope, "each scope checkbox carries one scope name")
		}
		f.Scopes = append(f.Scopes, sc[0])
	}
	if len(f.Scopes) > 0 {
		f.Scopes = slices.Compact(slices.Sorted(slices.Values(f.Scopes)))
	}
	return f, nil
}

// offered is what the consent page offers: the requested scopes, or all of them
// when the client asked for none.
func offered(p store.OAuthPending) []string {
	if len(p.Scopes) == 0 {
		return slices.Clone(auth.AllScopes)
	}
	return p.Scopes
}

// liveGrant is the person's newest unrevoked, unexpired grant to clientID in acct's
// workspace: a new consent is then a step-up and adds to its scopes.
func (q *request) liveGrant(ctx context.Context, clientID string, acct store.OAuthAccount) (store.OAuthGrant, bool, error) {
	gs, err := q.s.cfg.Store.ListOAuthGrants(ctx, acct.WorkspaceID, acct.UserID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return store.OAuthGrant{}, false, err
	}
	now := q.s.now()
	for _, g := range gs { // newest first
		if g.ClientID == clientID && g.RevokedAt == nil && now.Before(g.ExpiresAt) {
			return g, true, nil
		}
	}
	return store.OAuthGrant{}, false, nil
}

type consentView struct {
	Action, Request, CSRF, GrantsURL string
	ClientName, ClientID, ClientHost string
	RedirectHost, Who                string
	Accounts                         []accountView
	Granted                          []string // already allowed (step-up)
	GrantedIn                        string   // their workspace, when a chooser is shown
	Scopes                           []scopeView
	Chosen                           bool // the client asked for nothing in particular
}

type accountView struct {
	WorkspaceID string
	Role        store.Role
	Selected    bool
}

type scopeView struct {
	scopeInfo
	Checked bool
}

// consent is GET|POST /oauth/consent.
func (q *request) consent() {
	if q.r.Method == http.MethodPost {
		q.consentPost()
		return
	}
	ctx := q.ctx()
	p, pe := q.loadPending(pendingParam(q.r.URL.Query()), purposeAuthorize)
	if pe == nil && p.Subject == "" {
		pe = &pageError{http.StatusForbidden, "Not signed in", "Sign in first: go back to your application and connect again."}
	}
	if pe != nil {
		q.errorPage(pe.status, pe.title, pe.message)
		return
	}
	// The default workspace is the one where this client already holds a grant: a
	// new authorization from it is most likely a step-up there.
	sel := 0
	var existing store.OAuthGrant
	for i, a := range p.Accounts {
		g, ok, err := q.liveGrant(ctx, p.ClientID, a)
		if err != nil {
			q.errorPageFor(q.internal("read your existing grants", err), "")
			return
		}
		if ok && (existing.ID == "" || g.CreatedAt.After(existing.CreatedAt)) {
			sel, existing = i, g
		}
	}
	v := consentView{
		Action: q.url(pathConsent), Request: p.ID, GrantsURL: q.url(pathGrants),
		ClientName: p.ClientName, ClientID: p.ClientID, RedirectHost: hostOf(p.RedirectURI),
		Who: p.Email, Granted: existing.Scopes, Chosen: len(p.Scopes) == 0,
	}
	if v.Who == "" {
		v.Who = p.Accounts[0].UserID
	}
	if clientmeta.IsMetadataURL(p.ClientID) {
		v.ClientHost = hostOf(p.ClientID)
	}
	for i, a := range p.Accounts {
		v.Accounts = append(v.Accounts, accountView{WorkspaceID: a.WorkspaceID, Role: a.Role, Selected: i == sel})
	}
	if len(p.Accounts) > 1 && existing.ID != "" {
		v.GrantedIn = existing.WorkspaceID
	}
	for _, s := range minus(offered(p), existing.Scopes) {
		// Requested scopes are offered checked; when the person chooses, reads are
		// checked and writes are not.
		v.Scopes = append(v.Scopes, scopeView{scopeInfo: q.s.scope(s), Checked: !v.Chosen || isReadScope(s)})
	}
	csrf := randomString()
	p.CSRFHash = auth.Hash(csrf)
	if err := q.s.cfg.Store.UpdateOAuthPending(ctx, p); err != nil {
		q.pendingWriteFailed(err)
		return
	}
	v.CSRF = csrf
	q.pageCSP(http.StatusOK, "consent", v, originOf(p.RedirectURI))
}

func (q *request) consentPost() {
	ctx := q.ctx()
	if !q.parseForm() {
		return
	}
	f, e := parseConsentForm(q.r.PostForm)
	if e != nil {
		q.errorPage(http.StatusBadRequest, "This form is not valid", e.Description)
		return
	}
	p, pe := q.loadPending(f.Request, purposeAuthorize)
	if pe == nil && p.Subject == "" {
		pe = &pageError{http.StatusForbidden, "Not signed in", "Sign in first: go back to your application and connect again."}
	}
	if pe != nil {
		q.errorPage(pe.status, pe.title, pe.message)
		return
	}
	if !hashEqual(f.CSRF, p.CSRFHash) {
		// Not consumed: a forged POST must not be able to end the person's request.
		q.errorPage(http.StatusForbidden, "This form has expired",
			"The consent form was not submitted from the page this server rendered (its CSRF token is missing or stale). Nothing was allowed. Reload the consent page and try again.")
		return
	}
	// Consuming the request is the single-use check: of two submissions of one form,
	// exactly one gets past here.
	if err := q.s.cfg.Store.DeleteOAuthPending(ctx, p.ID); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			q.errorPage(errUnknownRequest.status, errUnknownRequest.title, errUnknownRequest.message)
			return
		}
		q.errorPageFor(q.internal("answered the authorization request", err), "")
		return
	}
	acct, ok := findAccount(p.Accounts, f.Workspace, len(p.Accounts) == 1)
	ev := q.event(audit.ActionConsentDenied)
	ev.clientID, ev.name, ev.requested = p.ClientID, p.ClientName, p.Scopes
	ev.workspace, ev.user = acct.WorkspaceID, acct.UserID
	if !ok && f.Allow {
		q.errorPage(http.StatusBadRequest, "Unknown workspace", "The chosen workspace is not one of yours. Nothing was allowed; connect again.")
		return
	}
	if !f.Allow {
		q.denyConsent(ctx, ev, p, "the person denied access")
		return
	}
	if !subset(f.Scopes, offered(p)) {
		q.errorPage(http.StatusBadRequest, "Unexpected scope", "The form allows a scope that was not offered. Nothing was allowed; connect again.")
		return
	}
	existing, _, err := q.liveGrant(ctx, p.ClientID, acct)
	if err != nil {
		q.errorPageFor(q.internal("read your existing grants", err), "")
		return
	}
	granted := union(f.Scopes, existing.Scopes)
	if len(granted) == 0 {
		q.denyConsent(ctx, ev, p, "the person allowed no scope")
		return
	}

	now := q.s.now().UTC()
	g := store.OAuthGrant{
		ID:       "grant_" + ulid.MustNew(ulid.Timestamp(now), ulid.DefaultEntropy()).String(),
		ClientID: p.ClientID, ClientName: p.ClientName,
		WorkspaceID: acct.WorkspaceID, UserID: acct.UserID,
		Scopes: granted, Resource: p.Resource,
		CreatedAt: now, LastUsedAt: now, ExpiresAt: now.Add(q.s.cfg.RefreshTokenTTL),
	}
	if err := q.s.cfg.Store.CreateOAuthGrant(ctx, g); err != nil {
		q.errorPageFor(q.internal("stored the grant", err), "")
		return
	}
	code := randomString()
	if err := q.s.cfg.Store.CreateOAuthCode(ctx, store.OAuthCode{
		Hash: auth.Hash(code), GrantID: g.ID, ClientID: p.ClientID, RedirectURI: p.RedirectURI,
		CodeChallenge: p.CodeChallenge, Resource: p.Resource, Scopes: granted,
		WorkspaceID: acct.WorkspaceID, UserID: acct.UserID, CreatedAt: now, ExpiresAt: now.Add(CodeTTL),
	}); err != nil {
		q.revokeQuietly(g.ID)
		q.errorPageFor(q.internal("stored the authorization code", err), "")
		return
	}
	ev.action, ev.grantID, ev.scopes = audit.ActionConsentGranted, g.ID, granted
	if q.s.record(ctx, ev) != nil {
		q.revokeQuietly(g.ID)
		q.errorPage(http.StatusInternalServerError, "Something went wrong", "Your answer could not be recorded, so nothing was allowed. Connect again.")
		return
	}
	q.redirectTo(p.RedirectURI, p.State, url.Values{"code": {code}})
}

// findAccount picks the account of workspace ws; with only one account an empty ws
// means it.
func findAccount(accts []store.OAuthAccount, ws string, only bool) (store.OAuthAccount, bool) {
	if ws == "" && only && len(accts) == 1 {
		return accts[0], true
	}
	for _, a := range accts {
		if a.WorkspaceID == ws {
			return a, true
		}
	}
	return store.OAuthAccount{}, false
}

// revokeQuietly undoes a grant whose code could not be handed out.
func (q *request) revokeQuietly(id string) {
	if _, err := q.s.cfg.Store.UpdateOAuthGrantRevoked(context.WithoutCancel(q.ctx()), id, q.s.now().UTC()); err != nil {
		q.s.log.ErrorContext(q.ctx(), "oauth: revoking an unissued grant failed", "grant_id", id, "err", err)
	}
}

// denyConsent answers a consent that allows nothing: the denial is recorded first,
// and the client gets access_denied (why) only once it is; a denial that cannot be
// recorded is an error page, and still allows nothing.
func (q *request) denyConsent(ctx context.Context, ev event, p store.OAuthPending, why string) {
	ev.denied = apperr.PermissionDenied
	if q.s.record(ctx, ev) != nil {
		q.errorPage(http.StatusInternalServerError, "Something went wrong", "Your answer could not be recorded. Nothing was allowed.")
		return
	}
	q.redirectError(p.RedirectURI, p.State, oerr(ErrAccessDenied, why))
}
