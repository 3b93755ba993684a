package oauth

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/approval"
	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/oauth/clientmeta"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// The approval page (workspace policy approve, shared/approval). It signs the
// person in with the authorization server's own sign-in (a pending record of
// purpose approve, whose State holds the link token), shows what the call would
// destroy and who asked, and records Approve (the key typed) or Deny. Only the
// call's member may decide. Every decision, and every refusal of a signed-in
// person's attempt, is an authorization record.
const (
	pathApprove    = approval.PagePath
	purposeApprove = "approve"
)

type approveView struct {
	Done, Message                           string
	Action, Request, CSRF, Who, Notice      string
	Question, Kind, Key, Title, Expect      string
	HasComments                             bool
	Comments                                int64
	User, Workspace, ClientName, ClientHost string
	Tool, Asked                             string
}

// approvePage is GET|POST /oauth/approve.
func (q *request) approvePage() {
	d := q.s.cfg.Approvals
	if d == nil {
		q.errorPage(http.StatusNotFound, "No approvals here", "This server does not ask people to approve deletes.")
		return
	}
	if q.r.Method == http.MethodPost {
		q.approveDecide(d)
		return
	}
	v := q.r.URL.Query()
	if id := pendingParam(v); id != "" {
		p, pe := q.loadPending(id, purposeApprove)
		if pe == nil && p.Subject == "" {
			pe = &pageError{http.StatusForbidden, "Not signed in", "Sign in first: open the approval link again."}
		}
		if pe != nil {
			q.errorPage(pe.status, pe.title, pe.message)
			return
		}
		q.approveForm(d, p, "")
		return
	}
	token, _ := single(v, approval.TokenParam)
	// The link is judged before anyone signs in: a forged, edited or expired one
	// ends here, and no sign-in is started for it.
	if _, err := d.Open(q.ctx(), token, q.s.now()); err != nil {
		q.approveRefused(err, store.OAuthPending{}, nil)
		return
	}
	q.startSignin(store.OAuthPending{Purpose: purposeApprove, State: token})
}

// openMine opens the approval of p's link for the person signed in to p. When it
// is not theirs, or cannot be opened, the refusal page is written and ok is false.
func (q *request) openMine(d *approval.Desk, p store.OAuthPending, now time.Time) (a approval.Ask, ok bool) {
	a, err := d.Open(q.ctx(), p.State, now)
	if err != nil {
		q.approveRefused(err, p, nil)
		return a, false
	}
	if !a.Mine(p.Accounts) {
		q.approveRefused(errNotYours, p, &a)
		return a, false
	}
	return a, true
}

// approveForm renders the question to the signed-in person of p, with a fresh
// CSRF token for the form.
func (q *request) approveForm(d *approval.Desk, p store.OAuthPending, notice string) {
	a, ok := q.openMine(d, p, q.s.now())
	if !ok {
		return
	}
	csrf := randomString()
	p.CSRFHash = auth.Hash(csrf)
	if err := q.s.cfg.Store.UpdateOAuthPending(q.ctx(), p); err != nil {
		q.pendingWriteFailed(err)
		return
	}
	v := approveView{
		Action: q.url(pathApprove), Request: p.ID, CSRF: csrf, Who: signedIn(p), Notice: notice,
		Question: a.Question, Kind: a.Item.Kind, Key: a.Item.Key, Title: a.Item.Title, Expect: a.Expect,
		User: a.Claims.User, Workspace: a.Claims.Workspace, Tool: a.Claims.Tool,
		Asked: a.Approval.RequestedAt.UTC().Format(time.DateTime) + " UTC",
	}
	if v.Key == "" {
		v.Key = a.Item.Parent
	}
	if v.Kind != "" {
		// A row heading: "Issue", "Comment".
		v.Kind = strings.ToUpper(v.Kind[:1]) + v.Kind[1:]
	}
	if a.Item.Comments != nil {
		v.HasComments, v.Comments = true, *a.Item.Comments
	}
	v.ClientName, v.ClientHost = q.clientOf(a.Approval.ClientID)
	q.page(http.StatusOK, "approve", v)
}

// clientOf names the OAuth client a call came through: its registered or
// published name and the client id's host; "personal token" when there is none.
func (q *request) clientOf(clientID string) (name, host string) {
	if clientID == "" {
		return "", "personal token"
	}
	if clientmeta.IsMetadataURL(clientID) {
		host = hostOf(clientID)
	} else {
		host = "registered client " + clientID
	}
	if c, err := q.s.cfg.Store.GetOAuthClient(q.ctx(), clientID); err == nil {
		name = c.Name
	}
	return name, host
}

