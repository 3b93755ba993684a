package dynamo_test

import (
	"testing"

	"github.com/aacworkflow/aacmcp/shared/store/storetest"
)

func TestConfirmationConformance(t *testing.T) {
	e := newEnv(t, envConfig{})
	storetest.RunConfirmations(t, func(t *testing.T) storetest.ConfirmationBackend {
		return storetest.ConfirmationBackend{Queries: e.store, Confirmations: e.store, Lister: e.store}
	})
}

func TestApprovalConformance(t *testing.T) {
	e := newEnv(t, envConfig{})
	storetest.RunApprovals(t, func(t *testing.T) storetest.ApprovalBackend {
		return storetest.ApprovalBackend{Approvals: e.store}
	})
}
