package store

import (
	"context"
	"time"
)

// ApprovalStatus is where an approval stands.
type ApprovalStatus string

// The statuses, in the order an approval moves through them. Pending is the
// only status a person can decide; granted and denied are spent by the one call
// that reads them (SpendApproval), which leaves spent.
const (
	ApprovalPending ApprovalStatus = "pending"
	ApprovalGranted ApprovalStatus = "granted"
	ApprovalDenied  ApprovalStatus = "denied"
	ApprovalSpent   ApprovalStatus = "spent"
)

// Approval is a destructive call a person is asked to approve on aacmcp's page
// (workspace policy approve). It is keyed by Binding, the digest of everything
// the call must repeat (shared/approval.Binding): the same call made again finds
// it with no state of its own, and a call with other arguments, by another
// principal or on an edited item finds another.
type Approval struct {
	Workspace string
	Binding   string
	// Nonce names this approval among the ones a binding has had: the link and
	// the MRTR requestState carry it, so a link to an approval replaced since is
	// refused.
	Nonce string
	// Token is the sealed link token, kept so that the same call made again while
	// the approval is pending answers the same link.
	Token string
	// Who asked: the member, the principal and the OAuth client ("" for a
	// personal token), and the tool.
	User, Principal, ClientID, Tool string
	// Target is the resource argument the call names (the issue key).
	Target string
	Status ApprovalStatus
	// DecidedBy is the signed-in identity that decided, DecidedFrom the browser's
	// source address.
	DecidedBy, DecidedFrom string
	RequestedAt            time.Time
	DecidedAt              time.Time
	// ExpiresAt bounds the whole approval: the person decides and the call spends
	// the decision before it. The DynamoDB backend's TTL removes it after.
	ExpiresAt time.Time
}

// Approvals stores approvals. Every transition is one conditional write, so a
// decision is taken once and spent once whatever runs concurrently.
type Approvals interface {
	// PutApproval stores a pending approval, replacing whatever the binding held
	// (a live pending, granted or denied approval included: the caller reads
	// first, and replaces only what is spent or expired).
	PutApproval(ctx context.Context, a Approval) error
	// GetApproval reads the binding's approval, expired or not (the caller judges
	// expiry by its own clock); ErrNotFound when there is none.
	GetApproval(ctx context.Context, ws, binding string) (Approval, error)
	// DecideApproval moves the binding's approval named by nonce from pending to
	// status (granted or denied), recording who decided and from where. ErrNotFound
	// when the binding holds none; ErrConflict when it is another nonce's, no
	// longer pending, or expired at at.
	DecideApproval(ctx context.Context, ws, binding, nonce string, status ApprovalStatus, by, from string, at time.Time) error
	// SpendApproval moves a decided approval (granted or denied) to spent and
	// returns it as it was. nonce "" spends whichever approval the binding holds.
	// ErrNotFound when the binding holds none; ErrConflict when it is pending,
	// already spent, another nonce's, or expired at at.
	SpendApproval(ctx context.Context, ws, binding, nonce string, at time.Time) (Approval, error)
}