// approveDecide is POST /oauth/approve: Approve (with the key typed) or Deny.
func (q *request) approveDecide(d *approval.Desk) {
	if !q.parseForm() {
		return
	}
	v := q.r.PostForm
	p, pe := q.loadPending(pendingParam(v), purposeApprove)
	if pe == nil && p.Subject == "" {
		pe = &pageError{http.StatusForbidden, "Not signed in", "Sign in first: open the approval link again."}
	}
	if pe != nil {
		q.errorPage(pe.status, pe.title, pe.message)
		return
	}
	csrf, _ := single(v, "csrf")
	if p.CSRFHash == "" || !hashEqual(csrf, p.CSRFHash) {
		q.errorPage(http.StatusForbidden, "This form has expired", "The approval form was not submitted from the page this server rendered (its CSRF token is missing or stale). Open the approval link again.")
		return
	}
	now := q.s.now()
	a, ok := q.openMine(d, p, now)
	if !ok {
		return
	}
	decision, _ := single(v, "decision")
	grant := decision == "approve"
	if !grant && decision != "deny" {
		q.errorPage(http.StatusBadRequest, "Unexpected form", "Press Approve or Deny.")
		return
	}
	typed, _ := single(v, "typed")
	err := d.Decide(q.ctx(), a, grant, typed, p.Subject, sourceIP(q.r.RemoteAddr), now)
	if errors.Is(err, approval.ErrWrongKey) {
		// The question stays open: a slip of the keyboard is not a denial.
		q.approveForm(d, p, "What you typed is not "+a.Expect+". Type the key exactly as shown, or press Deny.")
		return
	}
	if err != nil {
		q.approveRefused(err, p, &a)
		return
	}
	q.consume(p)
	action, done, msg := audit.ActionApprovalGranted, "Approved",
		"Go back to your application and make the same call again: it runs once, within "+minutes(a.Approval.ExpiresAt.Sub(now))+"."
	if !grant {
		action, done, msg = audit.ActionApprovalDenied, "Denied", "Nothing will be deleted. The application's call is refused when it is made again."
	}
	if err := q.s.record(q.ctx(), q.approvalEvent(action, "", p, &a)); err != nil {
		// The decision stands (it changed nothing yet); the record's failure is logged by record.
		q.s.log.ErrorContext(q.ctx(), "oauth: an approval decision was not audited", "err", err)
	}
	q.page(http.StatusOK, "approve", approveView{Done: done, Message: msg})
}

// minutes says how long d is, for a person.
func minutes(d time.Duration) string {
	n := int(d.Round(time.Minute) / time.Minute)
	if n <= 1 {
		return "a minute"
	}
	return strconv.Itoa(n) + " minutes"
}

// errNotYours: the signed-in person is not the call's member.
var errNotYours = errors.New("approval: signed in as another member")

// approveRefused shows why the link cannot be decided, and records it when a
// person had signed in (an attempt by a known identity) or the link was forged.
func (q *request) approveRefused(err error, p store.OAuthPending, a *approval.Ask) {
	title, msg, status := "This approval link is not valid", "The link is damaged or was not made by this server. Go back to your application and make the call again for a new link.", http.StatusBadRequest
	reason := apperr.ConfirmationInvalid
	switch {
	case errors.Is(err, errNotYours):
		title, status, reason = "This approval is not yours", http.StatusForbidden, apperr.PermissionDenied
		msg = "The call was made by someone else. Only they can approve it, signed in as themselves."
		if sameWorkspace(p.Accounts, a.Claims.Workspace) {
			// A fellow member may learn who asked; anyone else learns nothing.
			msg = "The call was made by another member (" + a.Claims.User + " in workspace " + a.Claims.Workspace + "). Only they can approve it, signed in as themselves."
		}
	case errors.Is(err, approval.ErrExpired):
		title, status = "This approval link has expired", http.StatusGone
		msg = "Approval links are valid for 5 minutes. Go back to your application and make the call again for a new link."
	case errors.Is(err, approval.ErrReplaced):
		title, status = "This approval link was replaced", http.StatusGone
		msg = "A newer link was made for the same call. Use the newest link your application shows."
	case errors.Is(err, approval.ErrDecided):
		title, status = "This approval was already decided", http.StatusConflict
		msg = "Someone already approved or denied this call, or it already ran. Make the call again for a new link."
	case errors.Is(err, approval.ErrChanged):
		title, status = "The item changed", http.StatusConflict
		msg = "What the call would delete was edited or deleted since it asked. Make the call again to approve what is there now."
	case !errors.Is(err, approval.ErrInvalid):
		q.errorPageFor(q.internal("read the approval", err), "")
		return
	}
	if p.Subject != "" || errors.Is(err, approval.ErrInvalid) {
		ev := q.approvalEvent(audit.ActionApprovalGranted, reason, p, a)
		_ = q.s.record(context.WithoutCancel(q.ctx()), ev)
	}
	if p.ID != "" {
		q.consume(p)
	}
	q.errorPage(status, title, msg)
}

// approvalEvent is the authorization record of a decision or a refused attempt:
// the signed-in identity (the call's member when it is theirs, else the
// person's first account), the call's principal and client, the item, and the
// browser's address.
func (q *request) approvalEvent(action string, denied apperr.Code, p store.OAuthPending, a *approval.Ask) event {
	ev := q.event(action)
	ev.denied = denied
	ev.name = signedIn(p)
	if len(p.Accounts) > 0 {
		ev.workspace, ev.user = p.Accounts[0].WorkspaceID, p.Accounts[0].UserID
	}
	if a != nil {
		ev.clientID, ev.tokenID, ev.grantID = a.Approval.ClientID, a.Approval.Principal, a.Approval.Target
		if a.Mine(p.Accounts) {
			ev.workspace, ev.user = a.Claims.Workspace, a.Claims.User
		}
	}
	return ev
}

func sameWorkspace(accounts []store.OAuthAccount, ws string) bool {
	for _, acc := range accounts {
		if acc.WorkspaceID == ws {
			return true
		}
	}
	return false
}

// signedIn names the person as the pages do: their e-mail, else their user id.
func signedIn(p store.OAuthPending) string {
	if p.Email != "" {
		return p.Email
	}
	if len(p.Accounts) > 0 {
		return p.Accounts[0].UserID
	}
	return p.Subject
}
