package store

import (
	"context"
	"time"
)

// Confirmations is the store side of human confirmation (shared/confirm): the
// workspace policy and the single use of a sealed requestState. A seal cannot
// remember that it was used; the conditional write here is what makes a replayed
// state fail even when every other check passes.
type Confirmations interface {
	// DestructiveConfirmation is the workspace's policy: "flag", "elicit" or
	// "require"; "flag" for a workspace that never set one. ErrNotFound when the
	// workspace does not exist.
	DestructiveConfirmation(ctx context.Context, ws string) (string, error)
	// SetDestructiveConfirmation stores the policy on the workspace record; the
	// value is validated by the caller (confirm.ParsePolicy). ErrNotFound when the
	// workspace does not exist.
	SetDestructiveConfirmation(ctx context.Context, ws, policy string) error
	// ConsumeConfirmationNonce records nonce as used until expires. A nonce already
	// recorded and not yet expired is ErrNonceUsed, whatever the caller's retry.
	ConsumeConfirmationNonce(ctx context.Context, ws, nonce string, expires time.Time) error
}

// DefaultDestructiveConfirmation is the policy of a workspace that set none.
const DefaultDestructiveConfirmation = "flag"

// WorkspaceSettings is a workspace with its settings, as an administrator lists
// them. The JSON is the workspace's own fields plus destructive_confirmation.
type WorkspaceSettings struct {
	Workspace
	DestructiveConfirmation string `json:"destructive_confirmation"`
}

// WorkspaceLister lists every workspace, for `aacmcp workspace list`. It is an
// administrator's command, so the DynamoDB backend may scan.
type WorkspaceLister interface {
	// ListWorkspaces returns every workspace by id, the policy defaulted to flag.
	ListWorkspaces(ctx context.Context) ([]WorkspaceSettings, error)
}
