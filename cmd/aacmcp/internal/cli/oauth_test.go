package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/audit/file"
	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/oauth"
	"github.com/aacworkflow/aacmcp/shared/store"
)

func TestOAuthClientsPolicy(t *testing.T) {
	data := t.TempDir()
	with := func(args ...string) []string { return append(args, "--data", data) }

	v := decodeJSON[clientsView](t, mustRun(t, with("oauth", "clients", "list", "--json")...))
	if v.Policy.Mode != store.OAuthPolicyAny || len(v.Policy.Allowed) != 0 || len(v.Clients) != 0 {
		t.Fatalf("a new database: %+v, want policy any, nothing allowed, no clients", v)
	}
	const claude = "https://claude.example/oauth/client-metadata.json"
	out := mustRun(t, with("oauth", "clients", "allow", claude)...)
	if !strings.Contains(out, "takes effect after") {
		t.Errorf("allow under policy any does not say the list is not in force yet: %q", out)
	}
	mustRun(t, with("oauth", "clients", "allow", claude)...) // adding twice keeps one entry
	mustRun(t, with("oauth", "clients", "allow", "dcr_client_1")...)
	pol := decodeJSON[store.OAuthPolicy](t, mustRun(t, with("oauth", "clients", "policy", "allowlist", "--json")...))
	if pol.Mode != store.OAuthPolicyAllowlist || strings.Join(pol.Allowed, " ") != claude+" dcr_client_1" {
		t.Fatalf("policy = %+v", pol)
	}
	mustRun(t, with("oauth", "clients", "disallow", "dcr_client_1")...)
	text := mustRun(t, with("oauth", "clients", "list")...)
	if !strings.Contains(text, "policy: allowlist") || !strings.Contains(text, "allowed: "+claude) || strings.Contains(text, "dcr_client_1") {
		t.Errorf("clients list:\n%s", text)
	}

	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"oauth", "clients", "policy", "everyone"}, ExitUsage},
		{[]string{"oauth", "clients", "allow", "has space"}, ExitUsage},
		{[]string{"oauth", "clients", "disallow", "never-added"}, ExitFailure},
		{[]string{"oauth", "clients", "remove", "no-such-client"}, ExitFailure},
		{[]string{"oauth", "grants", "revoke", "no-such-grant"}, ExitFailure},
	} {
		if r := run(t, nil, with(tc.args...)...); r.code != tc.code {
			t.Errorf("aacmcp %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(tc.args, " "), r.code, tc.code, r.stdout, r.stderr)
		}
	}
}

func TestOAuthGrantsListAndRevoke(t *testing.T) {
	data := t.TempDir()
	ctx := context.Background()
	with := func(args ...string) []string { return append(args, "--data", data) }
	mustRun(t, with("workspace", "create", "--id", "acme", "--key", "acme", "--name", "Acme")...)
	mustRun(t, with("member", "add", "--workspace", "acme", "--user", "alice", "--role", "member")...)

	// A grant with one live access token, as the token endpoint leaves them.
	st, err := openSQLite(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	secret, hash, err := auth.MintWithPrefix(auth.AccessTokenPrefix)
	if err != nil {
		t.Fatal(err)
	}
	tok := auth.TokenRecord{Hash: hash, TokenID: auth.NewTokenID(), Name: "oauth:Claude", WorkspaceID: "acme", UserID: "alice",
		Scopes: []string{"issues:read"}, CreatedAt: now, ExpiresAt: now.Add(time.Hour), ClientID: "https://claude.example/cimd", GrantID: "gr_1"}
	if err := st.CreateToken(ctx, tok); err != nil {
		t.Fatal(err)
	}
	g := store.OAuthGrant{ID: "gr_1", ClientID: tok.ClientID, ClientName: "Claude", WorkspaceID: "acme", UserID: "alice",
		Scopes: tok.Scopes, Resource: "http://127.0.0.1/mcp", CreatedAt: now, LastUsedAt: now, ExpiresAt: now.Add(24 * time.Hour)}
	if err := st.CreateOAuthGrant(ctx, g); err != nil {
		t.Fatal(err)
	}
	if _, err := st.UpdateOAuthGrantRotate(ctx, store.OAuthRotation{GrantID: g.ID, NewRefreshHash: auth.Hash("refresh"), AccessTokenID: tok.TokenID, At: now, ExpiresAt: g.ExpiresAt}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	gs := decodeJSON[[]store.OAuthGrant](t, mustRun(t, with("oauth", "grants", "list", "--workspace", "acme", "--json")...))
	if len(gs) != 1 || gs[0].ID != "gr_1" || gs[0].RevokedAt != nil {
		t.Fatalf("grants list = %+v", gs)
	}
	if out := mustRun(t, with("oauth", "grants", "list", "--user", "bob")...); strings.Contains(out, "gr_1") {
		t.Errorf("--user bob lists alice's grant:\n%s", out)
	}
	r := run(t, nil, with("oauth", "grants", "revoke", "gr_1")...)
	if r.code != ExitOK || !strings.Contains(r.stdout, "revoked grant gr_1") {
		t.Errorf("revoke: exit %d, printed %q", r.code, r.stdout)
	}
	// An admin's revocation has nothing to do with signing in.
	if strings.Contains(r.stderr, "sign in") {
		t.Errorf("revoke warned about sign-in: %q", r.stderr)
	}
	if out := mustRun(t, with("oauth", "grants", "list")...); !strings.Contains(out, "revoked ") {
		t.Errorf("grants list after revoke:\n%s", out)
	}

	// The access token issued under the grant is revoked with it, and the revocation
	// is audited as the grants page's would be.
	st, err = openSQLite(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := (&auth.Verifier{Store: st}).Verify(ctx, secret); auth.RejectReason(err) != auth.ReasonRevoked {
		t.Errorf("the grant's access token after revoke: %v, want revoked", err)
	}
	var found bool
	if err := file.Scan(data, func(e file.Entry) error {
		r := e.Record
		// The record says an admin revoked it through the CLI (no address, the
		// CLI as user agent), where the grants page's carries the person's browser.
		if r.EventType == audit.EventAuthorization && r.Action == audit.ActionGrantRevoked && r.WorkspaceID == "acme" && r.UserID == "alice" && r.ClientID == tok.ClientID &&
			r.UserAgent == oauth.RevokerAgent+" (admin)" && r.SourceIP == "" {
			found = true
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !found {
		t.Error("no grant_revoked audit record")
	}
}
