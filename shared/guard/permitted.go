package guard

import (
	"context"
	"errors"
	"github.com/aacworkflow/aacmcp/shared/store"

	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/catalog"
)

// Permitted returns whether p may call each tool now, as Call would decide before
// the arguments: the token's scopes and the user's role in the workspace, read from
// the member record now (so a demotion shows at the next list, as it applies at the
// next call). A user with no member record, or one whose role is not valid, may call
// nothing. Lists (tools/list, GET /tools) offer what it allows, so a viewer is not
// shown tools that would only answer permission_denied.
//
// The error is the store's, when the member record could not be read; the caller
// then fails closed.
func (g *Guard) Permitted(ctx context.Context, p auth.Principal) (func(catalog.Tool) bool, error) {
	m, err := g.store.GetMember(ctx, p.WorkspaceID, p.UserID)
	if errors.Is(err, store.ErrNotFound) {
		return func(catalog.Tool) bool { return false }, nil
	}
	if err != nil {
		return nil, err
	}
	role := m.Role
	return func(t catalog.Tool) bool {
		return p.Has(t.Scopes...) && role.Valid() && (t.Annotations.ReadOnly || role.CanWrite())
	}, nil
}
