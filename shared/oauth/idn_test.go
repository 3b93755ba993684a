package oauth

import (
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"
)

// A look-alike redirect URI ("clаude.ai" with a Cyrillic "а") cannot be registered,
// and a single-script internationalized host is shown on the consent page, and
// carried in its CSP header, as its A-label: the page never shows characters that
// pass for another name, and the header is ASCII.
func TestConsentShowsInternationalizedHostsAsPunycode(t *testing.T) {
	h := newHarness(t)
	status, body, _ := h.postJSON("/oauth/register", map[string]any{
		"client_name": "Claude", "redirect_uris": []string{"https://cl\u0430ude.ai/api/mcp/auth_callback"},
		"application_type": "web", "token_endpoint_auth_method": "none",
	})
	if status != http.StatusBadRequest || str(body, "error") != "invalid_redirect_uri" {
		t.Fatalf("registering a look-alike redirect URI: %d %v", status, body)
	}

	const redirect = "https://b\u00fccher.example/cb"
	id, _ := h.register(map[string]any{
		"client_name": "Books", "redirect_uris": []string{redirect}, "application_type": "web",
		"token_endpoint_auth_method": "none", "grant_types": []string{"authorization_code", "refresh_token"},
	})
	if id == "" {
		t.Fatal("a single-script internationalized redirect URI was refused")
	}
	page := h.browser().signIn(t, h.authzURL(id, redirect, withParam("scope", "issues:read")), "bob")
	if page.status != http.StatusOK {
		t.Fatalf("consent page: %d\n%s", page.status, page.body)
	}
	contains(t, page.body, "xn--bcher-kva.example")
	if strings.Contains(page.body, "b\u00fccher") {
		t.Error("the consent page shows the host in Unicode")
	}
	csp := page.header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "https://xn--bcher-kva.example") {
		t.Errorf("CSP %q does not name the redirect origin as its A-label", csp)
	}
	for i := 0; i < len(csp); i++ {
		if csp[i] >= utf8.RuneSelf {
			t.Fatalf("CSP header carries a non-ASCII byte: %q", csp)
		}
	}
}
