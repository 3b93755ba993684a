// Package guardtest provides test fixtures for code built on the guard: an
// in-memory audit sink and a seeded in-memory world with workspaces, roles, issues and
// tokens. It is imported only by tests.
package guardtest

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/autopilot"
	"github.com/aacworkflow/aacmcp/shared/catalog"
	"github.com/aacworkflow/aacmcp/shared/store"
	"github.com/aacworkflow/aacmcp/shared/store/memory"
)

// MemorySink collects audit records. Set Fail to make Write fail.
type MemorySink struct {
	mu   sync.Mutex
	recs []audit.Record
	Fail error
}

// Write implements audit.Sink; every record must pass audit.Record.Validate.
func (s *MemorySink) Write(_ context.Context, r audit.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Fail != nil {
		return s.Fail
	}
	if err := r.Validate(); err != nil {
		return err
	}
	s.recs = append(s.recs, r)
	return nil
}

// Records returns a copy of what was written so far.
func (s *MemorySink) Records() []audit.Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.recs)
}

// Reset forgets every record.
func (s *MemorySink) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recs = nil
}

// Workspace, users and roles of the seeded world.
const (
	WS       = "acme"  // key ACME
	OtherWS  = "other" // key OTH
	Admin    = "ada"   // admin of WS
	Member   = "mia"   // member of WS, author of Issue
	Member2  = "max"   // member of WS, not an author
	Viewer   = "vic"   // viewer of WS
	Outsider = "olga"  // admin of OtherWS, no member record in WS
	Removed  = "rob"   // had a token for WS, member record deleted
	Agent    = "agent-1"
)

// World is a seeded store plus the catalog built on it.
type World struct {
	Store   *memory.Store
	Catalog *catalog.Catalog
	// Issue is an issue of WS created by Member, with one comment by Member
	// (Comment). OtherIssue belongs to OtherWS.
	Issue      store.Issue
	Comment    store.Comment
	OtherIssue store.Issue
	Now        time.Time
}

// NewWorld opens a SQLite store in t.TempDir() and seeds it. The store is closed
// by t.Cleanup.
func NewWorld(t testing.TB) *World {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	st := memory.New()
	outbox, err := autopilot.NewOutbox(filepath.Join(dir, "outbox.jsonl"))
	if err != nil {
		t.Fatalf("outbox: %v", err)
	}
	t.Cleanup(func() { _ = outbox.Close() })

	now := time.Now().UTC()
	w := &World{Store: st, Catalog: catalog.New(catalog.Deps{Dispatcher: outbox}), Now: now}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("seed: %v", err)
		}
	}
	_, err = st.CreateWorkspace(ctx, store.Workspace{ID: WS, Key: "ACME", Name: "Acme", CreatedAt: now})
	must(err)
	_, err = st.CreateWorkspace(ctx, store.Workspace{ID: OtherWS, Key: "OTH", Name: "Other", CreatedAt: now})
	must(err)
	for user, role := range map[string]store.Role{Admin: store.RoleAdmin, Member: store.RoleMember, Member2: store.RoleMember, Viewer: store.RoleViewer} {
		_, err = st.UpdateMember(ctx, store.Member{WorkspaceID: WS, UserID: user, Role: role, CreatedAt: now})
		must(err)
	}
	_, err = st.UpdateMember(ctx, store.Member{WorkspaceID: WS, UserID: Removed, Role: store.RoleAdmin, CreatedAt: now})
	must(err)
	must(st.DeleteMember(ctx, WS, Removed))
	_, err = st.UpdateMember(ctx, store.Member{WorkspaceID: OtherWS, UserID: Outsider, Role: store.RoleAdmin, CreatedAt: now})
	must(err)
	_, err = st.CreateAgent(ctx, store.Agent{WorkspaceID: WS, ID: Agent, Name: "Agent One", CreatedAt: now})
	must(err)
	w.Issue, err = st.CreateIssue(ctx, WS, store.NewIssue{Title: "First", Description: "seeded", Status: "open", Priority: "medium", Labels: []string{"seed"}, CreatedBy: Member, CreatedAt: now})
	must(err)
	w.Comment, err = st.CreateComment(ctx, WS, w.Issue.ID, store.NewComment{Author: Member, Body: "hello", CreatedAt: now})
	must(err)
	w.OtherIssue, err = st.CreateIssue(ctx, OtherWS, store.NewIssue{Title: "Theirs", Status: "open", Priority: "low", Labels: []string{}, CreatedBy: Outsider, CreatedAt: now})
	must(err)
	return w
}

// Principal is a principal of user in ws holding scopes (no token behind it).
func Principal(ws, user string, scopes ...string) *auth.Principal {
	return &auth.Principal{WorkspaceID: ws, UserID: user, TokenID: "tok_" + user, Scopes: slices.Clone(scopes)}
}

// Token issues a real token for user in ws with scopes and returns its secret.
func (w *World) Token(t testing.TB, ws, user string, scopes ...string) string {
	t.Helper()
	secret, _, err := auth.IssueToken(context.Background(), w.Store, auth.TokenRequest{
		WorkspaceID: ws, UserID: user, Name: "test", Scopes: scopes, TTL: time.Hour,
	}, time.Now())
	if err != nil {
		t.Fatalf("issue token: %v", err)
	}
	return secret
}

// Args returns valid arguments for a successful call of tool by Admin, Member (the
// author) or any other writer. Tools that change or delete their target get a fresh
// issue (or comment) created by Member, so calls never interfere.
func (w *World) Args(t testing.TB, tool string) json.RawMessage {
	t.Helper()
	ctx := context.Background()
	fresh := func() store.Issue {
		is, err := w.Store.CreateIssue(ctx, WS, store.NewIssue{Title: "Fresh", Status: "open", Priority: "low", Labels: []string{}, CreatedBy: Member, CreatedAt: time.Now().UTC()})
		if err != nil {
			t.Fatalf("fresh issue: %v", err)
		}
		return is
	}
	var v map[string]any
	switch tool {
	case "list_issues", "dashboard_usage_daily":
		v = map[string]any{}
	case "get_issue", "list_comments":
		v = map[string]any{"issue_id": w.Issue.ID}
	case "create_issue":
		v = map[string]any{"title": "Created"}
	case "update_issue":
		v = map[string]any{"issue_id": fresh().ID, "title": "Renamed"}
	case "comment_issue":
		v = map[string]any{"issue_id": fresh().ID, "body": "a comment"}
	case "assign_issue_to_agent":
		v = map[string]any{"issue_id": fresh().ID, "agent_id": Agent}
	case "trigger_autopilot":
		v = map[string]any{"issue_id": fresh().ID}
	case "delete_issue":
		v = map[string]any{"issue_id": fresh().ID, "confirm": true}
	case "delete_comment":
		c, err := w.Store.CreateComment(ctx, WS, w.Issue.ID, store.NewComment{Author: Member, Body: "doomed", CreatedAt: time.Now().UTC()})
		if err != nil {
			t.Fatalf("fresh comment: %v", err)
		}
		v = map[string]any{"comment_id": c.ID, "confirm": true}
	default:
		t.Fatalf("guardtest.Args: no arguments known for tool %q", tool)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal args: %v", err)
	}
	return b
}
