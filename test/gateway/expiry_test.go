package gateway

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/gateway"
	"github.com/aacworkflow/aacmcp/test/lambda/lambdatest"
)

// clock is a settable clock shared by the gateway and both functions.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// TestExpiryInsideAuthorizerCache is issue 13 item 7: a token that expires while
// API Gateway still holds the authorizer's Allow for it (60 s) is refused from its
// expiry on, because the cached context carries expires_at and the MCP function
// checks it. The clock is moved, never slept on.
func TestExpiryInsideAuthorizerCache(t *testing.T) {
	clk := &clock{t: time.Now().UTC().Truncate(time.Second)}
	url, authz := startClocked(t, clk.now, func(c *gateway.Config) { c.Stage, c.StageInPath = "prod", true }, true)

	secret, hash, err := auth.MintWithPrefix(auth.AccessTokenPrefix)
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Store.CreateToken(context.Background(), auth.TokenRecord{
		Hash: hash, ClientID: "https://client.example/cimd.json", GrantID: "grant_1", TokenID: "tok_expiring", Name: "expiring", WorkspaceID: lambdatest.Workspace,
		UserID: lambdatest.AdminUser, Scopes: auth.AllScopes, CreatedAt: clk.now(), ExpiresAt: clk.now().Add(30 * time.Second),
	}); err != nil {
		t.Fatal(err)
	}
	get := func() *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, url+"/tools/get_issue", strings.NewReader(`{"issue_id":"`+lambdatest.IssueMain+`"}`))
		req.Header.Set("Authorization", "Bearer "+secret)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp
	}

	if resp := get(); resp.StatusCode != http.StatusOK {
		t.Fatalf("before expiry: %d", resp.StatusCode)
	}
	clk.advance(29 * time.Second)
	if resp := get(); resp.StatusCode != http.StatusOK {
		t.Fatalf("1 s before expiry: %d", resp.StatusCode)
	}
	clk.advance(2 * time.Second) // expired; the cached answer is 31 s old
	resp := get()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("after expiry, inside the cache: %d, want 401", resp.StatusCode)
	}
	if ch := resp.Header.Get("WWW-Authenticate"); !strings.Contains(ch, `error="invalid_token"`) {
		t.Errorf("challenge %q lacks error=\"invalid_token\"", ch)
	}
	if n := authz.n.Load(); n != 1 {
		t.Errorf("authorizer invoked %d times, want 1: the refusal must come from inside the cache", n)
	}
}
