package memory

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/aacworkflow/aacmcp/shared/store"
)

var (
	_ store.Confirmations   = (*Store)(nil)
	_ store.WorkspaceLister = (*Store)(nil)
)

type nonceKey struct{ ws, nonce string }

// DestructiveConfirmation implements store.Confirmations.
func (s *Store) DestructiveConfirmation(_ context.Context, ws string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.workspaces[ws]
	if !ok {
		return "", notFound("workspace")
	}
	if w.confirmation == "" {
		return store.DefaultDestructiveConfirmation, nil
	}
	return w.confirmation, nil
}

// SetDestructiveConfirmation implements store.Confirmations.
func (s *Store) SetDestructiveConfirmation(_ context.Context, ws, policy string) error {
	if policy == "" {
		return store.Invalid("destructive confirmation policy is required")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.workspaces[ws]
	if !ok {
		return notFound("workspace")
	}
	w.confirmation = policy
	return nil
}

// ConsumeConfirmationNonce implements store.Confirmations: a live nonce is a
// replay; an expired one may be taken again, as the other backends' TTL allows.
func (s *Store) ConsumeConfirmationNonce(_ context.Context, ws, nonce string, expires time.Time) error {
	if ws == "" || nonce == "" {
		return store.Invalid("workspace and nonce are required")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for k, exp := range s.nonces {
		if !exp.After(now) {
			delete(s.nonces, k)
		}
	}
	k := nonceKey{ws, nonce}
	if _, used := s.nonces[k]; used {
		return store.ErrNonceUsed
	}
	s.nonces[k] = expires
	return nil
}

// ListWorkspaces implements store.WorkspaceLister.
func (s *Store) ListWorkspaces(context.Context) ([]store.WorkspaceSettings, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]store.WorkspaceSettings, 0, len(s.workspaces))
	for _, w := range s.workspaces {
		p := w.confirmation
		if p == "" {
			p = store.DefaultDestructiveConfirmation
		}
		out = append(out, store.WorkspaceSettings{Workspace: w.w, DestructiveConfirmation: p})
	}
	slices.SortFunc(out, func(a, b store.WorkspaceSettings) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}
