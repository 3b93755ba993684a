package oauth_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/aacworkflow/aacmcp/shared/catalog"
	"github.com/aacworkflow/aacmcp/test/oauth/flow"
)

// mcpgoScopes is what the mcp-go client asks for.
var mcpgoScopes = []string{"issues:read", "comments:read"}

// TestMCPGoClient runs mcp-go's client OAuth support (dynamic registration, PKCE,
// the code exchange, its own refresh of an expired token) through the dev sign-in
// and consent pages, which a person answers with plain HTTP; then tools/list and a
// call. Last, a refresh token used a second time is refused and takes the grant
// with it (reuse detection).
func TestMCPGoClient(t *testing.T) {
	ctx := context.Background()
	srv := flow.Serve(t, flow.ServeOptions{Dev: true})
	store := client.NewMemoryTokenStore()
	c, err := client.NewOAuthStreamableHttpClient(srv.MCPURL, client.OAuthConfig{
		// Nobody listens there: the person hands the redirect to the test.
		RedirectURI: flow.NewRedirect(t).URL,
		Scopes:      mcpgoScopes,
		TokenStore:  store,
		PKCEEnabled: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = c.Initialize(ctx, initRequest())
	if !client.IsOAuthAuthorizationRequiredError(err) {
		t.Fatalf("initialize with no token: %v, want an OAuth authorization required error", err)
	}
	h := client.GetOAuthHandler(err)
	if err := h.RegisterClient(ctx, "aacmcp e2e (mcp-go)"); err != nil {
		t.Fatalf("dynamic registration: %v\n%s", err, srv.Logs())
	}
	if h.GetClientID() == "" {
		t.Fatal("registration returned no client id")
	}
	verifier, err := client.GenerateCodeVerifier()
	if err != nil {
		t.Fatal(err)
	}
	state, err := client.GenerateState()
	if err != nil {
		t.Fatal(err)
	}
	authURL, err := h.GetAuthorizationURL(ctx, state, client.GenerateCodeChallenge(verifier))
	if err != nil {
		t.Fatal(err)
	}

	person, err := flow.NewPerson(srv.Base)
	if err != nil {
		t.Fatal(err)
	}
	back, consents, err := person.Authorize(ctx, authURL, flow.Answer{User: flow.DevUser})
	if err != nil {
		t.Fatalf("sign-in and consent: %v\n%s", err, srv.Logs())
	}
	// The page lists scopes in its own order.
	want := slices.Sorted(slices.Values(mcpgoScopes))
	if len(consents) != 1 || !slices.Equal(slices.Sorted(slices.Values(consents[0].Scopes)), want) || !slices.Equal(slices.Sorted(slices.Values(consents[0].Checked)), want) {
		t.Errorf("consent pages %+v: want one offering %v, ticked", consents, mcpgoScopes)
	}
	q := back.Query()
	if q.Get("error") != "" || q.Get("code") == "" || q.Get("state") != state || q.Get("iss") != srv.Base {
		t.Fatalf("redirect back %s: want a code, state %s and iss %s", back.Redacted(), state, srv.Base)
	}
	if err := h.ProcessAuthorizationResponse(ctx, q.Get("code"), q.Get("state"), verifier); err != nil {
		t.Fatalf("code exchange: %v\n%s", err, srv.Logs())
	}
	first, err := store.GetToken(ctx)
	if err != nil {
		t.Fatal(err)
	}

	init, err := c.Initialize(ctx, initRequest())
	if err != nil {
		t.Fatalf("initialize with the token: %v", err)
	}
	if init.ServerInfo.Name != "aacmcp" {
		t.Errorf("server %q", init.ServerInfo.Name)
	}
	checkToolsFor(t, c, mcpgoScopes)
	callListIssues(t, c)

	// The token has expired as far as the client knows: its next request
	// refreshes through mcp-go's own path.
	expired := *first
	expired.ExpiresAt = time.Now().Add(-time.Second)
	if err := store.SaveToken(ctx, &expired); err != nil {
		t.Fatal(err)
	}
	callListIssues(t, c)
	second, err := store.GetToken(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if second.AccessToken == first.AccessToken || second.RefreshToken == first.RefreshToken || second.RefreshToken == "" {
		t.Fatalf("after mcp-go's refresh: access changed %v, refresh changed %v", second.AccessToken != first.AccessToken, second.RefreshToken != first.RefreshToken)
	}

	// The first refresh token was used up by the refresh: presenting it again
	// is reuse, which must revoke the grant, so the current one dies too.
	if _, err := h.RefreshToken(ctx, first.RefreshToken); !isInvalidGrant(err) {
		t.Fatalf("reusing a rotated refresh token: %v, want invalid_grant", err)
	}
	if _, err := h.RefreshToken(ctx, second.RefreshToken); !isInvalidGrant(err) {
		t.Fatalf("the current refresh token after reuse was detected: %v, want invalid_grant (the grant is revoked)", err)
	}
}

func initRequest() mcp.InitializeRequest {
	return mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: mcp.ProtocolVersion20251125,
		ClientInfo:      mcp.Implementation{Name: "aacmcp-mcpgo-oauth", Version: "1.0.0"},
	}}
}

func isInvalidGrant(err error) bool {
	var oe transport.OAuthError
	return errors.As(err, &oe) && oe.ErrorCode == "invalid_grant"
}

// checkToolsFor requires tools/list to list exactly the catalog's tools that
// scopes unlock, in catalog order.
func checkToolsFor(t *testing.T, c *client.Client, scopes []string) {
	t.Helper()
	res, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var got, want []string
	for _, tl := range res.Tools {
		got = append(got, tl.Name)
	}
	for _, tl := range catalog.New(catalog.Deps{}).Tools() {
		if allIn(tl.Scopes, scopes) {
			want = append(want, tl.Name)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("tools/list with %v: %v, want %v", scopes, got, want)
	}
}

func allIn(need, have []string) bool {
	for _, s := range need {
		if !slices.Contains(have, s) {
			return false
		}
	}
	return true
}

func callListIssues(t *testing.T, c *client.Client) {
	t.Helper()
	res, err := c.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "list_issues", Arguments: map[string]any{"limit": 2}}})
	if err != nil {
		t.Fatalf("list_issues: %v", err)
	}
	if res.IsError || res.StructuredContent == nil {
		t.Fatalf("list_issues: %+v", res)
	}
}
