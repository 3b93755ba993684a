package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// The dev fixture that `serve --dev` (and so `make run`) creates.
const (
	devWorkspace = "demo"
	devKey       = "AAC"
	devUser      = "dev"
	// devTokenPrefix names the tokens --dev mints, so the next start can find and
	// revoke them without touching tokens an operator created.
	devTokenPrefix = "dev-"
	devTokenTTL    = 7 * 24 * time.Hour
)

// devReadScopes are the scopes of the read-only dev token: every read tool.
var devReadScopes = []string{"issues:read", "comments:read", "dashboard:read"}

// devStore is what the dev setup needs.
type devStore interface {
	store.Queries
	auth.TokenStore
}

type devTokens struct {
	full, readOnly     string
	fullID, readOnlyID string
}

// setupDev seeds the demo workspace the first time and mints fresh dev tokens every
// time, revoking the ones the previous start printed: their secrets were only shown
// on a terminal, and a dev restart is the natural moment to retire them.
func setupDev(ctx context.Context, s devStore, now time.Time, log *slog.Logger) (*devTokens, error) {
	now = now.UTC()
	_, err := s.GetWorkspace(ctx, devWorkspace)
	switch {
	case errors.Is(err, store.ErrNotFound):
		if err := seedDev(ctx, s, now); err != nil {
			return nil, fmt.Errorf("seed the dev workspace: %w", err)
		}
		log.Info("seeded dev workspace", "workspace", devWorkspace, "user", devUser)
	case err != nil:
		return nil, err
	}

	old, err := s.ListTokens(ctx, devWorkspace)
	if err != nil {
		return nil, err
	}
	revoked := 0
	for _, t := range old {
		if strings.HasPrefix(t.Name, devTokenPrefix) && t.RevokedAt == nil {
			if _, err := s.UpdateTokenRevoked(ctx, t.TokenID, now); err != nil {
				return nil, fmt.Errorf("revoke old dev token %s: %w", t.TokenID, err)
			}
			revoked++
		}
	}
	if revoked > 0 {
		log.Info("revoked previous dev tokens", "count", revoked)
	}

	var out devTokens
	var rec auth.TokenRecord
	out.full, rec, err = auth.IssueToken(ctx, s, auth.TokenRequest{
		WorkspaceID: devWorkspace, UserID: devUser, Name: devTokenPrefix + "full",
		Scopes: auth.AllScopes, TTL: devTokenTTL,
	}, now)
	if err != nil {
		return nil, err
	}
	out.fullID = rec.TokenID
	out.readOnly, rec, err = auth.IssueToken(ctx, s, auth.TokenRequest{
		WorkspaceID: devWorkspace, UserID: devUser, Name: devTokenPrefix + "read-only",
		Scopes: devReadScopes, TTL: devTokenTTL,
	}, now)
	if err != nil {
		return nil, err
	}
	out.readOnlyID = rec.TokenID
	return &out, nil
}

// seedDev creates the demo workspace, its admin, two agents and a few issues.
func seedDev(ctx context.Context, s devStore, now time.Time) error {
	if _, err := s.CreateWorkspace(ctx, store.Workspace{ID: devWorkspace, Key: devKey, Name: "Demo workspace", CreatedAt: now}); err != nil {
		return err
	}
	if _, err := s.UpdateMember(ctx, store.Member{WorkspaceID: devWorkspace, UserID: devUser, Role: store.RoleAdmin, CreatedAt: now}); err != nil {
		return err
	}
	for _, a := range []store.Agent{
		{WorkspaceID: devWorkspace, ID: "triage-bot", Name: "Triage bot", CreatedAt: now},
		{WorkspaceID: devWorkspace, ID: "fix-bot", Name: "Fix bot", CreatedAt: now},
	} {
		if _, err := s.CreateAgent(ctx, a); err != nil {
			return err
		}
	}
	issues := []store.NewIssue{
		{Title: "Login page rejects valid passwords", Description: "Users with a '+' in their e-mail cannot sign in.", Status: "open", Priority: "high", Labels: []string{"bug", "auth"}},
		{Title: "Add CSV export to the dashboard", Description: "Admins want the daily usage as CSV.", Status: "in_progress", Priority: "medium", Labels: []string{"feature"}},
		{Title: "Document the MCP tool annotations", Description: "Explain readOnlyHint, destructiveHint, idempotentHint and openWorldHint.", Status: "open", Priority: "low", Labels: []string{"docs"}},
		{Title: "Upgrade the SQLite driver", Description: "", Status: "done", Priority: "low", Labels: []string{}},
	}
	var first store.Issue
	for i, in := range issues {
		in.CreatedBy = devUser
		// Distinct times keep "most recently updated first" meaningful in the demo.
		in.CreatedAt = now.Add(time.Duration(i-len(issues)) * time.Minute)
		is, err := s.CreateIssue(ctx, devWorkspace, in)
		if err != nil {
			return err
		}
		if i == 0 {
			first = is
		}
	}
	_, err := s.CreateComment(ctx, devWorkspace, first.ID, store.NewComment{
		Author: devUser, Body: "Reproduced with alice+test@example.com.", CreatedAt: now,
	})
	return err
}
