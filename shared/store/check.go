package store

import "time"

// The argument checks every backend makes before it touches its data, so that the
// backends refuse the same calls with the same invalid_argument detail. A backend
// may refuse more (DynamoDB keys must not contain '#').

// CheckWorkspace refuses a workspace with no id or with a key that cannot prefix
// issue keys.
func CheckWorkspace(w Workspace) error {
	if w.ID == "" {
		return Invalid("workspace id is required")
	}
	if !ValidWorkspaceKey(w.Key) {
		return Invalid("workspace key must be 1-10 upper-case letters or digits, starting with a letter")
	}
	return nil
}

// Check refuses an idempotency key that names no workspace, tool or key hash.
func (k IdempotencyKey) Check() error {
	if k.WorkspaceID == "" || k.Tool == "" || k.KeyHash == "" {
		return Invalid("idempotency key needs workspace, tool and key hash")
	}
	return nil
}

// CheckClaim checks what names one idempotency claim to settle or release: k and
// the claim's created_at.
func CheckClaim(k IdempotencyKey, createdAt time.Time) error {
	if err := k.Check(); err != nil {
		return err
	}
	return CheckClaimTime(createdAt)
}

// CheckClaimTime refuses a zero created_at, which names no claim:
// CreateIdempotency stores a zero CreatedAt as the time of the claim, so only the
// caller's own bug would send one.
func CheckClaimTime(createdAt time.Time) error {
	if createdAt.IsZero() {
		return Invalid("an idempotency claim is named by its created_at, which is zero")
	}
	return nil
}
