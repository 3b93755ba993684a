package sqlite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/store"
)

// cachePair opens the same database twice: cached, as aacmcp serve does, and plain,
// standing for another process (the admin CLI).
func cachePair(t *testing.T) (cached, other *Store, issueID string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "aacmcp.db")
	cached = openAt(t, path, WithReadCache())
	other = openAt(t, path)
	ctx := context.Background()
	seedWorkspace(t, cached, "ws")
	if _, err := cached.UpdateMember(ctx, store.Member{WorkspaceID: "ws", UserID: "u", Role: store.RoleAdmin}); err != nil {
		t.Fatal(err)
	}
	is, err := cached.CreateIssue(ctx, "ws", store.NewIssue{Title: "0", Status: "todo", Priority: "medium",
		Labels: []string{"a"}, CreatedBy: "u"})
	if err != nil {
		t.Fatal(err)
	}
	as := &store.Assignee{Type: "user", ID: "u"}
	if _, _, err := cached.UpdateIssue(ctx, "ws", is.ID, store.IssuePatch{Assignee: &as}); err != nil {
		t.Fatal(err)
	}
	return cached, other, is.ID
}

func role(t *testing.T, s *Store) store.Role {
	t.Helper()
	m, err := s.GetMember(context.Background(), "ws", "u")
	if errors.Is(err, store.ErrNotFound) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return m.Role
}

func title(t *testing.T, s *Store, id string) string {
	t.Helper()
	is, err := s.GetIssue(context.Background(), "ws", id)
	if err != nil {
		t.Fatal(err)
	}
	return is.Title
}

// TestReadCacheAnswersFromMemory shows the copy is really served (an unannounced
// write by another process goes unseen, which is why serve makes its admin commands
// announce themselves), and that an announced session makes every read go to the
// database while it lasts and drops the copy when it ends.
func TestReadCacheAnswersFromMemory(t *testing.T) {
	ctx := context.Background()
	cached, other, id := cachePair(t)
	if got := role(t, cached); got != store.RoleAdmin {
		t.Fatalf("role %q", got)
	}
	if got := title(t, cached, id); got != "0" {
		t.Fatalf("title %q", got)
	}
	if m, i := cached.cacheLen(); m != 1 || i != 1 {
		t.Fatalf("cache holds %d members, %d issues; want 1, 1", m, i)
	}

	// Unannounced: the copy answers.
	if _, err := other.UpdateMember(ctx, store.Member{WorkspaceID: "ws", UserID: "u", Role: store.RoleViewer}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := other.UpdateIssue(ctx, "ws", id, store.IssuePatch{Title: ptr("1")}); err != nil {
		t.Fatal(err)
	}
	if got := role(t, cached); got != store.RoleAdmin {
		t.Fatalf("unannounced write: role %q, want the cached admin (is the copy used at all?)", got)
	}
	if got := title(t, cached, id); got != "0" {
		t.Fatalf("unannounced write: title %q, want the cached 0", got)
	}

	// Announced: the database answers during the session, and after it.
	end := cached.BeginExternalWrites()
	if got := role(t, cached); got != store.RoleViewer {
		t.Fatalf("in session: role %q, want viewer", got)
	}
	if err := other.DeleteMember(ctx, "ws", "u"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := other.UpdateIssue(ctx, "ws", id, store.IssuePatch{Title: ptr("2")}); err != nil {
		t.Fatal(err)
	}
	if got := role(t, cached); got != "" {
		t.Fatalf("in session, after removal: role %q, want not found", got)
	}
	if got := title(t, cached, id); got != "2" {
		t.Fatalf("in session: title %q, want 2", got)
	}
	end()
	end() // idempotent: a second call must not close another session
	if got := title(t, cached, id); got != "2" {
		t.Fatalf("after session: title %q, want 2", got)
	}
	if got := role(t, cached); got != "" {
		t.Fatalf("after session: role %q, want not found", got)
	}
	if cached.cache.external.Load() != 0 {
		t.Fatalf("external sessions %d after end, want 0", cached.cache.external.Load())
	}
}

// TestReadCacheReturnsCopies: a caller changing what it got cannot change what the
// next caller gets.
func TestReadCacheReturnsCopies(t *testing.T) {
	cached, _, id := cachePair(t)
	ctx := context.Background()
	for range 2 {
		is, err := cached.GetIssue(ctx, "ws", id)
		if err != nil {
			t.Fatal(err)
		}
		if is.Labels[0] != "a" || is.Assignee.ID != "u" {
			t.Fatalf("got labels %v assignee %+v", is.Labels, is.Assignee)
		}
		is.Labels[0], is.Assignee.ID = "changed", "changed"
	}
}

// TestReadCacheLinearizable races reads against writes, in process and announced
// external ones: once a write has returned, no read that starts later may see an
// older value. The writer publishes the title it wrote after the write returns; a
// reader loads the published number before reading and must see at least that.
func TestReadCacheLinearizable(t *testing.T) {
	for _, external := range []bool{false, true} {
		t.Run(fmt.Sprintf("external=%v", external), func(t *testing.T) {
			ctx := context.Background()
			cached, other, id := cachePair(t)
			const writes = 150
			var published atomic.Int64
			var stop atomic.Bool
			var wg sync.WaitGroup
			errs := make(chan error, 8)
			for range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for !stop.Load() {
						want := published.Load()
						is, err := cached.GetIssue(ctx, "ws", id)
						if err != nil {
							errs <- err
							return
						}
						got, _ := strconv.ParseInt(is.Title, 10, 64)
						if got < want {
							errs <- fmt.Errorf("read title %d after write %d had returned", got, want)
							return
						}
					}
				}()
			}
			for i := int64(1); i <= writes; i++ {
				var err error
				if external {
					end := cached.BeginExternalWrites()
					_, _, err = other.UpdateIssue(ctx, "ws", id, store.IssuePatch{Title: ptr(strconv.FormatInt(i, 10))})
					end()
				} else {
					_, _, err = cached.UpdateIssue(ctx, "ws", id, store.IssuePatch{Title: ptr(strconv.FormatInt(i, 10))})
				}
				if err != nil {
					t.Fatal(err)
				}
				published.Store(i)
			}
			stop.Store(true)
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			if got := title(t, cached, id); got != strconv.Itoa(writes) {
				t.Errorf("final title %q, want %d", got, writes)
			}
		})
	}
}

