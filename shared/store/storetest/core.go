package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/store"
)

func testWorkspaces(t *testing.T, b Backend) {
	ctx, q := t.Context(), b.Queries
	w := store.Workspace{ID: uid("ws"), Key: "AAC", Name: "Demo", CreatedAt: baseTime()}
	created, err := q.CreateWorkspace(ctx, w)
	must(t, "CreateWorkspace", err)
	got, err := q.GetWorkspace(ctx, w.ID)
	must(t, "GetWorkspace", err)
	for _, c := range []store.Workspace{created, got} {
		if c.ID != w.ID || c.Key != w.Key || c.Name != w.Name || !c.CreatedAt.Equal(w.CreatedAt) {
			t.Errorf("workspace = %+v, want %+v", c, w)
		}
	}
	_, err = q.CreateWorkspace(ctx, store.Workspace{ID: w.ID, Key: "BBB", Name: "again", CreatedAt: baseTime()})
	wantErr(t, "CreateWorkspace of an existing id", err, store.ErrAlreadyExists)
	if got, _ := q.GetWorkspace(ctx, w.ID); got.Key != "AAC" {
		t.Errorf("a refused CreateWorkspace changed the workspace: key %q", got.Key)
	}
	_, err = q.GetWorkspace(ctx, uid("ws"))
	wantErr(t, "GetWorkspace of an unknown id", err, store.ErrNotFound)
}

func testMembers(t *testing.T, b Backend) {
	ctx, q := t.Context(), b.Queries
	a, other := newWorkspace(t, q, "AAC"), newWorkspace(t, q, "AAC")
	m, err := q.UpdateMember(ctx, store.Member{WorkspaceID: a.ID, UserID: "alice", Role: store.RoleAdmin, CreatedAt: baseTime()})
	must(t, "UpdateMember", err)
	if m.Role != store.RoleAdmin || m.UserID != "alice" || m.WorkspaceID != a.ID {
		t.Errorf("UpdateMember returned %+v", m)
	}
	_, err = q.UpdateMember(ctx, store.Member{WorkspaceID: a.ID, UserID: "alice", Role: store.RoleViewer, CreatedAt: baseTime()})
	must(t, "UpdateMember (replace)", err)
	got, err := q.GetMember(ctx, a.ID, "alice")
	must(t, "GetMember", err)
	if got.Role != store.RoleViewer {
		t.Errorf("role after replace = %q, want viewer (a demotion must take effect)", got.Role)
	}
	if got.Email != "" {
		t.Errorf("e-mail of a member given none = %q", got.Email)
	}

	// The e-mail is stored lower-cased, and replaced with the record.
	m, err = q.UpdateMember(ctx, store.Member{WorkspaceID: a.ID, UserID: "alice", Role: store.RoleViewer, Email: "Alice@Example.COM", CreatedAt: baseTime()})
	must(t, "UpdateMember (e-mail)", err)
	if m.Email != "alice@example.com" {
		t.Errorf("UpdateMember returned e-mail %q, want alice@example.com", m.Email)
	}
	got, err = q.GetMember(ctx, a.ID, "alice")
	must(t, "GetMember", err)
	if got.Email != "alice@example.com" || got.Role != store.RoleViewer {
		t.Errorf("GetMember after setting the e-mail = %+v", got)
	}
	_, err = q.UpdateMember(ctx, store.Member{WorkspaceID: a.ID, UserID: "alice", Role: store.RoleViewer, CreatedAt: baseTime()})
	must(t, "UpdateMember (no e-mail)", err)
	if got, err := q.GetMember(ctx, a.ID, "alice"); err != nil || got.Email != "" {
		t.Errorf("GetMember after replacing without an e-mail = %+v %v, want it cleared", got, err)
	}

	_, err = q.GetMember(ctx, a.ID, "bob")
	wantErr(t, "GetMember of a user without a record", err, store.ErrNotFound)
	_, err = q.GetMember(ctx, other.ID, "alice")
	wantErr(t, "GetMember from another workspace", err, store.ErrNotFound)
	wantErr(t, "DeleteMember from another workspace", q.DeleteMember(ctx, other.ID, "alice"), store.ErrNotFound)
	if _, err := q.GetMember(ctx, a.ID, "alice"); err != nil {
		t.Errorf("member gone after another workspace's delete: %v", err)
	}

	must(t, "DeleteMember", q.DeleteMember(ctx, a.ID, "alice"))
	_, err = q.GetMember(ctx, a.ID, "alice")
	wantErr(t, "GetMember after delete", err, store.ErrNotFound)
	wantErr(t, "DeleteMember again", q.DeleteMember(ctx, a.ID, "alice"), store.ErrNotFound)
}

