package guard

import (
	"context"
	"errors"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/audit/record"
	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/catalog"
	"github.com/aacworkflow/aacmcp/shared/confirm"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// InputRequired is a destructive call's answer under the elicit and require
// policies when the person has not been asked yet: the transport renders it as
// an MRTR input_required result (inputRequests[confirm.ElicitationID] holding
// Question as a form elicitation, and State as requestState).
type InputRequired struct {
	State    string
	Question confirm.Question
	// URL, when set, makes it a URL elicitation instead (the policy approve): the
	// client opens URL, the approval page, for the person, with Message beside
	// it, and retries with State once they are done. ID names the approval
	// (its nonce) as the URL elicitation's elicitationId.
	URL, Message, ID string
}

// humanConfirmation is the workspace policy step for a destructive call that
// already carries confirm: true. It lives here only, so /mcp on every revision
// and REST get the same answer. A nil error and nil InputRequired means the call
// proceeds to the tool: under the flag policy, after an accepted answer whose
// nonce is now spent, and when there is nothing to ask about. That last case is
// an item the caller may not delete (the tool refuses it with permission_denied)
// or one that is not there (the tool answers a repeat of a delete already made
// from its tombstone, or not_found): a person is asked only about a delete the
// tool would perform, and no nonce is spent on any other. Proceeding is safe
// because the tool judges the same item by the same role: ids are never reused,
// and keys come from a sequence that never goes back.
//
// roleOf gives the caller's role, waiting for the member check where that runs
// beside this step (runSteps, overlapped); it is asked only once the item is read.
func (g *Guard) humanConfirmation(ctx context.Context, c *call, p auth.Principal, roleOf func() store.Role, t catalog.Tool, a *args) (*InputRequired, *apperr.Error) {
	policy, aerr := g.DestructiveConfirmation(ctx, p.WorkspaceID)
	if aerr != nil {
		return nil, aerr
	}
	if policy == confirm.PolicyFlag {
		return nil, nil
	}
	if policy == confirm.PolicyApprove {
		return g.humanApproval(ctx, c, p, roleOf, t, a)
	}
	if !c.req.CanElicit {
		if policy == confirm.PolicyRequire {
			return nil, apperr.New(apperr.HumanConfirmationRequired,
				"this workspace requires a person to confirm deletes: use an MCP client that supports form elicitation at protocol 2026-07-28")
		}
		return nil, nil
	}
	got, tg, want, ask, aerr := g.asked(ctx, c, p, roleOf, t, a, audit.ConfirmationElicited)
	if aerr != nil || !ask {
		return nil, aerr
	}
	q, err := confirm.Ask(t.Confirm.Item(tg))
	if err != nil {
		return nil, apperr.Internal(err)
	}
	if c.req.RequestState == "" {
		state, _, err := g.keys.Seal(want, c.now)
		if err != nil {
			return nil, apperr.Internal(err)
		}
		return &InputRequired{State: state, Question: q}, nil
	}
	// The retry. Every check of the state runs before the answer is read, so a
	// forged state learns nothing from the answer's handling.
	if err := got.Check(want); err != nil {
		return nil, errConfirmationInvalid()
	}
	ans, ok, err := confirm.DecodeAnswer(c.req.InputResponses)
	if err != nil || !ok {
		return nil, apperr.New(apperr.ConfirmationInvalid, "inputResponses carries no answer to the confirmation")
	}
	// Spent before the answer is judged, whatever the verdict: a declined or
	// mistyped answer ends the question (the same state sent again with the right
	// value is a replay), and an accepted one deletes at most once.
	if err := g.confirms.ConsumeConfirmationNonce(ctx, p.WorkspaceID, got.Nonce, got.Expires); err != nil {
		return nil, errorOf(err)
	}
	if err := q.Check(ans); err != nil {
		return nil, apperr.New(apperr.ConfirmationDeclined, "the person did not confirm the delete; nothing was changed")
	}
	return nil, nil
}

// asked is what the elicit, require and approve policies share before they put
// or judge their question: the retry's state opened, the item read, whether a
// person is asked at all (ask false: the call proceeds to the tool, see
// humanConfirmation), and the claims the answer is bound to. From the first
// judgement of a retry, and once a person is to be asked, the record's
// confirmation is kind, whatever the verdict.
//
// A retry's state is opened before the item is read: a replay after the delete
// it confirmed (the item is gone) is then told confirmation_invalid, which is
// what it is, rather than not_found.
func (g *Guard) asked(ctx context.Context, c *call, p auth.Principal, roleOf func() store.Role, t catalog.Tool, a *args, kind string) (got confirm.Claims, tg catalog.Target, want confirm.Claims, ask bool, aerr *apperr.Error) {
	retry := c.req.RequestState != ""
	if retry {
		record.SetConfirmation(&c.rec, kind)
		var err error
		if got, err = g.keys.Open(c.req.RequestState, c.now); err != nil {
			return got, tg, want, false, errConfirmationInvalid()
		}
	}
	tg, aerr = g.confirmTarget(ctx, p, t, a)
	switch {
	case aerr != nil && aerr.Code == apperr.NotFound && retry:
		return got, tg, want, false, errConfirmationInvalid()
	case aerr != nil && aerr.Code == apperr.NotFound:
		return got, tg, want, false, nil
	case aerr != nil:
		return got, tg, want, false, aerr
	case !catalog.MayDelete(roleOf(), p.UserID, tg.Owner):
		return got, tg, want, false, nil
	}
	record.SetConfirmation(&c.rec, kind)
	want = confirm.Claims{
		Workspace:   p.WorkspaceID,
		User:        p.UserID,
		Principal:   p.TokenID,
		Tool:        t.Name,
		ArgsDigest:  a.digestWithout(confirmArg),
		ItemVersion: tg.Version,
	}
	return got, tg, want, true, nil
}

func errConfirmationInvalid() *apperr.Error {
	return apperr.New(apperr.ConfirmationInvalid, "the confirmation is not valid for this call; call again without requestState to be asked again")
}

// DestructiveConfirmation is the policy the guard enforces on ws's destructive
// tools: the stored one, or flag when this guard has no policy store or key (the
// policy step is off) or the stored value is unknown (it cannot be set through
// the CLI; it is treated as the default rather than failing every delete in the
// workspace). GET /tools reports it, so what it says is what a call gets.
func (g *Guard) DestructiveConfirmation(ctx context.Context, ws string) (confirm.Policy, *apperr.Error) {
	if g.confirms == nil || g.keys == nil {
		return confirm.PolicyFlag, nil
	}
	raw, err := g.confirms.DestructiveConfirmation(ctx, ws)
	if err != nil {
		return "", errorOf(err)
	}
	policy, err := confirm.ParsePolicy(raw)
	if err != nil {
		return confirm.PolicyFlag, nil
	}
	return policy, nil
}

// confirmArg is the argument the seal's digest leaves out: the first call and
// its retry both carry it, and it says nothing about what is deleted.
const confirmArg = "confirm"

// confirmTarget reads what the call would delete, by the tool's declaration
// (catalog.Confirmation), for the question, the seal's item version and the owner
// the delete tools' permission rule judges. The person is shown the item's
// parent whatever the token's scopes: the question goes to them, not the model.
func (g *Guard) confirmTarget(ctx context.Context, p auth.Principal, t catalog.Tool, a *args) (catalog.Target, *apperr.Error) {
	if t.Confirm == nil {
		return catalog.Target{}, apperr.Internal(errors.New("destructive tool " + t.Name + " declares no confirmation"))
	}
	tg, err := t.Confirm.Load(ctx, g.store, p.WorkspaceID, a.stringArg(t.ResourceArg), true)
	if err != nil {
		return catalog.Target{}, errorOf(err)
	}
	return tg, nil
}

// errUnconfirmed is the refusal of a destructive call without confirm: true, the
// same bytes for every caller the preview is not for.
func errUnconfirmed() *apperr.Error {
	return apperr.New(apperr.DestructiveFlagMissing, "confirm: true required for destructive operations")
}

// unconfirmed refuses a destructive call that lacks confirm: true, with a preview
// of the item when the caller could have read it and deleted it.
func (g *Guard) unconfirmed(ctx context.Context, c *call, p auth.Principal, t catalog.Tool, a *args) *apperr.Error {
	e := errUnconfirmed()
	e.Preview = g.preview(ctx, c, p, t, a)
	return e
}

// preview is the item a refused delete names, or nil. Its checks run in the order
// that keeps the refusal from telling anyone more than get_issue or list_comments
// would: the read scope first (no store read for a token that could not read the
// item), then the rate limit (the preview is a read, and must not be a way around
// the limit on reads), then the member record and role (a viewer or a non-member
// learns nothing), then the item itself in the caller's workspace (an id of
// another workspace, an unknown id and a tombstone all read as not found), then
// the delete tools' own permission rule (catalog.MayDelete: a member sees only
// what they could delete). Every failure, a store error included, is nil: the
// refusal is then exactly what it was before previews existed, so its bytes say
// nothing about why.
func (g *Guard) preview(ctx context.Context, c *call, p auth.Principal, t catalog.Tool, a *args) *apperr.Preview {
	cf := t.Confirm
	if cf == nil || a.obj == nil || !p.Has(cf.ReadScope) {
		return nil
	}
	if g.limiter != nil {
		retry, err := g.limiter.Allow(ctx, p, t.Name, c.now)
		if err != nil || retry > 0 {
			return nil
		}
	}
	role, aerr := g.role(ctx, p, t)
	if aerr != nil {
		return nil
	}
	ref := a.stringArg(t.ResourceArg)
	if ref == "" {
		return nil
	}
	tg, err := cf.Load(ctx, g.store, p.WorkspaceID, ref, cf.ParentScope != "" && p.Has(cf.ParentScope))
	if err != nil || !catalog.MayDelete(role, p.UserID, tg.Owner) {
		return nil
	}
	pv := &apperr.Preview{Kind: tg.Kind, ID: tg.ID, Key: tg.Key, Title: confirm.Plain(tg.Title, confirm.MaxTitleRunes), CommentCount: tg.Comments}
	if pv.Key == "" {
		// An item without a key of its own is named by its parent's.
		pv.Key = tg.Parent
	}
	return pv
}
