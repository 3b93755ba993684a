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

// NewWorld builds an in-memory store and seeds it (Seed).
func NewWorld(t testing.TB) *World {
	t.Helper()
	dir := t.TempDir()
	st := memory.New()
	outbox, err := autopilot.NewOutbox(filepath.Join(dir, "outbox.jsonl"))
	if err != nil {
		t.Fatalf("outbox: %v", err)
	}
	t.Cleanup(func() { _ = outbox.Close() })

	now := time.Now().UTC()
	w := &World{Store: st, Catalog: catalog.New(catalog.Deps{Dispatcher: outbox}), Now: now}
	w.Issue, w.Comment, w.OtherIssue = Seed(t, st, now)
	return w
}

// Seed seeds any store as NewWorld seeds its own: the workspaces WS and OtherWS, the
// members and roles above, Agent, an issue of WS by Member with one comment by
// Member, and an issue of OtherWS.
func Seed(t testing.TB, st store.Queries, now time.Time) (issue store.Issue, comment store.Comment, other store.Issue) {
	t.Helper()
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("seed: %v", err)
		}
	}
	_, err := st.CreateWorkspace(ctx, store.Workspace{ID: WS, Key: "ACME", Name: "Acme", CreatedAt: now})
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
	issue, err = st.CreateIssue(ctx, WS, store.NewIssue{Title: "First", Description: "seeded", Status: "open", Priority: "medium", Labels: []string{"seed"}, CreatedBy: Member, CreatedAt: now})
	must(err)
	comment, err = st.CreateComment(ctx, WS, issue.ID, store.NewComment{Author: Member, Body: "hello", CreatedAt: now})
	must(err)
	other, err = st.CreateIssue(ctx, OtherWS, store.NewIssue{Title: "Theirs", Status: "open", Priority: "low", Labels: []string{}, CreatedBy: Outsider, CreatedAt: now})
	must(err)
	return issue, comment, other
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
// author) or any other writer, derived from the tool's input schema so that a new tool
// needs no case here: each required property gets a value, and nothing else. The
// arguments that name a world object are known by their name, whatever the tool:
// issue_id and comment_id name a fresh issue (or a fresh comment on Issue) by Member
// for a tool that writes, so calls never interfere, and Issue (or Comment) for a
// read-only one; agent_id names Agent. Any other property takes its const, its first
// enum value, or a value of its type. A tool that writes also gets its optional
// free-text properties (a string with no pattern or format, never the idempotency
// key), so that an update changes something.
func (w *World) Args(t testing.TB, tool string) json.RawMessage {
	t.Helper()
	return ArgsOn(t, w.Catalog, w.Store, w.Issue, w.Comment, tool)
}

// ArgsOn is World.Args on any store seeded by Seed, issue and comment being the
// seeded ones.
func ArgsOn(t testing.TB, cat *catalog.Catalog, st store.Queries, issue store.Issue, comment store.Comment, tool string) json.RawMessage {
	t.Helper()
	tl, ok := cat.Lookup(tool)
	if !ok {
		t.Fatalf("guardtest.Args: no tool %q in the catalog", tool)
	}
	var sch struct {
		Required   []string `json:"required"`
		Properties map[string]struct {
			Type    string `json:"type"`
			Const   any    `json:"const"`
			Enum    []any  `json:"enum"`
			Minimum *int   `json:"minimum"`
			Pattern string `json:"pattern"`
			Format  string `json:"format"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(tl.InputSchema, &sch); err != nil {
		t.Fatalf("guardtest.Args: %s's input schema: %v", tool, err)
	}
	ctx := context.Background()
	v := map[string]any{}
	fill := slices.Clone(sch.Required)
	if !tl.Annotations.ReadOnly {
		for name, prop := range sch.Properties {
			if prop.Type == "string" && prop.Pattern == "" && prop.Format == "" && prop.Enum == nil &&
				name != catalog.IdempotencyKeyArg && !slices.Contains(fill, name) {
				fill = append(fill, name)
			}
		}
	}
	for _, name := range fill {
		prop := sch.Properties[name]
		switch {
		case name == "issue_id" && tl.Annotations.ReadOnly:
			v[name] = issue.ID
		case name == "issue_id":
			is, err := st.CreateIssue(ctx, WS, store.NewIssue{Title: "Fresh", Status: "open", Priority: "low", Labels: []string{}, CreatedBy: Member, CreatedAt: time.Now().UTC()})
			if err != nil {
				t.Fatalf("fresh issue: %v", err)
			}
			v[name] = is.ID
		case name == "comment_id" && tl.Annotations.ReadOnly:
			v[name] = comment.ID
		case name == "comment_id":
			c, err := st.CreateComment(ctx, WS, issue.ID, store.NewComment{Author: Member, Body: "doomed", CreatedAt: time.Now().UTC()})
			if err != nil {
				t.Fatalf("fresh comment: %v", err)
			}
			v[name] = c.ID
		case name == "agent_id":
			v[name] = Agent
		case prop.Const != nil:
			v[name] = prop.Const
		case len(prop.Enum) > 0:
			v[name] = prop.Enum[0]
		case prop.Type == "string":
			v[name] = "a " + name
		case prop.Type == "integer" || prop.Type == "number":
			n := 1
			if prop.Minimum != nil {
				n = *prop.Minimum
			}
			v[name] = n
		case prop.Type == "boolean":
			v[name] = false
		case prop.Type == "array":
			v[name] = []any{}
		default:
			t.Fatalf("guardtest.Args: %s's required %s has type %q, which Args cannot fill", tool, name, prop.Type)
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal args: %v", err)
	}
	return b
}
