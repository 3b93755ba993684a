package mcpserver_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/auth"
	gt "github.com/aacworkflow/aacmcp/shared/guard/guardtest"
)

// TestRevokedOAuthTokenNamesClient: a call refused because its OAuth access token
// was revoked is audited with the token's client, so an admin sees which client
// still uses a revoked grant.
func TestRevokedOAuthTokenNamesClient(t *testing.T) {
	s := newServer(t)
	secret, hash, err := auth.MintWithPrefix(auth.AccessTokenPrefix)
	if err != nil {
		t.Fatal(err)
	}
	const client = "https://chatgpt.example/oauth/client.json"
	rec := auth.TokenRecord{Hash: hash, TokenID: auth.NewTokenID(), Name: "oauth:ChatGPT", WorkspaceID: gt.WS, UserID: gt.Admin,
		Scopes: auth.AllScopes, CreatedAt: time.Now().Add(-time.Minute), ExpiresAt: time.Now().Add(time.Hour), ClientID: client, GrantID: "gr_1"}
	if err := s.w.Store.CreateToken(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.Store.UpdateTokenRevoked(context.Background(), rec.TokenID, time.Now()); err != nil {
		t.Fatal(err)
	}
	var r response
	got := s.expectOneRecord(t, func() {
		r = s.do(t, "POST", "/mcp", "", rpcBody(1, "tools/list", nil), "Authorization: Bearer "+secret)
	})
	if r.status != http.StatusUnauthorized {
		t.Fatalf("status %d, want 401", r.status)
	}
	if got.Reason != "invalid_token" || got.TokenID != rec.TokenID || got.ClientID != client {
		t.Errorf("record %+v, want invalid_token naming token %s and client %s", got, rec.TokenID, client)
	}
}