func testAgents(t *testing.T, b Backend) {
	ctx, q := t.Context(), b.Queries
	a, other := newWorkspace(t, q, "AAC"), newWorkspace(t, q, "AAC")
	for _, ag := range []store.Agent{
		{WorkspaceID: a.ID, ID: "agent-b", Name: "Bee", CreatedAt: baseTime()},
		{WorkspaceID: a.ID, ID: "agent-a", Name: "Ay", CreatedAt: baseTime()},
		{WorkspaceID: other.ID, ID: "agent-c", Name: "Sea", CreatedAt: baseTime()},
	} {
		got, err := q.CreateAgent(ctx, ag)
		must(t, "CreateAgent", err)
		if got.ID != ag.ID || got.Name != ag.Name || got.WorkspaceID != ag.WorkspaceID {
			t.Errorf("CreateAgent returned %+v, want %+v", got, ag)
		}
	}
	_, err := q.CreateAgent(ctx, store.Agent{WorkspaceID: a.ID, ID: "agent-a", Name: "Renamed", CreatedAt: baseTime()})
	must(t, "CreateAgent (replace)", err)

	list, err := q.ListAgents(ctx, a.ID)
	must(t, "ListAgents", err)
	var names []string
	for _, ag := range list {
		names = append(names, ag.ID+"="+ag.Name)
	}
	slices.Sort(names)
	if want := []string{"agent-a=Renamed", "agent-b=Bee"}; !slices.Equal(names, want) {
		t.Errorf("ListAgents = %v, want %v (own workspace only, replaced name)", names, want)
	}
	got, err := q.GetAgent(ctx, a.ID, "agent-b")
	must(t, "GetAgent", err)
	if got.Name != "Bee" {
		t.Errorf("GetAgent name = %q", got.Name)
	}
	_, err = q.GetAgent(ctx, other.ID, "agent-b")
	wantErr(t, "GetAgent from another workspace", err, store.ErrNotFound)
	_, err = q.GetAgent(ctx, a.ID, "agent-c")
	wantErr(t, "GetAgent of another workspace's agent", err, store.ErrNotFound)
}

func testIssueCreateAndGet(t *testing.T, b Backend) {
	ctx, q := t.Context(), b.Queries
	w := newWorkspace(t, q, "AAC")
	at := baseTime()
	in := store.NewIssue{Title: "Login fails", Description: "500 on submit", Status: "in_progress", Priority: "high",
		Labels: []string{"bug", "auth"}, CreatedBy: "alice", CreatedAt: at}
	first, err := q.CreateIssue(ctx, w.ID, in)
	must(t, "CreateIssue", err)
	if first.ID == "" {
		t.Fatal("CreateIssue returned no id")
	}
	want := store.Issue{ID: first.ID, Key: "AAC-1", Title: in.Title, Description: in.Description, Status: in.Status,
		Priority: in.Priority, Labels: []string{"bug", "auth"}, CreatedBy: "alice", CreatedAt: at, UpdatedAt: at,
		Version: 1, CommentCount: 0}
	sameIssue(t, "CreateIssue result", first, want)

	second := newIssue(t, q, w.ID, "second", at, func(n *store.NewIssue) { n.Labels = nil })
	if second.Key != "AAC-2" {
		t.Errorf("second key = %q, want AAC-2", second.Key)
	}
	if second.Labels == nil || len(second.Labels) != 0 {
		t.Errorf("labels of an issue created with nil labels = %#v, want empty non-nil", second.Labels)
	}
	chosen := newUUID()
	third := newIssue(t, q, w.ID, "third", at, func(n *store.NewIssue) { n.ID = chosen })
	if third.ID != chosen || third.Key != "AAC-3" {
		t.Errorf("issue with caller id: id %q key %q, want %q AAC-3", third.ID, third.Key, chosen)
	}
	_, err = q.CreateIssue(ctx, w.ID, store.NewIssue{ID: chosen, Title: "dup", Status: "open", Priority: "low", CreatedBy: "alice", CreatedAt: at})
	wantErr(t, "CreateIssue with an existing id", err, store.ErrAlreadyExists)

	for _, ref := range []string{first.ID, "AAC-1", "aac-1", "Aac-1"} {
		got, err := q.GetIssue(ctx, w.ID, ref)
		if err != nil {
			t.Errorf("GetIssue(%q): %v", ref, err)
			continue
		}
		sameIssue(t, "GetIssue("+ref+")", got, want)
	}
	if got, err := q.GetIssue(ctx, w.ID, second.ID); err != nil || got.Labels == nil {
		t.Errorf("GetIssue of an issue without labels: labels %#v, err %v (want empty non-nil)", got.Labels, err)
	}
	for _, ref := range []string{"AAC-99", "BBB-1", "AAC-0", "AAC-01", "AAC-", "AAC", "", newUUID(), "not-an-id"} {
		_, err := q.GetIssue(ctx, w.ID, ref)
		wantErr(t, "GetIssue("+ref+")", err, store.ErrNotFound)
	}
	_, err = q.CreateIssue(ctx, uid("ws"), store.NewIssue{Title: "orphan", Status: "open", Priority: "low", CreatedBy: "alice", CreatedAt: at})
	wantErr(t, "CreateIssue in an unknown workspace", err, store.ErrNotFound)
}

