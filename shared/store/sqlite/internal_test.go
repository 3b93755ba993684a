package sqlite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/store"
)

// fakeClock is a settable clock for expiry tests.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func openAt(t testing.TB, path string, opts ...Option) *Store {
	t.Helper()
	s, err := Open(context.Background(), path, opts...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// rawExec runs a statement on the write connection (the only one the write pool has).
func rawExec(t testing.TB, s *Store, query string) {
	t.Helper()
	if err := s.write(context.Background(), func(q) error {
		_, err := s.wconn.ExecContext(context.Background(), query)
		return err
	}); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

func seedWorkspace(t testing.TB, s *Store, id string) {
	t.Helper()
	if _, err := s.CreateWorkspace(context.Background(), store.Workspace{ID: id, Key: "AAC", Name: id}); err != nil {
		t.Fatalf("CreateWorkspace: %v", err)
	}
}

func TestOpenRejectsNonFilePaths(t *testing.T) {
	for _, p := range []string{"", ":memory:", "file:x.db?mode=memory", filepath.Join(t.TempDir(), "a?b.db")} {
		if s, err := Open(t.Context(), p); err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded", p)
		}
	}
}

func TestReopenKeepsDataAndSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db.sqlite")
	s, err := Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	seedWorkspace(t, s, "ws")
	is, err := s.CreateIssue(t.Context(), "ws", store.NewIssue{Title: "kept", Status: "open", Priority: "low", CreatedBy: "u"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	s = openAt(t, path)
	v, err := s.SchemaVersion(t.Context())
	ms, _ := loadMigrations()
	if err != nil || v != ms[len(ms)-1].version {
		t.Errorf("schema version %d (%v), want %d", v, err, ms[len(ms)-1].version)
	}
	got, err := s.GetIssue(t.Context(), "ws", "AAC-1")
	if err != nil || got.ID != is.ID {
		t.Errorf("issue after reopen: %+v %v", got, err)
	}
	next, err := s.CreateIssue(t.Context(), "ws", store.NewIssue{Title: "next", Status: "open", Priority: "low", CreatedBy: "u"})
	if err != nil || next.Key != "AAC-2" {
		t.Errorf("key counter after reopen: %q %v", next.Key, err)
	}
	var mode string
	if err := s.rdb.QueryRowContext(t.Context(), `PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode = %q (%v), want wal", mode, err)
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db.sqlite")
	s := openAt(t, path)
	rawExec(t, s, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (9999, 'future.sql', 0)`)
	if _, err := Open(t.Context(), path); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Errorf("Open of a newer schema: %v, want a refusal", err)
	}
}

func TestTwoProcessesShareTheFile(t *testing.T) {
	// The CLI writes (tokens, members) while `serve` runs: two Stores on one file.
	path := filepath.Join(t.TempDir(), "db.sqlite")
	a, b := openAt(t, path), openAt(t, path)
	seedWorkspace(t, a, "ws")
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 40 {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Go(func() {
			_, err := s.CreateIssue(context.Background(), "ws", store.NewIssue{Title: fmt.Sprint(i), Status: "open", Priority: "low", CreatedBy: "u"})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("concurrent create across two stores: %v", err)
		}
	}
	page, err := b.ListIssues(t.Context(), "ws", store.IssueFilter{PageRequest: store.PageRequest{Limit: 100}})
	if err != nil || len(page.Issues) != 40 {
		t.Fatalf("ListIssues: %d issues, %v", len(page.Issues), err)
	}
	keys := map[string]bool{}
	for _, is := range page.Issues {
		keys[is.Key] = true
	}
	if len(keys) != 40 || !keys["AAC-1"] || !keys["AAC-40"] {
		t.Errorf("keys %v are not AAC-1..AAC-40", keys)
	}
}

func TestTombstonesExpire(t *testing.T) {
	clk := &fakeClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	s := openAt(t, filepath.Join(t.TempDir(), "db.sqlite"), WithClock(clk.now))
	ctx := t.Context()
	seedWorkspace(t, s, "ws")
	is, err := s.CreateIssue(ctx, "ws", store.NewIssue{Title: "x", Status: "open", Priority: "low", CreatedBy: "u"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.CreateComment(ctx, "ws", is.ID, store.NewComment{Author: "u", Body: "b"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteComment(ctx, "ws", c.ID, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteIssue(ctx, "ws", is.ID, nil); err != nil {
		t.Fatal(err)
	}
	clk.add(24 * time.Hour) // the promise: at least 24 h
	for _, ref := range []string{is.ID, "AAC-1"} {
		if r, err := s.DeleteIssue(ctx, "ws", ref, nil); err != nil || !r.Replay {
			t.Errorf("replay via %s after 24 h: %+v %v", ref, r, err)
		}
	}
	if r, err := s.DeleteComment(ctx, "ws", c.ID, nil); err != nil || !r.Replay {
		t.Errorf("comment replay after 24 h: %+v %v", r, err)
	}
	clk.add(TombstoneTTL)
	for _, ref := range []string{is.ID, "AAC-1"} {
		_, err := s.DeleteIssue(ctx, "ws", ref, nil)
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("delete via %s after the TTL: %v, want not_found", ref, err)
		}
	}
	// The next successful write after purgeEvery purges expired rows.
	if _, err := s.CreateIssue(ctx, "ws", store.NewIssue{Title: "y", Status: "open", Priority: "low", CreatedBy: "u"}); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := s.rdb.QueryRowContext(ctx, `SELECT count(*) FROM tombstones`).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d tombstones left after purge (%v)", n, err)
	}
}

func TestIdempotencyDefaultExpiry(t *testing.T) {
	clk := &fakeClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	s := openAt(t, filepath.Join(t.TempDir(), "db.sqlite"), WithClock(clk.now))
	ctx := t.Context()
	k := store.IdempotencyKey{WorkspaceID: "ws", UserID: "u", Tool: "create_issue", KeyHash: "h"}
	if err := s.CreateIdempotency(ctx, store.IdempotencyRecord{IdempotencyKey: k, ArgsDigest: "d"}); err != nil {
		t.Fatal(err)
	}
	rec, err := s.GetIdempotency(ctx, k)
	if err != nil || rec.State != store.IdemPending || !rec.ExpiresAt.Equal(clk.now().Add(IdempotencyTTL)) {
		t.Fatalf("defaults: %+v %v", rec, err)
	}
	if err := s.UpdateIdempotency(ctx, store.IdempotencyRecord{IdempotencyKey: k, ArgsDigest: "d", Result: []byte("{}"), CreatedAt: rec.CreatedAt}); err != nil {
		t.Fatal(err)
	}
	if rec, _ := s.GetIdempotency(ctx, k); rec.State != store.IdemCompleted || !rec.ExpiresAt.Equal(clk.now().Add(IdempotencyTTL)) {
		t.Errorf("after update: %+v (empty state means completed, zero expiry keeps the old one)", rec)
	}
	clk.add(IdempotencyTTL)
	if _, err := s.GetIdempotency(ctx, k); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("after expiry: %v, want not_found", err)
	}
	if err := s.UpdateIdempotency(ctx, store.IdempotencyRecord{IdempotencyKey: k, Result: []byte("{}"), CreatedAt: rec.CreatedAt}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("update after expiry: %v, want not_found", err)
	}
	if err := s.CreateIdempotency(ctx, store.IdempotencyRecord{IdempotencyKey: k, ArgsDigest: "d2"}); err != nil {
		t.Errorf("claim after expiry: %v", err)
	}
}

func TestUsageDropsRetriedEvents(t *testing.T) {
	s := openAt(t, filepath.Join(t.TempDir(), "db.sqlite"))
	ctx := t.Context()
	inc := store.UsageIncrement{WorkspaceID: "ws", Date: "2026-03-01", Tool: "get_issue", Outcome: "denied", EventID: "01J0000000000000000000000A"}
	for range 3 {
		if err := s.UpdateUsage(ctx, inc); err != nil {
			t.Fatal(err)
		}
	}
	inc.EventID = ""
	for range 2 { // without an event id nothing can be deduplicated
		if err := s.UpdateUsage(ctx, inc); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := s.ListUsage(ctx, "ws", "2026-03-01", "2026-03-01")
	if err != nil || len(rows) != 1 || rows[0].Calls != 3 || rows[0].Denied != 3 {
		t.Errorf("usage = %+v %v, want calls 3 denied 3", rows, err)
	}
}

func TestInvalidArguments(t *testing.T) {
	s := openAt(t, filepath.Join(t.TempDir(), "db.sqlite"))
	ctx := t.Context()
	seedWorkspace(t, s, "ws")
	calls := map[string]error{
		"workspace without id": func() error { _, err := s.CreateWorkspace(ctx, store.Workspace{Key: "AAC"}); return err }(),
		"lower-case key":       func() error { _, err := s.CreateWorkspace(ctx, store.Workspace{ID: "w2", Key: "aac"}); return err }(),
		"bad role": func() error {
			_, err := s.UpdateMember(ctx, store.Member{WorkspaceID: "ws", UserID: "u", Role: "owner"})
			return err
		}(),
		"issue id not a UUID":   func() error { _, err := s.CreateIssue(ctx, "ws", store.NewIssue{ID: "AAC-5", Title: "t"}); return err }(),
		"usage outcome":         s.UpdateUsage(ctx, store.UsageIncrement{WorkspaceID: "ws", Date: "2026-03-01", Outcome: "maybe"}),
		"usage date":            s.UpdateUsage(ctx, store.UsageIncrement{WorkspaceID: "ws", Date: "01/03/2026", Outcome: "success"}),
		"usage range reversed":  func() error { _, err := s.ListUsage(ctx, "ws", "2026-03-02", "2026-03-01"); return err }(),
		"usage range malformed": func() error { _, err := s.ListUsage(ctx, "ws", "2026-3-1", "2026-03-01"); return err }(),
		"rate window":           func() error { _, err := s.UpdateRateCounter(ctx, "ws", "k", time.Now(), 0); return err }(),
		"idempotency key":       s.CreateIdempotency(ctx, store.IdempotencyRecord{}),
	}
	for name, err := range calls {
		if !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: %v, want invalid_arguments", name, err)
		}
	}
	_, err := s.UpdateMember(ctx, store.Member{WorkspaceID: "nope", UserID: "u", Role: store.RoleAdmin})
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("member of an unknown workspace: %v, want not_found", err)
	}
}

func TestFailuresDoNotLeakSQL(t *testing.T) {
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "db.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	seedWorkspace(t, s, "ws")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	_, readErr := s.GetIssue(t.Context(), "ws", "AAC-1")
	_, writeErr := s.CreateIssue(t.Context(), "ws", store.NewIssue{Title: "t", Status: "open", Priority: "low"})
	for _, err := range []error{readErr, writeErr} {
		// A failure of the backend, not a storage error: the guard answers it as a
		// bare internal_error, with none of this text.
		if err == nil || store.IsStorage(err) {
			t.Errorf("failure after close: %v, want a failure of the backend", err)
		}
	}
}

func TestWriteHonoursContext(t *testing.T) {
	s := openAt(t, filepath.Join(t.TempDir(), "db.sqlite"))
	seedWorkspace(t, s, "ws")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.CreateIssue(ctx, "ws", store.NewIssue{Title: "t", Status: "open", Priority: "low"}); err == nil {
		t.Error("write with a cancelled context succeeded")
	}
	// The store still works afterwards.
	if _, err := s.CreateIssue(t.Context(), "ws", store.NewIssue{Title: "t", Status: "open", Priority: "low"}); err != nil {
		t.Errorf("write after a cancelled one: %v", err)
	}
}

// TestListIssuesPlans checks that every filter combination reads an index in the
// requested order: no full table scan and no sort of the whole workspace, which is
// what keeps a page fast at 100k issues.
func TestListIssuesPlans(t *testing.T) {
	s := openAt(t, filepath.Join(t.TempDir(), "db.sqlite"))
	ctx := t.Context()
	rawExec(t, s, `ANALYZE`)
	for mask := range 32 {
		f := store.IssueFilter{}
		if mask&1 != 0 {
			f.Status = "open"
		}
		if mask&2 != 0 {
			f.Assignee = "agent-1"
		}
		if mask&4 != 0 {
			f.Label = "bug"
		}
		if mask&8 != 0 {
			f.Query = "crash"
		}
		var pos *store.IssuePos
		if mask&16 != 0 {
			pos = &store.IssuePos{U: 1, I: "x"}
		}
		query, args := listIssuesQuery("ws", f, pos, 26)
		rows, err := s.rdb.QueryContext(ctx, `EXPLAIN QUERY PLAN `+query, args...)
		if err != nil {
			t.Fatalf("%+v: %v", f, err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		joined := strings.Join(plan, " | ")
		want := "SEARCH i USING INDEX issues_by_"
		if f.Label != "" {
			want = "SEARCH l USING COVERING INDEX issue_labels_by_updated"
		}
		if !strings.Contains(joined, want) {
			t.Errorf("filter %+v cursor %v: not an index search: %s", f, pos != nil, joined)
		}
		if strings.Contains(joined, "TEMP B-TREE") {
			t.Errorf("filter %+v cursor %v: sorts instead of reading in index order: %s", f, pos != nil, joined)
		}
	}
}

func FuzzListIssuesCursor(f *testing.F) {
	s := openAt(f, filepath.Join(f.TempDir(), "db.sqlite"))
	seedWorkspace(f, s, "ws")
	for i := range 3 {
		if _, err := s.CreateIssue(context.Background(), "ws", store.NewIssue{Title: fmt.Sprint(i), Status: "open", Priority: "low"}); err != nil {
			f.Fatal(err)
		}
	}
	page, err := s.ListIssues(context.Background(), "ws", store.IssueFilter{PageRequest: store.PageRequest{Limit: 1}})
	if err != nil {
		f.Fatal(err)
	}
	for _, c := range []string{page.NextCursor, "", "e30", "!!", page.NextCursor[:10]} {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, cursor string) {
		_, err := s.ListIssues(context.Background(), "ws", store.IssueFilter{PageRequest: store.PageRequest{Limit: 1, Cursor: cursor}})
		if err != nil && !errors.Is(err, store.ErrInvalid) {
			t.Fatalf("cursor %q: %v, want success or invalid_arguments", cursor, err)
		}
		_, err = s.ListComments(context.Background(), "ws", "AAC-1", store.PageRequest{Cursor: cursor})
		if err != nil && !errors.Is(err, store.ErrInvalid) {
			t.Fatalf("comment cursor %q: %v, want success or invalid_arguments", cursor, err)
		}
	})
}

// BenchmarkListIssues100k pages through the first pages of a 100k-issue workspace
// with each kind of filter. Seeding takes a while: run it on purpose
// (go test -run '^$' -bench ListIssues100k ./shared/store/sqlite/).
func BenchmarkListIssues100k(b *testing.B) {
	const n = 100_000
	path := filepath.Join(b.TempDir(), "db.sqlite")
	s := openAt(b, path)
	seedWorkspace(b, s, "ws")
	// Seed in bulk through the write connection: the API's one-transaction-per-issue
	// would dominate the run.
	err := s.write(context.Background(), func(x q) error {
		base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
		statuses := store.Statuses
		for i := range n {
			id := store.NewIssueID()
			title := fmt.Sprintf("issue %d", i)
			desc := "body"
			if i%1000 == 0 {
				desc = "rare crash"
			}
			var assignee any
			if i%10 == 0 {
				assignee = "agent-1"
			}
			if _, err := x.exec(`INSERT INTO issues (workspace_id, id, seq, key, title, description, title_fold, desc_fold,
				status, priority, labels, assignee_type, assignee_id, created_by, created_at, updated_at, version)
				VALUES ('ws', ?, ?, ?, ?, ?, ?, ?, ?, 'low', '["bug"]', 'agent', ?, 'u', ?, ?, 1)`,
				id, i+1, fmt.Sprintf("AAC-%d", i+1), title, desc, title, desc, statuses[i%len(statuses)], assignee,
				base+int64(i)*int64(time.Second), base+int64(i)*int64(time.Second)); err != nil {
				return err
			}
			if i%7 == 0 {
				if _, err := x.exec(`INSERT INTO issue_labels (workspace_id, label, issue_id, updated_at) VALUES ('ws', 'bug', ?, ?)`,
					id, base+int64(i)*int64(time.Second)); err != nil {
					return err
				}
			}
		}
		_, err := x.exec(`UPDATE workspaces SET issue_seq = ? WHERE id = 'ws'`, n)
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	rawExec(b, s, `ANALYZE`)
	for _, f := range []store.IssueFilter{{}, {Status: "done"}, {Assignee: "agent-1"}, {Label: "bug"}, {Query: "crash"}} {
		b.Run(fmt.Sprintf("%+v", f), func(b *testing.B) {
			for b.Loop() {
				ff := f
				ff.Limit = 25
				for range 4 {
					page, err := s.ListIssues(context.Background(), "ws", ff)
					if err != nil {
						b.Fatal(err)
					}
					if page.NextCursor == "" {
						break
					}
					ff.Cursor = page.NextCursor
				}
			}
		})
	}
	_ = os.Remove(path)
}

// TestLabelDeletePlan: every issue write rewrites (or, labels unchanged, touches)
// its label rows, so those statements must search the issue's own rows, not scan
// every label row of the workspace (at 10,000 issues that scan was most of an
// update's time: bench/REPORT.md section 7).
func TestLabelDeletePlan(t *testing.T) {
	s := openAt(t, filepath.Join(t.TempDir(), "db.sqlite"))
	for _, tc := range []struct {
		query string
		args  []any
	}{
		{deleteLabelsSQL, []any{"ws", "id"}},
		{touchLabelsSQL, []any{int64(1), "ws", "id"}},
	} {
		rows, err := s.rdb.QueryContext(t.Context(), `EXPLAIN QUERY PLAN `+tc.query, tc.args...)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		if joined := strings.Join(plan, " | "); !strings.Contains(joined, "issue_labels_by_issue (workspace_id=? AND issue_id=?)") {
			t.Errorf("%s: does not search issue_labels_by_issue: %s", tc.query, joined)
		}
	}
}

// TestListUsageReadsTheQueueWithoutCommitting: the dashboard's read adds the queued
// increments to the committed rows instead of committing them (a write transaction
// per read), and counts each increment once whether it is queued or committed.
func TestListUsageReadsTheQueueWithoutCommitting(t *testing.T) {
	s := openAt(t, filepath.Join(t.TempDir(), "db.sqlite"))
	ctx := t.Context()
	// No background flush: only this test's FlushUsage calls commit.
	s.usage.stopOnce.Do(func() { close(s.usage.stop); <-s.usage.done })
	inc := func(i int, date, tool, outcome string) {
		t.Helper()
		if err := s.UpdateUsage(ctx, store.UsageIncrement{WorkspaceID: "ws", Date: date, Tool: tool, Outcome: outcome,
			EventID: fmt.Sprintf("ev-%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	inc(0, "2026-03-02", "get_issue", "success")
	if err := s.FlushUsage(ctx); err != nil {
		t.Fatal(err)
	}
	inc(1, "2026-03-02", "get_issue", "denied")
	inc(2, "2026-03-01", "list_issues", "error")
	inc(3, "2026-03-05", "get_issue", "success") // outside the range asked for
	inc(0, "2026-03-02", "get_issue", "success") // a retry of a counted event: the flush drops it
	want := []store.UsageRow{
		{Date: "2026-03-01", Tool: "list_issues", Calls: 1, Errors: 1},
		{Date: "2026-03-02", Tool: "get_issue", Calls: 2, Denied: 1},
	}
	for _, stage := range []string{"queued", "committed"} {
		got, err := s.ListUsage(ctx, "ws", "2026-03-01", "2026-03-03")
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: ListUsage = %+v, want %+v", stage, got, want)
		}
		if stage == "queued" {
			if n := s.queuedUsage(); n != 4 {
				t.Errorf("ListUsage committed the queue: %d increments queued, want 4", n)
			}
			if err := s.FlushUsage(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestListUsageRemembersOnlyWhatStaysUncounted: a dashboard read looks up in
// usage_events only the queued events no earlier read found uncounted, and what it
// remembers never outlives the commit that counts the event: a retry queued after
// its first copy was committed is looked up again and left out, whether a flush or
// a recovery committed it.
func TestListUsageRemembersOnlyWhatStaysUncounted(t *testing.T) {
	s := openAt(t, filepath.Join(t.TempDir(), "db.sqlite"))
	ctx := t.Context()
	s.usage.stopOnce.Do(func() { close(s.usage.stop); <-s.usage.done }) // commits only when asked
	inc := func(id string) {
		t.Helper()
		if err := s.UpdateUsage(ctx, store.UsageIncrement{WorkspaceID: "ws", Date: "2026-03-02", Tool: "get_issue",
			Outcome: "success", EventID: id}); err != nil {
			t.Fatal(err)
		}
	}
	calls := func(stage string, want int64) {
		t.Helper()
		got, err := s.ListUsage(ctx, "ws", "2026-03-02", "2026-03-02")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].Calls != want {
			t.Fatalf("%s: ListUsage = %+v, want %d calls", stage, got, want)
		}
	}
	unknown := func() []string {
		v, ok := s.viewUsage("ws", "2026-03-02", "2026-03-02")
		if !ok {
			t.Fatal("flush count unknown")
		}
		return v.unknown
	}

	inc("a")
	inc("b")
	if got := unknown(); len(got) != 2 {
		t.Fatalf("before any read: %v to look up, want a and b", got)
	}
	calls("queued", 2)
	inc("c")
	if got := unknown(); !slices.Equal(got, []string{"c"}) {
		t.Fatalf("after a read: %v to look up, want only c", got)
	}
	calls("queued again", 3)

	for _, commit := range []struct {
		name string
		fn   func(id string) error
	}{
		{"flush", func(string) error { return s.FlushUsage(ctx) }},
		{"recovery", func(id string) error {
			_, err := s.RecoverUsage(ctx, []store.UsageIncrement{{WorkspaceID: "ws", Date: "2026-03-02", Tool: "get_issue",
				Outcome: "success", EventID: id}})
			return err
		}},
	} {
		t.Run(commit.name, func(t *testing.T) {
			before, err := s.ListUsage(ctx, "ws", "2026-03-02", "2026-03-02")
			if err != nil {
				t.Fatal(err)
			}
			id := "r-" + commit.name
			inc(id)
			calls("the event queued", before[0].Calls+1) // remembered as uncounted now
			if err := commit.fn(id); err != nil {
				t.Fatal(err)
			}
			inc(id) // a retry of the event now counted: the next flush drops it
			calls("a retry of a counted event queued", before[0].Calls+1)
			if err := s.FlushUsage(ctx); err != nil {
				t.Fatal(err)
			}
			calls("committed", before[0].Calls+1)
		})
	}
}
