package memory

import (
	"context"
	"time"

	"github.com/aacworkflow/aacmcp/shared/store"
)

var _ store.Approvals = (*Store)(nil)

// PutApproval implements store.Approvals.
func (s *Store) PutApproval(_ context.Context, a store.Approval) error {
	if a.Workspace == "" || a.Binding == "" || a.Nonce == "" {
		return store.Invalid("workspace, binding and nonce are required")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a.Status = store.ApprovalPending
	s.approvals[nonceKey{a.Workspace, a.Binding}] = a
	return nil
}

// GetApproval implements store.Approvals.
func (s *Store) GetApproval(_ context.Context, ws, binding string) (store.Approval, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.approvals[nonceKey{ws, binding}]
	if !ok {
		return store.Approval{}, notFound("approval")
	}
	return a, nil
}

// DecideApproval implements store.Approvals.
func (s *Store) DecideApproval(_ context.Context, ws, binding, nonce string, status store.ApprovalStatus, by, from string, at time.Time) error {
	if status != store.ApprovalGranted && status != store.ApprovalDenied {
		return store.Invalid("an approval is decided granted or denied")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := nonceKey{ws, binding}
	a, ok := s.approvals[k]
	if !ok {
		return notFound("approval")
	}
	if a.Nonce != nonce || a.Status != store.ApprovalPending || !at.Before(a.ExpiresAt) {
		return store.ErrConflict
	}
	a.Status, a.DecidedBy, a.DecidedFrom, a.DecidedAt = status, by, from, at
	s.approvals[k] = a
	return nil
}

// SpendApproval implements store.Approvals.
func (s *Store) SpendApproval(_ context.Context, ws, binding, nonce string, at time.Time) (store.Approval, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := nonceKey{ws, binding}
	a, ok := s.approvals[k]
	if !ok {
		return store.Approval{}, notFound("approval")
	}
	if (nonce != "" && a.Nonce != nonce) || (a.Status != store.ApprovalGranted && a.Status != store.ApprovalDenied) || !at.Before(a.ExpiresAt) {
		return store.Approval{}, store.ErrConflict
	}
	spent := a
	spent.Status = store.ApprovalSpent
	s.approvals[k] = spent
	return a, nil
}
