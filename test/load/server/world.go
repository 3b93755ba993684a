package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/store"
	"github.com/aacworkflow/aacmcp/shared/store/sqlite"
)

// quiet drops the store's routine logs (an applied migration) from test output.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// Token names of a Tenant.
const (
	TokAdmin    = "admin"     // admin user, every scope
	TokMember   = "member"    // member user, every scope
	TokViewer   = "viewer"    // viewer user, every scope: writes are permission_denied
	TokReadOnly = "read-only" // admin user, read scopes only: writes are insufficient_scope
	TokRemoved  = "removed"   // every scope, but its user's member record is gone
)

// ReadScopes are the scopes of the read-only token.
var ReadScopes = []string{"issues:read", "comments:read", "dashboard:read"}

// Tenant is one seeded workspace.
type Tenant struct {
	ID, Key             string
	Admin, Member       string
	Viewer, RemovedUser string
	Agents              []string
	// Hot issues are shared by every client of the tenant and changed only with
	// expected_version; Issues are read-only fixtures.
	Hot     []store.Issue
	Issues  []store.Issue
	Comment store.Comment // on Issues[0], by Member
	// Tokens by name (Tok*), secrets; TokenIDs their public ids.
	Tokens   map[string]string
	TokenIDs map[string]string
}

// World is what Seed created.
type World struct {
	DataDir string
	Tenants []*Tenant
	// Expired and Revoked are tokens of Tenants[0]'s admin that must be refused.
	Expired, Revoked string
}

// Secrets returns every token secret the world holds, for leak checks.
func (w *World) Secrets() []string {
	out := []string{w.Expired, w.Revoked}
	for _, t := range w.Tenants {
		for _, s := range t.Tokens {
			out = append(out, s)
		}
	}
	return out
}

// Seed creates the database of dataDir (aacmcp.db, as `aacmcp serve` opens it) with
// tenants workspaces, each with an admin, a member, a viewer, a removed user, two
// agents, hot issues and fixture issues, and tokens for each role. Call it before
// Start: the server must be the only process writing the file while it runs.
func Seed(t testing.TB, dataDir string, tenants, hot int) *World {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(dataDir, "aacmcp.db"), sqlite.WithLogger(quiet))
	if err != nil {
		t.Fatalf("seed: open store: %v", err)
	}
	defer st.Close()
	now := time.Now().UTC()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("seed: %v", err)
		}
	}
	w := &World{DataDir: dataDir}
	for i := range tenants {
		tn := &Tenant{
			ID: fmt.Sprintf("ws%d", i+1), Key: fmt.Sprintf("W%d", i+1),
			Admin: fmt.Sprintf("admin%d", i+1), Member: fmt.Sprintf("member%d", i+1),
			Viewer: fmt.Sprintf("viewer%d", i+1), RemovedUser: fmt.Sprintf("gone%d", i+1),
			Agents:   []string{"agent-a", "agent-b"},
			Tokens:   map[string]string{},
			TokenIDs: map[string]string{},
		}
		_, err := st.CreateWorkspace(ctx, store.Workspace{ID: tn.ID, Key: tn.Key, Name: "Workspace " + tn.Key, CreatedAt: now})
		must(err)
		for user, role := range map[string]store.Role{tn.Admin: store.RoleAdmin, tn.Member: store.RoleMember, tn.Viewer: store.RoleViewer, tn.RemovedUser: store.RoleAdmin} {
			_, err := st.UpdateMember(ctx, store.Member{WorkspaceID: tn.ID, UserID: user, Role: role, CreatedAt: now})
			must(err)
		}
		for _, a := range tn.Agents {
			_, err := st.CreateAgent(ctx, store.Agent{WorkspaceID: tn.ID, ID: a, Name: a, CreatedAt: now})
			must(err)
		}
		for j := range hot {
			is, err := st.CreateIssue(ctx, tn.ID, store.NewIssue{Title: fmt.Sprintf("hot %d", j), Status: "open", Priority: "medium", Labels: []string{"hot"}, CreatedBy: tn.Admin, CreatedAt: now})
			must(err)
			tn.Hot = append(tn.Hot, is)
		}
		for j := range 3 {
			is, err := st.CreateIssue(ctx, tn.ID, store.NewIssue{Title: fmt.Sprintf("fixture %d", j), Description: "seeded", Status: "open", Priority: "low", Labels: []string{"fixture"}, CreatedBy: tn.Member, CreatedAt: now})
			must(err)
			tn.Issues = append(tn.Issues, is)
		}
		tn.Comment, err = st.CreateComment(ctx, tn.ID, tn.Issues[0].ID, store.NewComment{Author: tn.Member, Body: "seeded comment", CreatedAt: now})
		must(err)
		issue := func(name, user string, scopes []string) {
			secret, rec, err := auth.IssueToken(ctx, st, auth.TokenRequest{WorkspaceID: tn.ID, UserID: user, Name: name, Scopes: scopes, TTL: 24 * time.Hour}, now)
			must(err)
			tn.Tokens[name], tn.TokenIDs[name] = secret, rec.TokenID
		}
		issue(TokAdmin, tn.Admin, auth.AllScopes)
		issue(TokMember, tn.Member, auth.AllScopes)
		issue(TokViewer, tn.Viewer, auth.AllScopes)
		issue(TokReadOnly, tn.Admin, ReadScopes)
		issue(TokRemoved, tn.RemovedUser, auth.AllScopes)
		must(st.DeleteMember(ctx, tn.ID, tn.RemovedUser))
		w.Tenants = append(w.Tenants, tn)
	}
	if tenants > 0 {
		tn := w.Tenants[0]
		// Issued two hours ago for one hour: expired now.
		w.Expired, _, err = auth.IssueToken(ctx, st, auth.TokenRequest{WorkspaceID: tn.ID, UserID: tn.Admin, Name: "expired", Scopes: auth.AllScopes, TTL: time.Hour}, now.Add(-2*time.Hour))
		must(err)
		var rec auth.TokenRecord
		w.Revoked, rec, err = auth.IssueToken(ctx, st, auth.TokenRequest{WorkspaceID: tn.ID, UserID: tn.Admin, Name: "revoked", Scopes: auth.AllScopes, TTL: 24 * time.Hour}, now)
		must(err)
		_, err = st.UpdateTokenRevoked(ctx, rec.TokenID, now)
		must(err)
	}
	return w
}

// OpenStore opens the data folder's database for checks after the server stopped.
func OpenStore(t testing.TB, dataDir string) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(dataDir, "aacmcp.db"), sqlite.WithLogger(quiet))
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}
