package oauth

import (
	"strings"
	"testing"
)

// TestConsentSaysWhoVouches: the consent page says in words what stands behind the
// application's name: the site that publishes its metadata document, or nothing (a
// client that registered itself), without showing a registered client's opaque id.
func TestConsentSaysWhoVouches(t *testing.T) {
	h := newHarness(t)
	id := h.publicClient("Self Registered")
	page := h.browser().signIn(t, h.authzURL(id, nativeRedirect, withParam("scope", "issues:read")), "bob")
	contains(t, page.body, "Vouched for by", "no one: the application registered itself with this server, so nothing confirms its name")
	for _, bad := range []string{id, "Client ID host", "none: registered"} {
		if strings.Contains(page.body, bad) {
			t.Errorf("the consent page of a registered client shows %q", bad)
		}
	}

	var docID string
	h = newHarness(t, withDocument(&docID, map[string]any{
		"client_name": "Published", "redirect_uris": []string{nativeRedirect}, "token_endpoint_auth_method": "none",
	}))
	page = h.browser().signIn(t, h.authzURL(docID, nativeRedirect, withParam("scope", "issues:read")), "bob")
	host := strings.TrimPrefix(strings.TrimSuffix(docID, "/client.json"), "https://")
	contains(t, page.body, "Vouched for by", `<span class="host">`+host+`</span>`, "(the site that publishes this application's description)")
}
