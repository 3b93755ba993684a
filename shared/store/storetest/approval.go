package storetest

import (
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/store"
)

// ApprovalBackend is what a backend under the approval suite provides.
type ApprovalBackend struct {
	Approvals store.Approvals
}

// RunApprovals pins down store.Approvals:
//   - a put approval reads back pending, with every field; an unknown binding is
//     not_found; the same binding in another workspace is another approval;
//   - a decision is taken once: by its nonce, while pending and before expiry
//     (a conflict otherwise); an unknown binding is not_found;
//   - a decision is spent once, returned as decided (granted or denied): a
//     pending, spent, expired or other nonce's approval is a conflict, and of
//     many concurrent spends exactly one wins;
//   - a put replaces a spent approval with a fresh pending one.
func RunApprovals(t *testing.T, newBackend func(t *testing.T) ApprovalBackend) {
	t.Helper()
	run(t, true, newBackend, testApprovalRoundTrip, testApprovalDecideOnce, testApprovalSpendOnce,
		testApprovalSpendConcurrent, testApprovalExpired, testApprovalReplace)
}

func newApproval(ws string, now time.Time) store.Approval {
	return store.Approval{
		Workspace: ws, Binding: sha(uid("b")), Nonce: uid("n"), Token: "tok." + uid("t"),
		User: "u_alice", Principal: "tok_1", ClientID: "https://claude.ai/oauth/claude-code-client-metadata",
		Tool: "delete_issue", Target: "AAC-5",
		RequestedAt: now, ExpiresAt: now.Add(5 * time.Minute),
	}
}

func testApprovalRoundTrip(t *testing.T, b ApprovalBackend) {
	ctx := t.Context()
	now := baseTime()
	a := newApproval(uid("ws"), now)
	must(t, "PutApproval", b.Approvals.PutApproval(ctx, a))
	got, err := b.Approvals.GetApproval(ctx, a.Workspace, a.Binding)
	must(t, "GetApproval", err)
	want := a
	want.Status = store.ApprovalPending
	if got.Nonce != want.Nonce || got.Token != want.Token || got.User != want.User || got.Principal != want.Principal ||
		got.ClientID != want.ClientID || got.Tool != want.Tool || got.Target != want.Target || got.Status != want.Status ||
		!got.RequestedAt.Equal(want.RequestedAt) || !got.ExpiresAt.Equal(want.ExpiresAt) || got.DecidedBy != "" || !got.DecidedAt.IsZero() {
		t.Fatalf("GetApproval = %+v, want %+v", got, want)
	}
	_, err = b.Approvals.GetApproval(ctx, a.Workspace, sha(uid("b")))
	wantErr(t, "GetApproval unknown", err, store.ErrNotFound)
	_, err = b.Approvals.GetApproval(ctx, uid("ws"), a.Binding)
	wantErr(t, "GetApproval other workspace", err, store.ErrNotFound)
}

func testApprovalDecideOnce(t *testing.T, b ApprovalBackend) {
	ctx := t.Context()
	now := baseTime()
	a := newApproval(uid("ws"), now)
	must(t, "PutApproval", b.Approvals.PutApproval(ctx, a))
	at := now.Add(time.Minute)
	wantErr(t, "decide other nonce", b.Approvals.DecideApproval(ctx, a.Workspace, a.Binding, uid("n"), store.ApprovalGranted, "dev:alice", "127.0.0.1", at), store.ErrConflict)
	wantErr(t, "decide unknown", b.Approvals.DecideApproval(ctx, a.Workspace, sha(uid("b")), a.Nonce, store.ApprovalGranted, "dev:alice", "127.0.0.1", at), store.ErrNotFound)
	must(t, "decide", b.Approvals.DecideApproval(ctx, a.Workspace, a.Binding, a.Nonce, store.ApprovalGranted, "dev:alice", "127.0.0.1", at))
	wantErr(t, "decide again", b.Approvals.DecideApproval(ctx, a.Workspace, a.Binding, a.Nonce, store.ApprovalDenied, "dev:alice", "127.0.0.1", at), store.ErrConflict)
	got, err := b.Approvals.GetApproval(ctx, a.Workspace, a.Binding)
	must(t, "GetApproval", err)
	if got.Status != store.ApprovalGranted || got.DecidedBy != "dev:alice" || got.DecidedFrom != "127.0.0.1" || !got.DecidedAt.Equal(at) {
		t.Fatalf("after the decision: %+v", got)
	}
}

