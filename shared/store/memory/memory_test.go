package memory_test

import (
	"testing"

	"github.com/aacworkflow/aacmcp/shared/store/memory"
	"github.com/aacworkflow/aacmcp/shared/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Backend {
		s := memory.New()
		return storetest.Backend{Queries: s, Tokens: s}
	})
}

func TestConfirmationConformance(t *testing.T) {
	storetest.RunConfirmations(t, func(t *testing.T) storetest.ConfirmationBackend {
		s := memory.New()
		return storetest.ConfirmationBackend{Queries: s, Confirmations: s, Lister: s}
	})
}

func TestOAuthConformance(t *testing.T) {
	storetest.RunOAuth(t, func(t *testing.T) storetest.OAuthBackend {
		s := memory.New()
		return storetest.OAuthBackend{Queries: s, Tokens: s, OAuth: s}
	})
}

func TestApprovalConformance(t *testing.T) {
	storetest.RunApprovals(t, func(t *testing.T) storetest.ApprovalBackend {
		return storetest.ApprovalBackend{Approvals: memory.New()}
	})
}
