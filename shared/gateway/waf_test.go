package gateway_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/gateway"
	"github.com/aacworkflow/aacmcp/shared/ratelimit"
)

// TestFrontDoorRateRules: the front door's web ACL is the stack's table of rate
// rules. From one address, a flood without a token is stopped at its limit with
// WAF's 429 and never reaches the origin; callers holding tokens from the same
// address (one organisation behind a hosted client) are counted per token and,
// far more loosely, per address; a new window lets the address in again.
func TestFrontDoorRateRules(t *testing.T) {
	var reached atomic.Int64
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		reached.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(origin.Close)
	u, err := neturl.Parse(origin.URL)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	now := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	limits := ratelimit.EdgeLimits{Unauthenticated: 20, BearerPerAddress: 40, PerToken: 15, OAuthToken: 5, OAuthRegister: 10}
	front := httptest.NewServer(gateway.FrontDoor(gateway.Distribution{Origin: u, RateRules: limits.Rules(), Now: clock,
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))}))
	t.Cleanup(front.Close)

	do := func(path, authorization string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, front.URL+path, nil)
		if authorization != "" {
			req.Header.Set("Authorization", authorization)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		return resp, string(body)
	}
	call := func(path, authorization string) int {
		t.Helper()
		resp, _ := do(path, authorization)
		return resp.StatusCode
	}
	refused := func(t *testing.T, path, authorization, wantBody string) {
		t.Helper()
		before := reached.Load()
		resp, body := do(path, authorization)
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != strconv.Itoa(ratelimit.EdgeRetryAfterSeconds) ||
			body != wantBody || resp.Header.Get("X-Cache") != "Error from cloudfront" {
			t.Errorf("%s: %d Retry-After %q X-Cache %q body %s; want WAF's 429 %s", path, resp.StatusCode,
				resp.Header.Get("Retry-After"), resp.Header.Get("X-Cache"), body, wantBody)
		}
		if reached.Load() != before {
			t.Errorf("a refused request reached the origin")
		}
	}
	rules := map[string]ratelimit.EdgeRule{}
	for _, r := range limits.Rules() {
		rules[r.Name] = r
	}
	var body struct{ Code string }
	if err := json.Unmarshal([]byte(rules["RateLimitPerIp"].Body()), &body); err != nil || body.Code != "rate_limited" {
		t.Fatalf("RateLimitPerIp body %s", rules["RateLimitPerIp"].Body())
	}

	// An unauthenticated flood from one address: stopped after its limit.
	for i := range limits.Unauthenticated {
		if status := call("/mcp", ""); status != http.StatusOK {
			t.Fatalf("request %d without a token: %d", i+1, status)
		}
	}
	refused(t, "/mcp", "", rules["RateLimitPerIp"].Body())
	// The same address's callers with tokens are not caught by it: 25 distinct
	// tokens, then another caller's.
	for i := range 25 {
		if status := call("/mcp", "Bearer token-"+strconv.Itoa(i)); status != http.StatusOK {
			t.Fatalf("caller %d with a token from the flooded address: %d", i+1, status)
		}
	}
	// One token is one caller: its own limit.
	for i := range limits.PerToken {
		if status := call("/mcp", "Bearer busy"); status != http.StatusOK {
			t.Fatalf("busy token, request %d: %d", i+1, status)
		}
	}
	refused(t, "/mcp", "Bearer busy", rules["RateLimitPerToken"].Body())
	// Made-up tokens from one address: stopped at the per-address bearer limit
	// (40: 25 + 15 + the refused one already counted).
	refused(t, "/mcp", "Bearer another", rules["BearerRateLimitPerIp"].Body())

	// A new window: the address is let in again.
	mu.Lock()
	now = now.Add(ratelimit.EdgeWindow)
	mu.Unlock()
	if status := call("/mcp", ""); status != http.StatusOK {
		t.Errorf("without a token in the next window: %d", status)
	}
	// The OAuth endpoints' own limits answer with an OAuth error.
	for i := range limits.OAuthToken {
		if status := call("/oauth/token", ""); status != http.StatusOK {
			t.Fatalf("token request %d: %d", i+1, status)
		}
	}
	refused(t, "/oauth/token", "", rules["OAuthTokenRateLimitPerIp"].Body())
}

// TestGatewayRateRules: without the front door the stage's web ACL holds the rate
// rules: past the limit WAF answers before API Gateway, so the authorizer is not
// called, and a caller with a token from the same address still reaches it.
func TestGatewayRateRules(t *testing.T) {
	authz := &refusing{}
	limits := ratelimit.EdgeLimits{Unauthenticated: 10, BearerPerAddress: 100, PerToken: 100, OAuthToken: 10, OAuthRegister: 10}
	api := httptest.NewServer(gateway.New(gateway.Config{Authorizer: authz, Function: authz, RateRules: limits.Rules(),
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))}))
	t.Cleanup(api.Close)
	status := func(authorization string) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, api.URL+"/healthz", nil)
		if authorization != "" {
			req.Header.Set("Authorization", authorization)
			req.URL.Path = "/mcp"
			req.Method = http.MethodPost
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") != "60" {
			t.Errorf("429 without Retry-After: 60")
		}
		return resp.StatusCode
	}
	for i := range limits.Unauthenticated {
		if s := status(""); s == http.StatusTooManyRequests {
			t.Fatalf("request %d within the limit: 429", i+1)
		}
	}
	if s := status(""); s != http.StatusTooManyRequests {
		t.Errorf("past the limit: %d, want 429", s)
	}
	before := authz.n.Load()
	if s := status("Bearer aac_someone"); s == http.StatusTooManyRequests || authz.n.Load() != before+1 {
		t.Errorf("a caller with a token from the same address: %d, authorizer called %d times; want it reached", s, authz.n.Load()-before)
	}
}
