package storetest

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/store"
)

func testIdempotency(t *testing.T, b Backend) {
	ctx, q := t.Context(), b.Queries
	w := newWorkspace(t, q, "AAC")
	now := time.Now().UTC().Truncate(time.Millisecond)
	k := store.IdempotencyKey{WorkspaceID: w.ID, UserID: "alice", Tool: "create_issue", KeyHash: sha("retry-1")}

	_, err := q.GetIdempotency(ctx, k)
	wantErr(t, "GetIdempotency before any claim", err, store.ErrNotFound)

	claim := store.IdempotencyRecord{IdempotencyKey: k, State: store.IdemPending, ArgsDigest: sha("args-1"), CreatedAt: now, ExpiresAt: now.Add(24 * time.Hour)}
	must(t, "CreateIdempotency", q.CreateIdempotency(ctx, claim))
	got, err := q.GetIdempotency(ctx, k)
	must(t, "GetIdempotency", err)
	if got.IdempotencyKey != k || got.State != store.IdemPending || got.ArgsDigest != claim.ArgsDigest {
		t.Errorf("pending record = %+v", got)
	}
	wantErr(t, "second claim of a pending key", q.CreateIdempotency(ctx, claim), store.ErrConflict)

	result := []byte(`{"id":"0190c3d2-0000-7000-8000-000000000001","key":"AAC-1"}`)
	done := claim
	done.State, done.Result, done.ResourceID = store.IdemCompleted, result, "0190c3d2-0000-7000-8000-000000000001"
	must(t, "UpdateIdempotency", q.UpdateIdempotency(ctx, done))
	got, err = q.GetIdempotency(ctx, k)
	must(t, "GetIdempotency", err)
	if got.State != store.IdemCompleted || !bytes.Equal(got.Result, result) || got.ResourceID != done.ResourceID || got.ArgsDigest != claim.ArgsDigest {
		t.Errorf("completed record = %+v (result %s)", got, got.Result)
	}
	wantErr(t, "claim of a completed key", q.CreateIdempotency(ctx, claim), store.ErrConflict)

	// The key is per workspace, user and tool.
	var neighbours []store.IdempotencyRecord
	for _, other := range []store.IdempotencyKey{
		{WorkspaceID: w.ID, UserID: "bob", Tool: k.Tool, KeyHash: k.KeyHash},
		{WorkspaceID: w.ID, UserID: k.UserID, Tool: "comment_issue", KeyHash: k.KeyHash},
		{WorkspaceID: w.ID, UserID: k.UserID, Tool: k.Tool, KeyHash: sha("retry-2")},
	} {
		_, err := q.GetIdempotency(ctx, other)
		wantErr(t, "GetIdempotency of a neighbouring key", err, store.ErrNotFound)
		r := claim
		r.IdempotencyKey = other
		must(t, "CreateIdempotency of a neighbouring key", q.CreateIdempotency(ctx, r))
		neighbours = append(neighbours, r)
	}

	// A completed result is never released: only a pending claim is.
	wantErr(t, "DeleteIdempotency of a completed key", q.DeleteIdempotency(ctx, k, claim.CreatedAt), store.ErrConflict)
	if got, err := q.GetIdempotency(ctx, k); err != nil || got.State != store.IdemCompleted || !bytes.Equal(got.Result, result) {
		t.Errorf("completed record after a refused release = %+v, %v", got, err)
	}

	pend := neighbours[0]
	must(t, "DeleteIdempotency", q.DeleteIdempotency(ctx, pend.IdempotencyKey, pend.CreatedAt))
	_, err = q.GetIdempotency(ctx, pend.IdempotencyKey)
	wantErr(t, "GetIdempotency after release", err, store.ErrNotFound)
	for _, r := range neighbours[1:] {
		if _, err := q.GetIdempotency(ctx, r.IdempotencyKey); err != nil {
			t.Errorf("neighbouring claim %+v after another key's release: %v", r.IdempotencyKey, err)
		}
	}
	must(t, "DeleteIdempotency of a released key", q.DeleteIdempotency(ctx, pend.IdempotencyKey, pend.CreatedAt))
	pendDone := pend
	pendDone.State, pendDone.Result = store.IdemCompleted, result
	wantErr(t, "UpdateIdempotency of a released key", q.UpdateIdempotency(ctx, pendDone), store.ErrNotFound)
	must(t, "claim after release", q.CreateIdempotency(ctx, pend))

	// A claim is named by its created_at; zero names none.
	zero := pendDone
	zero.CreatedAt = time.Time{}
	wantErr(t, "UpdateIdempotency with a zero created_at", q.UpdateIdempotency(ctx, zero), store.ErrInvalid)
	wantErr(t, "DeleteIdempotency with a zero created_at", q.DeleteIdempotency(ctx, pend.IdempotencyKey, time.Time{}), store.ErrInvalid)
	if got, err := q.GetIdempotency(ctx, pend.IdempotencyKey); err != nil || got.State != store.IdemPending {
		t.Errorf("claim after refused zero-created_at calls = %+v, %v; want it pending", got, err)
	}

	// An expired record is gone for readers and does not block a new claim.
	old := store.IdempotencyKey{WorkspaceID: w.ID, UserID: "alice", Tool: "create_issue", KeyHash: sha("old")}
	must(t, "CreateIdempotency (expired)", q.CreateIdempotency(ctx, store.IdempotencyRecord{IdempotencyKey: old, State: store.IdemCompleted,
		ArgsDigest: sha("a"), Result: []byte(`{}`), CreatedAt: now.Add(-48 * time.Hour), ExpiresAt: now.Add(-24 * time.Hour)}))
	_, err = q.GetIdempotency(ctx, old)
	wantErr(t, "GetIdempotency of an expired record", err, store.ErrNotFound)
	must(t, "claim of an expired key", q.CreateIdempotency(ctx, store.IdempotencyRecord{IdempotencyKey: old, State: store.IdemPending,
		ArgsDigest: sha("b"), CreatedAt: now, ExpiresAt: now.Add(24 * time.Hour)}))
	got, err = q.GetIdempotency(ctx, old)
	must(t, "GetIdempotency of the new claim", err)
	if got.State != store.IdemPending || got.ArgsDigest != sha("b") {
		t.Errorf("new claim over an expired record = %+v", got)
	}
}

