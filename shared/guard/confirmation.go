package guard

import (
	"context"
	"errors"
	"strconv"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/catalog"
	"github.com/aacworkflow/aacmcp/shared/confirm"
)

// InputRequired is a destructive call's answer under the elicit and require
// policies when the person has not been asked yet: the transport renders it as
// an MRTR input_required result (inputRequests[confirm.ElicitationID] holding
// Question as a form elicitation, and State as requestState).
type InputRequired struct {
	State    string
	Question confirm.Question
}

// humanConfirmation is the workspace policy step for a destructive call that
// already carries confirm: true. It runs after permission, so nobody is asked
// about an item they could not delete, and it lives here only, so /mcp on every
// revision and REST get the same answer. A nil error and nil InputRequired means
// the call proceeds (flag policy, or an accepted answer whose nonce is now spent).
func (g *Guard) humanConfirmation(ctx context.Context, c *call, p auth.Principal, t catalog.Tool, a *args) (*InputRequired, *apperr.Error) {
	if g.confirms == nil || g.keys == nil {
		return nil, nil
	}
	raw, err := g.confirms.DestructiveConfirmation(ctx, p.WorkspaceID)
	if err != nil {
		return nil, errorOf(err)
	}
	policy, err := confirm.ParsePolicy(raw)
	if err != nil || policy == confirm.PolicyFlag {
		// An unknown stored value cannot be set through the CLI; it is treated
		// as the default rather than failing every delete in the workspace.
		return nil, nil
	}
	if !c.req.CanElicit {
		if policy == confirm.PolicyRequire {
			return nil, apperr.New(apperr.HumanConfirmationRequired,
				"this workspace requires a person to confirm deletes: use an MCP client that supports form elicitation at protocol 2026-07-28")
		}
		return nil, nil
	}
	item, version, aerr := g.confirmItem(ctx, p, t, a)
	if aerr != nil {
		return nil, aerr
	}
	want := confirm.Claims{
		Workspace:   p.WorkspaceID,
		User:        p.UserID,
		Principal:   p.TokenID,
		Tool:        t.Name,
		ArgsDigest:  a.digestWithout(confirmArg),
		ItemVersion: version,
	}
	q, err := confirm.Ask(item)
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
	got, err := g.keys.Open(c.req.RequestState, c.now)
	if err == nil {
		err = got.Check(want)
	}
	if err != nil {
		return nil, apperr.New(apperr.ConfirmationInvalid, "the confirmation is not valid for this call; call again without requestState to be asked again")
	}
	ans, ok, err := confirm.DecodeAnswer(c.req.InputResponses)
	if err != nil || !ok {
		return nil, apperr.New(apperr.ConfirmationInvalid, "inputResponses carries no answer to the confirmation")
	}
	if err := q.Check(ans); err != nil {
		return nil, apperr.New(apperr.ConfirmationDeclined, "the person did not confirm the delete; nothing was changed")
	}
	// Spent before the delete: a retried retry finds the nonce used and is
	// refused, so one answer deletes at most once.
	if err := g.confirms.ConsumeConfirmationNonce(ctx, p.WorkspaceID, got.Nonce, got.Expires); err != nil {
		return nil, errorOf(err)
	}
	return nil, nil
}

// confirmArg is the argument the seal's digest leaves out: the first call and
// its retry both carry it, and it says nothing about what is deleted.
const confirmArg = "confirm"

// confirmItem reads what the call would delete, for the question and the seal's
// item version.
func (g *Guard) confirmItem(ctx context.Context, p auth.Principal, t catalog.Tool, a *args) (confirm.Item, string, *apperr.Error) {
	switch t.Name {
	case "delete_issue":
		is, err := g.store.GetIssue(ctx, p.WorkspaceID, a.stringArg("issue_id"))
		if err != nil {
			return confirm.Item{}, "", errorOf(err)
		}
		return confirm.Item{Kind: "issue", Key: is.Key, Title: is.Title, Comments: int(is.CommentCount)},
			strconv.FormatInt(is.Version, 10), nil
	case "delete_comment":
		cm, err := g.store.GetComment(ctx, p.WorkspaceID, a.stringArg("comment_id"))
		if err != nil {
			return confirm.Item{}, "", errorOf(err)
		}
		key := ""
		if is, err := g.store.GetIssue(ctx, p.WorkspaceID, cm.IssueID); err == nil {
			key = is.Key
		}
		// Comments are never edited, so their id is their version.
		return confirm.Item{Kind: "comment", Key: key, Title: cm.Body}, cm.ID, nil
	}
	return confirm.Item{}, "", apperr.Internal(errors.New("no confirmation question for destructive tool " + t.Name))
}
