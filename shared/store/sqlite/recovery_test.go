package sqlite_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/store"
	"github.com/aacworkflow/aacmcp/shared/store/sqlite"
)

// TestDeletePendingIdempotency: pending claims go, completed results stay (a retry must
// still replay them).
func TestDeletePendingIdempotency(t *testing.T) {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	now := time.Now().UTC()
	rec := func(hash, state string) store.IdempotencyRecord {
		return store.IdempotencyRecord{
			IdempotencyKey: store.IdempotencyKey{WorkspaceID: "ws", UserID: "u", Tool: "create_issue", KeyHash: hash},
			State:          state, ArgsDigest: "d", CreatedAt: now, ExpiresAt: now.Add(time.Hour),
		}
	}
	pending, done := rec("p", store.IdemPending), rec("c", store.IdemPending)
	for _, r := range []store.IdempotencyRecord{pending, done} {
		if err := s.CreateIdempotency(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	done.State, done.Result = store.IdemCompleted, []byte(`{"id":"x"}`)
	if err := s.UpdateIdempotency(ctx, done); err != nil {
		t.Fatal(err)
	}

	n, err := s.DeletePendingIdempotency(ctx)
	if err != nil || n != 1 {
		t.Fatalf("DeletePendingIdempotency = %d, %v; want 1 claim released", n, err)
	}
	if _, err := s.GetIdempotency(ctx, pending.IdempotencyKey); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("pending claim after release: %v, want not_found", err)
	}
	if got, err := s.GetIdempotency(ctx, done.IdempotencyKey); err != nil || got.State != store.IdemCompleted {
		t.Errorf("completed record after release = %+v, %v; want it kept", got, err)
	}
}
