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