func testIssueUpdate(t *testing.T, b Backend) {
	ctx, q := t.Context(), b.Queries
	w := newWorkspace(t, q, "AAC")
	at := baseTime()
	is := newIssue(t, q, w.ID, "original", at, func(n *store.NewIssue) { n.Labels = []string{"x"} })

	t1 := at.Add(time.Minute)
	got, changed, err := q.UpdateIssue(ctx, w.ID, is.ID, store.IssuePatch{Title: ptr("renamed"), ExpectedVersion: ptr(int64(1)), UpdatedAt: t1})
	must(t, "UpdateIssue", err)
	want := is
	want.Title, want.Version, want.UpdatedAt = "renamed", 2, t1
	if !changed {
		t.Error("UpdateIssue of a new title reported changed=false")
	}
	sameIssue(t, "UpdateIssue result", got, want)

	// A repeat whose values already hold succeeds without a write, even with the
	// stale expected_version it was first sent with.
	got, changed, err = q.UpdateIssue(ctx, w.ID, is.ID, store.IssuePatch{Title: ptr("renamed"), ExpectedVersion: ptr(int64(1)), UpdatedAt: t1.Add(time.Minute)})
	must(t, "repeated UpdateIssue", err)
	if changed {
		t.Error("repeated UpdateIssue reported changed=true")
	}
	sameIssue(t, "repeated UpdateIssue result", got, want)
	_, changed, err = q.UpdateIssue(ctx, w.ID, is.ID, store.IssuePatch{UpdatedAt: t1.Add(time.Minute)})
	if err != nil || changed {
		t.Errorf("empty patch: changed %v err %v, want false nil", changed, err)
	}

	_, _, err = q.UpdateIssue(ctx, w.ID, is.ID, store.IssuePatch{Title: ptr("stale"), ExpectedVersion: ptr(int64(1)), UpdatedAt: t1})
	wantErr(t, "UpdateIssue with a stale expected_version", err, store.ErrVersionMismatch)

	t2 := t1.Add(2 * time.Minute)
	agent := &store.Assignee{Type: "agent", ID: "agent-1"}
	got, changed, err = q.UpdateIssue(ctx, w.ID, "aac-1", store.IssuePatch{
		Description: ptr("new body"), Status: ptr("done"), Priority: ptr("urgent"),
		Labels: ptr([]string{"a", "b"}), Assignee: ptr(agent), ExpectedVersion: ptr(int64(2)), UpdatedAt: t2})
	must(t, "UpdateIssue by key", err)
	want.Description, want.Status, want.Priority, want.Labels = "new body", "done", "urgent", []string{"a", "b"}
	want.Assignee, want.Version, want.UpdatedAt = &store.Assignee{Type: "agent", ID: "agent-1"}, 3, t2
	if !changed {
		t.Error("multi-field UpdateIssue reported changed=false")
	}
	sameIssue(t, "multi-field UpdateIssue result", got, want)
	stored, err := q.GetIssue(ctx, w.ID, is.ID)
	must(t, "GetIssue", err)
	sameIssue(t, "issue after update", stored, want)

	// Same assignee again: nothing changes (assign_issue_to_agent is idempotent).
	_, changed, err = q.UpdateIssue(ctx, w.ID, is.ID, store.IssuePatch{Assignee: ptr(&store.Assignee{Type: "agent", ID: "agent-1"}), UpdatedAt: t2.Add(time.Minute)})
	if err != nil || changed {
		t.Errorf("same assignee again: changed %v err %v, want false nil", changed, err)
	}

	t3 := t2.Add(time.Hour)
	var none *store.Assignee
	got, changed, err = q.UpdateIssue(ctx, w.ID, is.ID, store.IssuePatch{Assignee: &none, Labels: ptr([]string{}), UpdatedAt: t3})
	must(t, "unassign", err)
	if !changed || got.Assignee != nil || len(got.Labels) != 0 || got.Labels == nil || got.Version != 4 {
		t.Errorf("unassign and clear labels: changed %v assignee %+v labels %#v version %d", changed, got.Assignee, got.Labels, got.Version)
	}
	stored, err = q.GetIssue(ctx, w.ID, is.ID)
	must(t, "GetIssue", err)
	if stored.Assignee != nil || stored.Labels == nil || len(stored.Labels) != 0 || !stored.UpdatedAt.Equal(t3) {
		t.Errorf("stored after unassign: assignee %+v labels %#v updated %v", stored.Assignee, stored.Labels, stored.UpdatedAt)
	}

	_, _, err = q.UpdateIssue(ctx, w.ID, newUUID(), store.IssuePatch{Title: ptr("x"), UpdatedAt: t3})
	wantErr(t, "UpdateIssue of an unknown id", err, store.ErrNotFound)
	_, _, err = q.UpdateIssue(ctx, w.ID, "AAC-77", store.IssuePatch{Title: ptr("x"), UpdatedAt: t3})
	wantErr(t, "UpdateIssue of an unknown key", err, store.ErrNotFound)
}

