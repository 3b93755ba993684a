package guard

import (
	"context"
	"errors"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/approval"
	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/catalog"
	"github.com/aacworkflow/aacmcp/shared/confirm"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// humanApproval is the policy approve's step (shared/approval): the call runs
// when the person approved this very call on aacmcp's page, and spends that
// approval; otherwise it is answered with the page's link, as a URL elicitation
// to a client that declares one, as human_approval_required to every other
// (REST included). The approval is found by the call's binding, so the same call
// made again needs no state; an MRTR retry's requestState (the link token) must
// open and name the same approval. What is asked about is chosen as under
// elicit: only a delete the tool would perform.
func (g *Guard) humanApproval(ctx context.Context, c *call, p auth.Principal, roleOf func() store.Role, t catalog.Tool, a *args) (*InputRequired, *apperr.Error) {
	if g.approvals == nil {
		return nil, apperr.Internal(errors.New("the workspace policy is approve, and this server has no approval store"))
	}
	got, tg, want, ask, aerr := g.asked(ctx, c, p, roleOf, t, a, audit.ConfirmationApproved)
	if aerr != nil || !ask {
		return nil, aerr
	}
	retry := c.req.RequestState != ""
	if retry && got.Check(want) != nil {
		return nil, errConfirmationInvalid()
	}
	binding := approval.Binding(want)
	spent, err := g.approvals.SpendApproval(ctx, p.WorkspaceID, binding, got.Nonce, c.now)
	switch {
	case err == nil && spent.Status == store.ApprovalGranted:
		return nil, nil
	case err == nil:
		return nil, apperr.New(apperr.ConfirmationDeclined, "the person denied the delete on the approval page; nothing was changed")
	case !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrConflict):
		return nil, errorOf(err)
	}
	// Nothing decided to spend. A pending approval of this call is asked about
	// again with the same link; a retry naming any other is refused.
	cur, err := g.approvals.GetApproval(ctx, p.WorkspaceID, binding)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, errorOf(err)
	}
	live := err == nil && cur.Status == store.ApprovalPending && c.now.Before(cur.ExpiresAt)
	if retry && (!live || cur.Nonce != got.Nonce) {
		return nil, errConfirmationInvalid()
	}
	token, id := cur.Token, cur.Nonce
	if !live {
		var sealed confirm.Claims
		token, sealed, err = g.keys.Seal(want, c.now)
		if err != nil {
			return nil, apperr.Internal(err)
		}
		err = g.approvals.PutApproval(ctx, store.Approval{
			Workspace: p.WorkspaceID, Binding: binding, Nonce: sealed.Nonce, Token: token,
			User: p.UserID, Principal: p.TokenID, ClientID: p.ClientID, Tool: t.Name, Target: a.stringArg(t.ResourceArg),
			RequestedAt: c.now, ExpiresAt: sealed.Expires,
		})
		if err != nil {
			return nil, errorOf(err)
		}
		id = sealed.Nonce
	}
	link := approval.Link(c.req.PublicURL, token)
	msg := approval.Message(t.Confirm.Item(tg), link)
	if c.req.CanElicitURL {
		return &InputRequired{State: token, URL: link, Message: msg, ID: id}, nil
	}
	return nil, apperr.New(apperr.HumanApprovalRequired, msg)
}
