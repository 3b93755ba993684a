package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/aacworkflow/aacmcp/shared/store/sqlite"
	"github.com/aacworkflow/aacmcp/shared/store/storetest"
)

func open(t *testing.T, opts ...sqlite.Option) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "aacmcp.db"), opts...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Backend {
		s := open(t)
		return storetest.Backend{Queries: s, Tokens: s}
	})
}

// TestConformanceReadCache runs the suite on the store as aacmcp serve opens it:
// every read after a write must see the write through the in-memory copy too.
func TestConformanceReadCache(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Backend {
		s := open(t, sqlite.WithReadCache())
		return storetest.Backend{Queries: s, Tokens: s}
	})
}

func TestOAuthConformance(t *testing.T) {
	storetest.RunOAuth(t, func(t *testing.T) storetest.OAuthBackend {
		s := open(t)
		return storetest.OAuthBackend{Queries: s, Tokens: s, OAuth: s}
	})
}

// TestOAuthConformanceReadCache: the e-mail of a member read through the in-memory
// copy must follow every UpdateMember at once.
func TestOAuthConformanceReadCache(t *testing.T) {
	storetest.RunOAuth(t, func(t *testing.T) storetest.OAuthBackend {
		s := open(t, sqlite.WithReadCache())
		return storetest.OAuthBackend{Queries: s, Tokens: s, OAuth: s}
	})
}