// testIsolation: every read and write naming another workspace's item is not_found,
// and lists never show it. Both workspaces use the same key prefix, so keys collide.
func testIsolation(t *testing.T, b Backend) {
	ctx, q := t.Context(), b.Queries
	a, bw := newWorkspace(t, q, "AAC"), newWorkspace(t, q, "AAC")
	at := baseTime()
	is := newIssue(t, q, a.ID, "secret", at, func(n *store.NewIssue) { n.Labels = []string{"bug"} })
	c, err := q.CreateComment(ctx, a.ID, is.ID, store.NewComment{Author: "alice", Body: "hi", CreatedAt: at})
	must(t, "CreateComment", err)
	_, err = q.UpdateMember(ctx, store.Member{WorkspaceID: a.ID, UserID: "alice", Role: store.RoleAdmin, CreatedAt: at})
	must(t, "UpdateMember", err)
	_, err = q.CreateAgent(ctx, store.Agent{WorkspaceID: a.ID, ID: "agent-1", Name: "A", CreatedAt: at})
	must(t, "CreateAgent", err)
	must(t, "UpdateUsage", q.UpdateUsage(ctx, store.UsageIncrement{WorkspaceID: a.ID, Date: at.Format("2006-01-02"), Tool: "get_issue", Outcome: "success", EventID: uid("ev")}))
	idem := store.IdempotencyKey{WorkspaceID: a.ID, UserID: "alice", Tool: "create_issue", KeyHash: sha("k1")}
	must(t, "CreateIdempotency", q.CreateIdempotency(ctx, store.IdempotencyRecord{IdempotencyKey: idem, State: store.IdemPending, ArgsDigest: sha("args"), CreatedAt: at}))

	for _, ref := range []string{is.ID, "AAC-1", "aac-1"} {
		_, err := q.GetIssue(ctx, bw.ID, ref)
		wantErr(t, "GetIssue from B of "+ref, err, store.ErrNotFound)
		_, _, err = q.UpdateIssue(ctx, bw.ID, ref, store.IssuePatch{Title: ptr("pwned"), UpdatedAt: at})
		wantErr(t, "UpdateIssue from B of "+ref, err, store.ErrNotFound)
		_, err = q.CreateComment(ctx, bw.ID, ref, store.NewComment{Author: "mallory", Body: "x", CreatedAt: at})
		wantErr(t, "CreateComment from B on "+ref, err, store.ErrNotFound)
		_, err = q.ListComments(ctx, bw.ID, ref, store.PageRequest{})
		wantErr(t, "ListComments from B of "+ref, err, store.ErrNotFound)
		_, err = q.CreateAutopilotRun(ctx, bw.ID, store.AutopilotRun{IssueID: ref, IssueKey: "AAC-1", Status: store.RunQueued, RequestedBy: "mallory", CreatedAt: at, UpdatedAt: at})
		wantErr(t, "CreateAutopilotRun from B on "+ref, err, store.ErrNotFound)
		_, err = q.DeleteIssue(ctx, bw.ID, ref, nil)
		wantErr(t, "DeleteIssue from B of "+ref, err, store.ErrNotFound)
	}
	_, err = q.GetComment(ctx, bw.ID, c.ID)
	wantErr(t, "GetComment from B", err, store.ErrNotFound)
	_, err = q.DeleteComment(ctx, bw.ID, c.ID, nil)
	wantErr(t, "DeleteComment from B", err, store.ErrNotFound)
	_, err = q.GetMember(ctx, bw.ID, "alice")
	wantErr(t, "GetMember from B", err, store.ErrNotFound)
	_, err = q.GetAgent(ctx, bw.ID, "agent-1")
	wantErr(t, "GetAgent from B", err, store.ErrNotFound)
	otherIdem := idem
	otherIdem.WorkspaceID = bw.ID
	_, err = q.GetIdempotency(ctx, otherIdem)
	wantErr(t, "GetIdempotency from B", err, store.ErrNotFound)

	page, err := q.ListIssues(ctx, bw.ID, store.IssueFilter{})
	must(t, "ListIssues B", err)
	if len(page.Issues) != 0 {
		t.Errorf("B lists %d issues of A", len(page.Issues))
	}
	for _, f := range []store.IssueFilter{{Label: "bug"}, {Query: "secret"}, {Status: "open"}} {
		page, err := q.ListIssues(ctx, bw.ID, f)
		must(t, "ListIssues B filtered", err)
		if len(page.Issues) != 0 {
			t.Errorf("B lists A's issues with filter %+v", f)
		}
	}
	agents, err := q.ListAgents(ctx, bw.ID)
	must(t, "ListAgents B", err)
	if len(agents) != 0 {
		t.Errorf("B lists A's agents: %+v", agents)
	}
	usage, err := q.ListUsage(ctx, bw.ID, at.AddDate(0, 0, -1).Format("2006-01-02"), at.AddDate(0, 0, 1).Format("2006-01-02"))
	must(t, "ListUsage B", err)
	if len(usage) != 0 {
		t.Errorf("B sees A's usage: %+v", usage)
	}

	// Nothing of A moved.
	got, err := q.GetIssue(ctx, a.ID, is.ID)
	must(t, "GetIssue A", err)
	if got.Title != "secret" || got.Version != 1 || got.CommentCount != 1 {
		t.Errorf("A's issue changed by B's calls: %+v", got)
	}
	if _, err := q.GetComment(ctx, a.ID, c.ID); err != nil {
		t.Errorf("A's comment gone after B's calls: %v", err)
	}

	// B has its own key counter; its AAC-1 is its own issue.
	mine := newIssue(t, q, bw.ID, "mine", at)
	if mine.Key != "AAC-1" {
		t.Errorf("B's first key = %q, want AAC-1", mine.Key)
	}
	got, err = q.GetIssue(ctx, bw.ID, "AAC-1")
	must(t, "GetIssue B AAC-1", err)
	if got.ID != mine.ID {
		t.Errorf("B's AAC-1 resolved to %s, want its own %s", got.ID, mine.ID)
	}
	// A's tombstone does not answer for B.
	_, err = q.DeleteIssue(ctx, a.ID, is.ID, nil)
	must(t, "DeleteIssue A", err)
	_, err = q.DeleteIssue(ctx, bw.ID, is.ID, nil)
	wantErr(t, "DeleteIssue from B of A's deleted issue", err, store.ErrNotFound)
	res, err := q.DeleteIssue(ctx, bw.ID, "AAC-1", nil)
	must(t, "DeleteIssue B AAC-1", err)
	if res.ID != mine.ID || res.Replay {
		t.Errorf("B's delete of its AAC-1 = %+v, want its own issue, not a replay of A's", res)
	}
}
