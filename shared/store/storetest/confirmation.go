package storetest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/store"
)

func testConfirmationPolicy(t *testing.T, b ConfirmationBackend) {
	ctx := t.Context()
	ws := newWorkspace(t, b.Queries, "CNF")
	got, err := b.Confirmations.DestructiveConfirmation(ctx, ws.ID)
	must(t, "DestructiveConfirmation", err)
	if got != store.DefaultDestructiveConfirmation {
		t.Fatalf("unset policy %q, want %q", got, store.DefaultDestructiveConfirmation)
	}
	for _, p := range []string{"require", "elicit"} {
		must(t, "SetDestructiveConfirmation", b.Confirmations.SetDestructiveConfirmation(ctx, ws.ID, p))
		got, err := b.Confirmations.DestructiveConfirmation(ctx, ws.ID)
		must(t, "DestructiveConfirmation", err)
		if got != p {
			t.Fatalf("policy %q after setting %q", got, p)
		}
	}
	// The policy lives on the workspace record: the rest of it is untouched.
	w, err := b.Queries.GetWorkspace(ctx, ws.ID)
	must(t, "GetWorkspace", err)
	if w.Key != ws.Key || w.Name != ws.Name {
		t.Fatalf("workspace changed to %+v", w)
	}
	missing := uid("ws")
	wantErr(t, "SetDestructiveConfirmation unknown", b.Confirmations.SetDestructiveConfirmation(ctx, missing, "require"), store.ErrNotFound)
	_, err = b.Confirmations.DestructiveConfirmation(ctx, missing)
	wantErr(t, "DestructiveConfirmation unknown", err, store.ErrNotFound)
	if _, err := b.Queries.GetWorkspace(ctx, missing); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("setting a policy created workspace %s: %v", missing, err)
	}
}

func testNonceOnce(t *testing.T, b ConfirmationBackend) {
	ctx := t.Context()
	ws1, ws2 := uid("ws"), uid("ws")
	n := uid("n")
	exp := time.Now().Add(5 * time.Minute).Truncate(time.Millisecond)
	must(t, "first consume", b.Confirmations.ConsumeConfirmationNonce(ctx, ws1, n, exp))
	err := b.Confirmations.ConsumeConfirmationNonce(ctx, ws1, n, exp)
	if !errors.Is(err, store.ErrNonceUsed) {
		t.Fatalf("second consume = %v, want ErrNonceUsed", err)
	}
	wantErr(t, "second consume", err, store.ErrConflict)
	must(t, "other workspace", b.Confirmations.ConsumeConfirmationNonce(ctx, ws2, n, exp))
	must(t, "other nonce", b.Confirmations.ConsumeConfirmationNonce(ctx, ws1, uid("n"), exp))
}

func testNonceConcurrent(t *testing.T, b ConfirmationBackend) {
	ctx := t.Context()
	ws, n := uid("ws"), uid("n")
	exp := time.Now().Add(5 * time.Minute).Truncate(time.Millisecond)
	oneWins(t, "consumption", store.ErrNonceUsed, func() error { return b.Confirmations.ConsumeConfirmationNonce(ctx, ws, n, exp) })
}

// oneWins runs op from 8 goroutines at once and fails unless exactly one
// succeeds and every other fails with lost.
func oneWins(t *testing.T, what string, lost error, op func() error) {
	t.Helper()
	const workers = 8
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() { errs[i] = op() })
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, lost):
			t.Fatalf("concurrent %s: %v", what, err)
		}
	}
	if won != 1 {
		t.Fatalf("%d of %d concurrent %ss succeeded, want 1", won, workers, what)
	}
}

func testNonceExpired(t *testing.T, b ConfirmationBackend) {
	ctx := t.Context()
	ws, n := uid("ws"), uid("n")
	past := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	must(t, "consume expired", b.Confirmations.ConsumeConfirmationNonce(ctx, ws, n, past))
	future := time.Now().Add(5 * time.Minute).Truncate(time.Millisecond)
	must(t, "consume over expired", b.Confirmations.ConsumeConfirmationNonce(ctx, ws, n, future))
	if err := b.Confirmations.ConsumeConfirmationNonce(ctx, ws, n, future); !errors.Is(err, store.ErrNonceUsed) {
		t.Fatalf("replay after takeover = %v, want ErrNonceUsed", err)
	}
}

func testListWorkspaces(t *testing.T, b ConfirmationBackend) {
	ctx := t.Context()
	a := newWorkspace(t, b.Queries, "LSA")
	z := newWorkspace(t, b.Queries, "LSZ")
	newIssue(t, b.Queries, a.ID, "an issue is no workspace", baseTime())
	must(t, "SetDestructiveConfirmation", b.Confirmations.SetDestructiveConfirmation(ctx, z.ID, "require"))
	all, err := b.Lister.ListWorkspaces(ctx)
	must(t, "ListWorkspaces", err)
	found := map[string]store.WorkspaceSettings{}
	for i, w := range all {
		if i > 0 && all[i-1].ID >= w.ID {
			t.Fatalf("not ordered by id: %q before %q", all[i-1].ID, w.ID)
		}
		if w.ID == "" || w.Key == "" {
			t.Fatalf("listed a record that is no workspace: %+v", w)
		}
		found[w.ID] = w
	}
	if got := found[a.ID]; got.Key != a.Key || got.Name != a.Name || !got.CreatedAt.Equal(a.CreatedAt) || got.DestructiveConfirmation != "flag" {
		t.Fatalf("workspace %s listed as %+v", a.ID, got)
	}
	if got := found[z.ID]; got.DestructiveConfirmation != "require" {
		t.Fatalf("workspace %s listed as %+v", z.ID, got)
	}
}
