package catalog

import (
	"context"
	"strconv"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// The delete tools: delete_issue and delete_comment.

func init() {
	register(100, deleteIssueTool)
	register(110, deleteCommentTool)
}

func deleteIssueTool(Deps) Tool {
	return deletion[deleteIssueArgs]{
		idProp:    issueIDProp,
		deletedID: "UUID of the deleted issue.",
		denied:    "only a workspace admin or the issue's creator can delete it",
		delete:    store.Queries.DeleteIssue,
		confirm: Confirmation{ReadScope: "issues:read", Typed: TypeKey,
			Load: func(ctx context.Context, r store.Reader, ws, id string, _ bool) (Target, error) {
				is, err := r.GetIssue(ctx, ws, id)
				if err != nil {
					return Target{}, err
				}
				return Target{Kind: "issue", ID: is.ID, Key: is.Key, Title: is.Title, Comments: &is.CommentCount,
					Owner: is.CreatedBy, Version: strconv.FormatInt(is.Version, 10)}, nil
			}},
	}.tool(Tool{
		Name:  "delete_issue",
		Title: "Delete issue",
		Description: prose(`
			Permanently delete an issue and all its comments. Destructive: ask the user
			to confirm first (for example "Delete issue AAC-42?") and pass confirm: true
			only after they agree; without it the call is refused. Only a workspace
			admin or the issue's creator may delete it. Idempotent: repeating the call
			for an already deleted issue returns the same result.`),
		Scopes:      []string{"issues:write"},
		ResourceArg: "issue_id",
	})
}

type deleteIssueArgs struct {
	IssueID string `json:"issue_id"`
	Confirm bool   `json:"confirm"` // checked by the guard before the handler runs
}

func (a deleteIssueArgs) target() string { return a.IssueID }

func deleteCommentTool(Deps) Tool {
	return deletion[deleteCommentArgs]{
		idProp:    `"comment_id": {` + commentIDField + `, "description": "Id of the comment, as list_comments returns it."}`,
		deletedID: "Id of the deleted comment.",
		denied:    "only a workspace admin or the comment's author can delete it",
		delete:    store.Queries.DeleteComment,
		// A comment has no key of its own: the person types a word, and the
		// question names the comment's issue, which is issue data.
		confirm: Confirmation{ReadScope: "comments:read", ParentScope: "issues:read", Typed: TypeWord("delete"),
			Load: func(ctx context.Context, r store.Reader, ws, id string, parent bool) (Target, error) {
				cm, err := r.GetComment(ctx, ws, id)
				if err != nil {
					return Target{}, err
				}
				// Comments are never edited, so their id is their version.
				tg := Target{Kind: "comment", ID: cm.ID, Title: cm.Body, Owner: cm.Author, Version: cm.ID}
				if parent {
					if is, err := r.GetIssue(ctx, ws, cm.IssueID); err == nil {
						tg.Parent = is.Key
					}
				}
				return tg, nil
			}},
	}.tool(Tool{
		Name:  "delete_comment",
		Title: "Delete comment",
		Description: prose(`
			Permanently delete one comment. Destructive: ask the user to confirm first
			and pass confirm: true only after they agree; without it the call is
			refused. Only a workspace admin or the comment's author may delete it.
			Idempotent: repeating the call for an already deleted comment returns the
			same result.`),
		Scopes:      []string{"comments:write"},
		ResourceArg: "comment_id",
	})
}

type deleteCommentArgs struct {
	CommentID string `json:"comment_id"`
	Confirm   bool   `json:"confirm"` // checked by the guard before the handler runs
}

func (a deleteCommentArgs) target() string { return a.CommentID }

// deletion is what a delete tool states of its own: the schema of the argument that
// names the item (the tool's ResourceArg), the description of the id the result
// gives back, mayDelete's refusal, the store's delete and what confirming it means
// (Tool.Confirm). The rest is the same for every delete tool, so tool supplies it. A
// is the tool's argument struct; its target method returns the id argument.
type deletion[A interface{ target() string }] struct {
	idProp    string
	deletedID string
	denied    string
	delete    func(q store.Queries, ctx context.Context, ws, id string, allow store.DeleteCheck) (store.DeleteResult, error)
	confirm   Confirmation
}

// tool completes t (name, title, description, scopes, ResourceArg) as a delete tool:
// destructive, so a call must carry confirm: true; idempotent, since the store
// answers a repeat from the item's tombstone; the id and confirm arguments; the
// result {"deleted": true, <ResourceArg>: id}; and mayDelete's rule, which the store
// applies in the delete itself.
func (d deletion[A]) tool(t Tool) Tool {
	t.Annotations = Annotations{ReadOnly: false, Destructive: true, Idempotent: true, OpenWorld: false}
	t.Confirm = &d.confirm
	t.InputSchema = input([]string{t.ResourceArg, "confirm"}, d.idProp, confirmProp)
	t.OutputSchema = output([]string{"deleted", t.ResourceArg}, `"deleted": {"type": "boolean", "const": true}`,
		`"`+t.ResourceArg+`": {"type": "string", "description": "`+d.deletedID+`"}`)
	return writes(t, func(ctx context.Context, c Call, a A, q store.Queries) (any, error) {
		res, err := d.delete(q, ctx, c.Principal.WorkspaceID, a.target(), mayDelete(c, d.denied))
		if err != nil {
			return nil, err
		}
		return deletedResult{t.ResourceArg, res.ID}, nil
	})
}

// mayDelete is the permission rule of the delete tools: admins delete anything,
// members what they created or wrote (the guard turns away viewers and non-members;
// where its member check runs beside the handler, c.Role waits for it, so the rule
// is judged on the checked role). The store applies it in the delete itself, to the
// item or, on a repeat, to its tombstone (docs/architecture.md section 2: the first
// result again, judged by the same rule), and only once it has found either, so the
// spec's order holds: existence, then permission, then the delete.
func mayDelete(c Call, denied string) store.DeleteCheck {
	return func(owner string) error {
		var role store.Role
		if c.Role != nil {
			role = c.Role()
		}
		if MayDelete(role, c.Principal.UserID, owner) {
			return nil
		}
		return apperr.New(apperr.PermissionDenied, denied)
	}
}

// MayDelete is the rule itself, also for the guard: its preview of a refused delete
// and its question must not show an item the caller could not delete.
func MayDelete(role store.Role, user, owner string) bool {
	return role == store.RoleAdmin || (owner != "" && owner == user)
}