func testUsage(t *testing.T, b Backend) {
	ctx, q := t.Context(), b.Queries
	w, other := newWorkspace(t, q, "AAC"), newWorkspace(t, q, "AAC")
	bump := func(ws, date, tool, outcome string) {
		t.Helper()
		must(t, "UpdateUsage", q.UpdateUsage(ctx, store.UsageIncrement{WorkspaceID: ws, Date: date, Tool: tool, Outcome: outcome, EventID: uid("ev")}))
	}
	// Inserted out of order: the list must come back ordered by date, then tool.
	bump(w.ID, "2026-03-02", "list_issues", "error")
	for _, o := range []string{"success", "denied", "error", "success"} {
		bump(w.ID, "2026-03-01", "list_issues", o)
	}
	bump(w.ID, "2026-03-01", "create_issue", "success")
	bump(w.ID, "2026-03-03", "list_issues", "success")
	bump(w.ID, "2026-02-28", "list_issues", "success")
	bump(other.ID, "2026-03-01", "list_issues", "denied")

	tests := []struct {
		name     string
		ws       string
		from, to string
		want     []store.UsageRow
	}{
		{"two days", w.ID, "2026-03-01", "2026-03-02", []store.UsageRow{
			{Date: "2026-03-01", Tool: "create_issue", Calls: 1},
			{Date: "2026-03-01", Tool: "list_issues", Calls: 4, Denied: 1, Errors: 1},
			{Date: "2026-03-02", Tool: "list_issues", Calls: 1, Errors: 1},
		}},
		{"one day", w.ID, "2026-03-03", "2026-03-03", []store.UsageRow{{Date: "2026-03-03", Tool: "list_issues", Calls: 1}}},
		{"across a month", w.ID, "2026-02-28", "2026-03-01", []store.UsageRow{
			{Date: "2026-02-28", Tool: "list_issues", Calls: 1},
			{Date: "2026-03-01", Tool: "create_issue", Calls: 1},
			{Date: "2026-03-01", Tool: "list_issues", Calls: 4, Denied: 1, Errors: 1},
		}},
		{"empty range", w.ID, "2026-04-01", "2026-04-30", nil},
		{"other workspace", other.ID, "2026-03-01", "2026-03-31", []store.UsageRow{{Date: "2026-03-01", Tool: "list_issues", Calls: 1, Denied: 1}}},
	}
	for _, tc := range tests {
		got, err := q.ListUsage(ctx, tc.ws, tc.from, tc.to)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if len(got) == 0 && len(tc.want) == 0 {
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: ListUsage = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func testRateCounters(t *testing.T, b Backend) {
	ctx, q := t.Context(), b.Queries
	w, other := newWorkspace(t, q, "AAC"), newWorkspace(t, q, "AAC")
	// Windows far from expiry, so no TTL sweep can interfere mid-test.
	const window = 24 * time.Hour
	w0 := time.Now().UTC().Truncate(time.Hour)
	w1 := w0.Add(window)
	steps := []struct {
		name  string
		ws    string
		key   string
		start time.Time
		want  int64
	}{
		{"first call", w.ID, "tok_1:list_issues", w0, 1},
		{"second call", w.ID, "tok_1:list_issues", w0, 2},
		{"third call", w.ID, "tok_1:list_issues", w0, 3},
		{"next window starts at one", w.ID, "tok_1:list_issues", w1, 1},
		{"the earlier window kept its count", w.ID, "tok_1:list_issues", w0, 4},
		{"other key", w.ID, "tok_2:list_issues", w0, 1},
		{"other workspace, same key", other.ID, "tok_1:list_issues", w0, 1},
		{"next window again", w.ID, "tok_1:list_issues", w1, 2},
	}
	for _, s := range steps {
		got, err := q.UpdateRateCounter(ctx, s.ws, s.key, s.start, window)
		if err != nil {
			t.Errorf("%s: %v", s.name, err)
			continue
		}
		if got != s.want {
			t.Errorf("%s: count %d, want %d", s.name, got, s.want)
		}
	}
}