func TestReadCacheBounded(t *testing.T) {
	c := newReadCache(4, 1<<20)
	g, _ := c.snapshot(&c.issueClock)
	for i := range 10 {
		c.putMember(g, cacheKey{"ws", strconv.Itoa(i)}, store.Member{UserID: strconv.Itoa(i)})
		c.putIssue(g, cacheKey{"ws", strconv.Itoa(i)}, store.Issue{ID: strconv.Itoa(i)})
	}
	if len(c.members) != 4 || len(c.issues) != 4 {
		t.Fatalf("%d members, %d issues kept; want 4 each", len(c.members), len(c.issues))
	}
	// Replacing a key that is present evicts nothing.
	for k := range c.members {
		c.putMember(g, k, store.Member{UserID: "again"})
		break
	}
	if len(c.members) != 4 {
		t.Fatalf("%d members after a replace, want 4", len(c.members))
	}
}

// TestReadCacheIssueBytesBounded: large descriptions are bounded by their size, not
// only by the count of entries, and the running total stays exact through
// replacements and evictions.
func TestReadCacheIssueBytesBounded(t *testing.T) {
	big := strings.Repeat("x", 10_000)
	one := issueSize(store.Issue{ID: "0", Description: big})
	c := newReadCache(1000, 3*one+one/2) // room for three
	g, _ := c.snapshot(&c.issueClock)
	for i := range 10 {
		c.putIssue(g, cacheKey{"ws", strconv.Itoa(i % 7)}, store.Issue{ID: strconv.Itoa(i % 7), Description: big})
		sum := 0
		for _, e := range c.issues {
			sum += e.size
		}
		if sum != c.issueBytes || c.issueBytes > c.maxBytes {
			t.Fatalf("after put %d: total %d, entries sum %d, bound %d", i, c.issueBytes, sum, c.maxBytes)
		}
	}
	if len(c.issues) != 3 {
		t.Errorf("%d issues kept, want 3", len(c.issues))
	}
	c.putIssue(g, cacheKey{"ws", "huge"}, store.Issue{ID: "huge", Description: strings.Repeat("y", 4*one)})
	if _, ok := c.issue(cacheKey{"ws", "huge"}); ok {
		t.Error("an issue larger than the whole bound was kept")
	}
}

