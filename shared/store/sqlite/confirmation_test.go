package sqlite_test

import (
	"testing"

	"github.com/aacworkflow/aacmcp/shared/store/sqlite"
	"github.com/aacworkflow/aacmcp/shared/store/storetest"
)

func TestConfirmationConformance(t *testing.T) {
	storetest.RunConfirmations(t, func(t *testing.T) storetest.ConfirmationBackend {
		s := open(t)
		return storetest.ConfirmationBackend{Queries: s, Confirmations: s, Lister: s}
	})
}

func TestConfirmationConformanceReadCache(t *testing.T) {
	storetest.RunConfirmations(t, func(t *testing.T) storetest.ConfirmationBackend {
		s := open(t, sqlite.WithReadCache())
		return storetest.ConfirmationBackend{Queries: s, Confirmations: s, Lister: s}
	})
}

func TestApprovalConformance(t *testing.T) {
	storetest.RunApprovals(t, func(t *testing.T) storetest.ApprovalBackend {
		return storetest.ApprovalBackend{Approvals: open(t)}
	})
}
