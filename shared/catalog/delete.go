package catalog

import (
	"context"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// deletion is what a delete tool states of its own: the schema of the argument that
// names the item (the tool's ResourceArg), the description of the id the result
// gives back, mayDelete's refusal, and the store's delete. The rest is the same for
// every delete tool, so tool supplies it. A is the tool's argument struct; its target
// method returns the id argument.
type deletion[A interface{ target() string }] struct {
	idProp    string
	deletedID string
	denied    string
	delete    func(q store.Queries, ctx context.Context, ws, id string, allow store.DeleteCheck) (store.DeleteResult, error)
}

// tool completes t (name, title, description, scopes, ResourceArg) as a delete tool:
// destructive, so a call must carry confirm: true; idempotent, since the store
// answers a repeat from the item's tombstone; the id and confirm arguments; the
// result {"deleted": true, <ResourceArg>: id}; and mayDelete's rule, which the store
// applies in the delete itself.
func (d deletion[A]) tool(t Tool) Tool {
	t.Annotations = Annotations{ReadOnly: false, Destructive: true, Idempotent: true, OpenWorld: false}
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
// members what they created or wrote (the guard has already turned away viewers and
// non-members). The store applies it in the delete itself, to the item or, on a
// repeat, to its tombstone (docs/architecture.md section 2: the first result again,
// judged by the same rule), and only once it has found either, so the spec's order
// holds: existence, then permission, then the delete.
func mayDelete(c Call, denied string) store.DeleteCheck {
	return func(owner string) error {
		if MayDelete(c.Role, c.Principal.UserID, owner) {
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
