package oauth

import (
	"net/http"
	"strings"
	"testing"
)

// Each authorization request that reaches sign-in stores a pending request (about
// 4.6 KB) before anyone has signed in. Without a bound, one address could fill
// the store with them; so one source address (an IPv6 /64) may start at most
// PendingLimit sign-ins per PendingTTL, and the rest get a page and 429, storing
// nothing. The pending rows an address can hold are then at most twice the limit
// (a fixed window, and rows that live PendingTTL).
func TestUnauthenticatedAuthorizeRequestsAreBounded(t *testing.T) {
	const limit = 5
	h := newHarness(t, func(_ *harness, c *Config) { c.PendingLimit = limit })
	id := h.publicClient("C")
	before := h.rows()["oauth_pending"]
	var refused int
	for i := 0; i < 4*limit; i++ {
		r := h.browser().get(h.authzURL(id, nativeRedirect))
		switch r.status {
		case http.StatusFound:
		case http.StatusTooManyRequests:
			refused++
			if r.header.Get("Location") != "" || r.header.Get("Retry-After") == "" {
				t.Fatalf("refusal %d: Location %q, Retry-After %q", i, r.header.Get("Location"), r.header.Get("Retry-After"))
			}
			contains(t, r.body, "Too many sign-ins")
		default:
			t.Fatalf("request %d: %d\n%s", i, r.status, r.body)
		}
	}
	if added := h.rows()["oauth_pending"] - before; added > limit || refused != 3*limit {
		t.Fatalf("%d requests added %d pending rows and %d were refused; want at most %d rows", 4*limit, added, refused, limit)
	}
	// The grants page's sign-in counts against the same bound.
	if r := h.browser().get("/oauth/grants"); r.status != http.StatusTooManyRequests {
		t.Fatalf("grants sign-in past the limit: %d", r.status)
	}

	// In the next window the whole flow works again.
	h.clock.Advance(PendingTTL)
	b := h.browser()
	code := b.authorize(t, id, nativeRedirect, "bob", "", "issues:read")
	if status, tok := h.redeem(id, code, nativeRedirect); status != http.StatusOK || str(tok, "access_token") == "" {
		t.Fatalf("token after the window: %d %v", status, tok)
	}
}

func TestPendingLimitKey(t *testing.T) {
	for _, tc := range []struct{ addr, want string }{
		{"192.0.2.7", "192.0.2.7"},
		{"2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"},
		{"2001:db8:1:2:ffff::1", "2001:db8:1:2::/64"},
		{"::ffff:192.0.2.7", "192.0.2.7"},
		{"not an address", "not an address"},
	} {
		if got := sourceKey(tc.addr); got != tc.want {
			t.Errorf("sourceKey(%q) = %q, want %q", tc.addr, got, tc.want)
		}
	}
	if strings.Contains(sourceKey("2001:db8::1"), "::1") {
		t.Error("an IPv6 address keeps its interface id")
	}
}