func testApprovalSpendOnce(t *testing.T, b ApprovalBackend) {
	ctx := t.Context()
	now := baseTime()
	for _, decided := range []store.ApprovalStatus{store.ApprovalGranted, store.ApprovalDenied} {
		a := newApproval(uid("ws"), now)
		must(t, "PutApproval", b.Approvals.PutApproval(ctx, a))
		at := now.Add(time.Minute)
		_, err := b.Approvals.SpendApproval(ctx, a.Workspace, a.Binding, "", at)
		wantErr(t, "spend pending", err, store.ErrConflict)
		_, err = b.Approvals.SpendApproval(ctx, a.Workspace, sha(uid("b")), "", at)
		wantErr(t, "spend unknown", err, store.ErrNotFound)
		must(t, "decide", b.Approvals.DecideApproval(ctx, a.Workspace, a.Binding, a.Nonce, decided, "dev:alice", "127.0.0.1", at))
		_, err = b.Approvals.SpendApproval(ctx, a.Workspace, a.Binding, uid("n"), at)
		wantErr(t, "spend other nonce", err, store.ErrConflict)
		got, err := b.Approvals.SpendApproval(ctx, a.Workspace, a.Binding, a.Nonce, at)
		must(t, "spend", err)
		if got.Status != decided || got.Nonce != a.Nonce || got.Target != a.Target {
			t.Fatalf("spend returned %+v, want status %s", got, decided)
		}
		_, err = b.Approvals.SpendApproval(ctx, a.Workspace, a.Binding, "", at)
		wantErr(t, "spend again", err, store.ErrConflict)
		if now, err := b.Approvals.GetApproval(ctx, a.Workspace, a.Binding); err != nil || now.Status != store.ApprovalSpent {
			t.Fatalf("after the spend: %+v, %v", now, err)
		}
	}
}

func testApprovalSpendConcurrent(t *testing.T, b ApprovalBackend) {
	ctx := t.Context()
	now := baseTime()
	a := newApproval(uid("ws"), now)
	must(t, "PutApproval", b.Approvals.PutApproval(ctx, a))
	at := now.Add(time.Minute)
	must(t, "decide", b.Approvals.DecideApproval(ctx, a.Workspace, a.Binding, a.Nonce, store.ApprovalGranted, "dev:alice", "127.0.0.1", at))
	oneWins(t, "spend", store.ErrConflict, func() error {
		_, err := b.Approvals.SpendApproval(ctx, a.Workspace, a.Binding, "", at)
		return err
	})
}

func testApprovalExpired(t *testing.T, b ApprovalBackend) {
	ctx := t.Context()
	now := baseTime()
	a := newApproval(uid("ws"), now)
	must(t, "PutApproval", b.Approvals.PutApproval(ctx, a))
	late := a.ExpiresAt
	wantErr(t, "decide expired", b.Approvals.DecideApproval(ctx, a.Workspace, a.Binding, a.Nonce, store.ApprovalGranted, "dev:alice", "127.0.0.1", late), store.ErrConflict)
	must(t, "decide in time", b.Approvals.DecideApproval(ctx, a.Workspace, a.Binding, a.Nonce, store.ApprovalGranted, "dev:alice", "127.0.0.1", late.Add(-time.Second)))
	_, err := b.Approvals.SpendApproval(ctx, a.Workspace, a.Binding, "", late)
	wantErr(t, "spend expired", err, store.ErrConflict)
}

func testApprovalReplace(t *testing.T, b ApprovalBackend) {
	ctx := t.Context()
	now := baseTime()
	a := newApproval(uid("ws"), now)
	must(t, "PutApproval", b.Approvals.PutApproval(ctx, a))
	at := now.Add(time.Minute)
	must(t, "decide", b.Approvals.DecideApproval(ctx, a.Workspace, a.Binding, a.Nonce, store.ApprovalGranted, "dev:alice", "127.0.0.1", at))
	_, err := b.Approvals.SpendApproval(ctx, a.Workspace, a.Binding, "", at)
	must(t, "spend", err)
	next := a
	next.Nonce, next.Token, next.RequestedAt, next.ExpiresAt = uid("n"), "tok."+uid("t"), at, at.Add(5*time.Minute)
	must(t, "PutApproval again", b.Approvals.PutApproval(ctx, next))
	got, err := b.Approvals.GetApproval(ctx, a.Workspace, a.Binding)
	must(t, "GetApproval", err)
	if got.Status != store.ApprovalPending || got.Nonce != next.Nonce || got.DecidedBy != "" || !got.DecidedAt.IsZero() {
		t.Fatalf("replaced approval: %+v", got)
	}
	wantErr(t, "decide the old nonce", b.Approvals.DecideApproval(ctx, a.Workspace, a.Binding, a.Nonce, store.ApprovalGranted, "dev:alice", "127.0.0.1", at), store.ErrConflict)
}