// TestCounterWritesKeepTheCache: the writes made on every call (usage, rate
// counters, idempotency) or token request (OAuth records) leave the copy valid;
// any other write drops it.
func TestCounterWritesKeepTheCache(t *testing.T) {
	ctx := context.Background()
	cached, _, _ := cachePair(t)
	g := cached.cache.issueClock.Load()
	if _, err := cached.UpdateRateCounter(ctx, "ws", "k", cached.now(), 60e9); err != nil {
		t.Fatal(err)
	}
	if got := cached.cache.issueClock.Load(); got != g {
		t.Fatalf("a rate counter write moved the generation %d -> %d", g, got)
	}
	if err := cached.CreateOAuthPending(ctx, store.OAuthPending{ID: "p", ExpiresAt: cached.now().Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if err := cached.DeleteOAuthPending(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	if got := cached.cache.issueClock.Load(); got != g {
		t.Fatalf("an OAuth write moved the generation %d -> %d", g, got)
	}
	if _, err := cached.CreateAgent(ctx, store.Agent{WorkspaceID: "ws", ID: "bot", Name: "bot"}); err != nil {
		t.Fatal(err)
	}
	if got := cached.cache.issueClock.Load(); got == g {
		t.Fatal("an agent write left the generation alone")
	}
}

// TestIssueWritesKeepTheMembers: every issue-side write leaves the cached member
// valid (another process's unannounced role change stays unseen, so the copy is
// what answers), while a write of members still drops it.
func TestIssueWritesKeepTheMembers(t *testing.T) {
	ctx := context.Background()
	cached, other, id := cachePair(t)
	if got := role(t, cached); got != store.RoleAdmin {
		t.Fatalf("role %q", got)
	}
	if _, err := other.UpdateMember(ctx, store.Member{WorkspaceID: "ws", UserID: "u", Role: store.RoleViewer}); err != nil {
		t.Fatal(err)
	}
	var commentID, runID string
	for _, w := range []struct {
		name string
		fn   func() error
	}{
		{"create issue", func() error {
			_, err := cached.CreateIssue(ctx, "ws", store.NewIssue{Title: "t", CreatedBy: "u"})
			return err
		}},
		{"update issue", func() error {
			_, _, err := cached.UpdateIssue(ctx, "ws", id, store.IssuePatch{Title: ptr("u")})
			return err
		}},
		{"create comment", func() error {
			c, err := cached.CreateComment(ctx, "ws", id, store.NewComment{Author: "u", Body: "b"})
			commentID = c.ID
			return err
		}},
		{"delete comment", func() error {
			_, err := cached.DeleteComment(ctx, "ws", commentID, nil)
			return err
		}},
		{"create autopilot run", func() error {
			r, err := cached.CreateAutopilotRun(ctx, "ws", store.AutopilotRun{IssueID: id, Instructions: "i", RequestedBy: "u"})
			runID = r.ID
			return err
		}},
		{"update autopilot run", func() error {
			_, err := cached.UpdateAutopilotRun(ctx, "ws", store.AutopilotRun{ID: runID, Status: "failed", Attempts: 1, Error: "e"})
			return err
		}},
		{"delete issue", func() error {
			_, err := cached.DeleteIssue(ctx, "ws", id, nil)
			return err
		}},
	} {
		if err := w.fn(); err != nil {
			t.Fatalf("%s: %v", w.name, err)
		}
		if got := role(t, cached); got != store.RoleAdmin {
			t.Fatalf("after %s: role %q, want the cached admin: the write dropped the members", w.name, got)
		}
	}
	if _, err := cached.CreateAgent(ctx, store.Agent{WorkspaceID: "ws", ID: "bot", Name: "bot"}); err != nil {
		t.Fatal(err)
	}
	if got := role(t, cached); got != store.RoleViewer {
		t.Fatalf("after a write outside the issues: role %q, want viewer from the database", got)
	}
}

func ptr[T any](v T) *T { return &v }

// TestEveryWriteOfMembersAndIssuesDropsTheCopy goes through the store's writes that
// change what GetMember or GetIssue answer, directly or by a side effect (a
// comment's count, a cascade), each after both reads are in memory under the id
// and under the key: the next read must see the write. A write moved to
// writeUncached would fail here.
func TestEveryWriteOfMembersAndIssuesDropsTheCopy(t *testing.T) {
	ctx := context.Background()
	issueIs := func(want func(store.Issue, error) bool, what string) func(*testing.T, *Store, string) {
		return func(t *testing.T, s *Store, id string) {
			for _, ref := range []string{id, "AAC-1"} {
				is, err := s.GetIssue(ctx, "ws", ref)
				if !want(is, err) {
					t.Errorf("GetIssue(%s) = %+v, %v; want %s", ref, is, err, what)
				}
			}
		}
	}
	memberIs := func(want func(store.Member, error) bool, what string) func(*testing.T, *Store, string) {
		return func(t *testing.T, s *Store, _ string) {
			if m, err := s.GetMember(ctx, "ws", "u"); !want(m, err) {
				t.Errorf("GetMember = %+v, %v; want %s", m, err, what)
			}
		}
	}
	for _, tc := range []struct {
		name  string
		write func(s *Store, id string) error
		check func(*testing.T, *Store, string)
	}{
		{"update issue", func(s *Store, id string) error {
			_, _, err := s.UpdateIssue(ctx, "ws", id, store.IssuePatch{Title: ptr("new")})
			return err
		}, issueIs(func(is store.Issue, err error) bool { return err == nil && is.Title == "new" }, "title new")},
		{"create comment", func(s *Store, id string) error {
			_, err := s.CreateComment(ctx, "ws", "AAC-1", store.NewComment{Author: "u", Body: "b"})
			return err
		}, issueIs(func(is store.Issue, err error) bool { return err == nil && is.CommentCount == 1 }, "comment_count 1")},
		{"delete comment", func(s *Store, id string) error {
			c, err := s.CreateComment(ctx, "ws", id, store.NewComment{Author: "u", Body: "b"})
			if err != nil {
				return err
			}
			for _, ref := range []string{id, "AAC-1"} { // in memory again, with the count 1
				if is, err := s.GetIssue(ctx, "ws", ref); err != nil || is.CommentCount != 1 {
					return fmt.Errorf("before the delete: comment_count %d, %v; want 1", is.CommentCount, err)
				}
			}
			_, err = s.DeleteComment(ctx, "ws", c.ID, nil)
			return err
		}, issueIs(func(is store.Issue, err error) bool { return err == nil && is.CommentCount == 0 }, "comment_count 0")},
		{"delete issue", func(s *Store, id string) error {
			_, err := s.CreateAutopilotRun(ctx, "ws", store.AutopilotRun{IssueID: id, Instructions: "i", RequestedBy: "u"})
			if err != nil {
				return err
			}
			_, err = s.DeleteIssue(ctx, "ws", id, nil)
			return err
		}, issueIs(func(_ store.Issue, err error) bool { return errors.Is(err, store.ErrNotFound) }, "not_found")},
		{"lower role", func(s *Store, _ string) error {
			_, err := s.UpdateMember(ctx, store.Member{WorkspaceID: "ws", UserID: "u", Role: store.RoleViewer})
			return err
		}, memberIs(func(m store.Member, err error) bool { return err == nil && m.Role == store.RoleViewer }, "viewer")},
		{"change e-mail", func(s *Store, _ string) error {
			m, err := s.GetMember(ctx, "ws", "u")
			if err != nil {
				return err
			}
			m.Email = "U@Example.com"
			_, err = s.UpdateMember(ctx, m)
			return err
		}, memberIs(func(m store.Member, err error) bool { return err == nil && m.Email == "u@example.com" }, "e-mail u@example.com")},
		{"remove member", func(s *Store, _ string) error {
			return s.DeleteMember(ctx, "ws", "u")
		}, memberIs(func(_ store.Member, err error) bool { return errors.Is(err, store.ErrNotFound) }, "not_found")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cached, _, id := cachePair(t)
			for _, ref := range []string{id, "AAC-1"} {
				if _, err := cached.GetIssue(ctx, "ws", ref); err != nil {
					t.Fatal(err)
				}
			}
			role(t, cached)
			if m, i := cached.cacheLen(); m != 1 || i != 2 {
				t.Fatalf("cache holds %d members, %d issues before the write; want 1, 2", m, i)
			}
			if err := tc.write(cached, id); err != nil {
				t.Fatal(err)
			}
			tc.check(t, cached, id)
		})
	}
}

// TestIssueWritesKeepOtherIssues: a write on one issue leaves what is kept of the
// others valid (another process's unannounced change of the other issue stays
// unseen, so the copy is what answers), under the id and under the key, while the
// issue written is read again from the database. Autopilot runs change nothing an
// issue read returns and leave both.
func TestIssueWritesKeepOtherIssues(t *testing.T) {
	ctx := context.Background()
	cached, other, id := cachePair(t)                                                   // AAC-1
	b, err := cached.CreateIssue(ctx, "ws", store.NewIssue{Title: "b", CreatedBy: "u"}) // AAC-2
	if err != nil {
		t.Fatal(err)
	}
	refsB := []string{b.ID, b.Key}
	for _, ref := range refsB {
		if got := title(t, cached, ref); got != "b" {
			t.Fatalf("GetIssue(%s) title %q", ref, got)
		}
	}
	if _, _, err := other.UpdateIssue(ctx, "ws", b.ID, store.IssuePatch{Title: ptr("b, unannounced")}); err != nil {
		t.Fatal(err)
	}
	keptB := func(after string) {
		t.Helper()
		for _, ref := range refsB {
			if got := title(t, cached, ref); got != "b" {
				t.Fatalf("after %s: GetIssue(%s) title %q, want the kept %q: the write dropped another issue", after, ref, got, "b")
			}
		}
	}
	var commentID, runID string
	for _, w := range []struct {
		name  string
		write func() error
		// wantA is what a read of AAC-1 must show afterwards, by id and by key; nil
		// when the write leaves AAC-1 as it was.
		wantA func(store.Issue, error) bool
	}{
		{"create issue", func() error {
			_, err := cached.CreateIssue(ctx, "ws", store.NewIssue{Title: "c", CreatedBy: "u"})
			return err
		}, nil},
		{"update issue", func() error {
			_, _, err := cached.UpdateIssue(ctx, "ws", id, store.IssuePatch{Title: ptr("a2")})
			return err
		}, func(is store.Issue, err error) bool { return err == nil && is.Title == "a2" }},
		{"create comment", func() error {
			c, err := cached.CreateComment(ctx, "ws", "AAC-1", store.NewComment{Author: "u", Body: "b"})
			commentID = c.ID
			return err
		}, func(is store.Issue, err error) bool { return err == nil && is.CommentCount == 1 }},
		{"delete comment", func() error {
			_, err := cached.DeleteComment(ctx, "ws", commentID, nil)
			return err
		}, func(is store.Issue, err error) bool { return err == nil && is.CommentCount == 0 }},
		{"create autopilot run", func() error {
			r, err := cached.CreateAutopilotRun(ctx, "ws", store.AutopilotRun{IssueID: id, Instructions: "i", RequestedBy: "u"})
			runID = r.ID
			return err
		}, nil},
		{"update autopilot run", func() error {
			_, err := cached.UpdateAutopilotRun(ctx, "ws", store.AutopilotRun{ID: runID, Status: "failed", Attempts: 1, Error: "e"})
			return err
		}, nil},
		{"delete issue", func() error {
			_, err := cached.DeleteIssue(ctx, "ws", id, nil)
			return err
		}, func(_ store.Issue, err error) bool { return errors.Is(err, store.ErrNotFound) }},
	} {
		// AAC-1 in memory under both names, and changed behind the cache's back when
		// the write should leave it: then the kept copy must still answer. (A write
		// through cached reads the database, not the copy.)
		var before store.Issue
		for _, ref := range []string{id, "AAC-1"} {
			if before, err = cached.GetIssue(ctx, "ws", ref); err != nil {
				t.Fatalf("before %s: %v", w.name, err)
			}
		}
		if w.wantA == nil {
			if _, _, err := other.UpdateIssue(ctx, "ws", id, store.IssuePatch{Description: ptr(w.name)}); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.write(); err != nil {
			t.Fatalf("%s: %v", w.name, err)
		}
		keptB(w.name)
		for _, ref := range []string{id, "AAC-1"} {
			is, err := cached.GetIssue(ctx, "ws", ref)
			switch {
			case w.wantA == nil && (err != nil || is.Description != before.Description):
				t.Fatalf("after %s: GetIssue(%s) = %q, %v; want the kept %q", w.name, ref, is.Description, err, before.Description)
			case w.wantA != nil && !w.wantA(is, err):
				t.Fatalf("after %s: GetIssue(%s) = %+v, %v: the write is not seen", w.name, ref, is, err)
			}
		}
	}
}

// TestReadCacheIssueWritesBounded: past max issues written, the log of writes is
// forgotten and every issue kept before goes stale at once, including one whose
// write the log no longer holds.
func TestReadCacheIssueWritesBounded(t *testing.T) {
	c := newReadCache(4, 1<<20)
	g, _ := c.snapshot(&c.issueClock)
	for _, id := range []string{"a", "b", "c", "d"} {
		c.putIssue(g, cacheKey{"ws", id}, store.Issue{ID: id})
	}
	c.touchIssue("ws", "a")
	if _, ok := c.issue(cacheKey{"ws", "a"}); ok {
		t.Fatal("a served after its write")
	}
	if _, ok := c.issue(cacheKey{"ws", "b"}); !ok {
		t.Fatal("b not served after a write of a")
	}
	for _, id := range []string{"b", "c", "d"} {
		c.touchIssue("ws", id)
	}
	c.touchIssue("ws", "e") // the log is full (4): forgotten, the floor moves
	if len(c.issueWrites) > c.max {
		t.Fatalf("%d writes logged, bound %d", len(c.issueWrites), c.max)
	}
	for _, id := range []string{"a", "b", "c", "d"} {
		if _, ok := c.issue(cacheKey{"ws", id}); ok {
			t.Errorf("%s served from before the log was forgotten", id)
		}
	}
	g, _ = c.snapshot(&c.issueClock)
	c.putIssue(g, cacheKey{"ws", "a"}, store.Issue{ID: "a"})
	if _, ok := c.issue(cacheKey{"ws", "a"}); !ok {
		t.Error("a read after the floor moved is not served")
	}
}

// TestReadCacheLinearizableAcrossIssues: with writes alternating between two
// issues, each one judged by its own writes, a read that starts after a write of
// either issue returned sees that write, by id and by key.
func TestReadCacheLinearizableAcrossIssues(t *testing.T) {
	ctx := context.Background()
	cached, _, a := cachePair(t)
	bIs, err := cached.CreateIssue(ctx, "ws", store.NewIssue{Title: "0", CreatedBy: "u"})
	if err != nil {
		t.Fatal(err)
	}
	refs := [2][]string{{a, "AAC-1"}, {bIs.ID, bIs.Key}}
	const writes = 100 // per issue
	var published [2]atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for r := range 4 {
		wg.Go(func() {
			for n := 0; !stop.Load(); n++ {
				which := (n + r) % 2
				ref := refs[which][n/2%2]
				want := published[which].Load()
				is, err := cached.GetIssue(ctx, "ws", ref)
				if err != nil {
					errs <- err
					return
				}
				if got, _ := strconv.ParseInt(is.Title, 10, 64); got < want {
					errs <- fmt.Errorf("read %s title %d after write %d had returned", ref, got, want)
					return
				}
			}
		})
	}
	for i := int64(1); i <= writes; i++ {
		for which := range 2 {
			if _, _, err := cached.UpdateIssue(ctx, "ws", refs[which][0], store.IssuePatch{Title: ptr(strconv.FormatInt(i, 10))}); err != nil {
				t.Fatal(err)
			}
			published[which].Store(i)
		}
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
