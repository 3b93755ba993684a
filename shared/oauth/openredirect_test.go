package oauth

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/aacworkflow/aacmcp/shared/oauth/upstream"
	"github.com/aacworkflow/aacmcp/shared/store"
)

const phishRedirect = "https://evil.example/phish"

// phishClient registers what anyone may register: a web client whose redirect URI
// is an attacker's page.
func (h *harness) phishClient() string {
	id, _ := h.register(map[string]any{
		"client_name": "Phish", "redirect_uris": []string{phishRedirect}, "application_type": "web",
		"token_endpoint_auth_method": "none", "grant_types": []string{"authorization_code", "refresh_token"},
	})
	if id == "" {
		h.t.Fatal("the phishing client could not register")
	}
	return id
}

// noRedirect asserts an error page that names the error and sends the browser
// nowhere: not as a Location, not as a link.
func noRedirect(t *testing.T, r response, code string) {
	t.Helper()
	if r.status != http.StatusBadRequest && r.status != http.StatusForbidden || r.header.Get("Location") != "" {
		t.Fatalf("status %d, Location %q: an error for a client nobody approved must stay on a page", r.status, r.header.Get("Location"))
	}
	if !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
		t.Errorf("Content-Type = %q", r.header.Get("Content-Type"))
	}
	contains(t, r.body, code)
	if strings.Contains(r.body, "evil.example") {
		t.Error("the page names or links to the client's redirect URI")
	}
}

// RFC 9700 section 4.11.2: registration is open, so an authorization error sent at
// once to a registered redirect URI would make this server an open redirector to
// any page. Before a person has answered the consent page, an error goes to the
// redirect URI only when it cannot lead to an attacker's page: a loopback redirect
// URI (the person's own machine) or a client an administrator allowed by name.
func TestAuthorizationErrorsDoNotRedirectToUnapprovedClients(t *testing.T) {
	h := newHarness(t)
	phish := h.phishClient()
	for _, tc := range []struct {
		name   string
		client string
		mod    func(url.Values)
		err    string
	}{
		{"implicit flow", phish, withParam("response_type", "token"), "unsupported_response_type"},
		{"no PKCE", phish, withParam("code_challenge", ""), "invalid_request"},
		{"resource mismatch", phish, withParam("resource", "https://other.example/mcp"), "invalid_target"},
		{"unknown scope", phish, withParam("scope", "admin:all"), "invalid_scope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := h.rows()
			mods := []func(url.Values){}
			if tc.mod != nil {
				mods = append(mods, tc.mod)
			}
			noRedirect(t, h.browser().get(h.authzURL(tc.client, phishRedirect, mods...)), tc.err)
			sameRows(t, before, h.rows(), "a refused authorization")
		})
	}

	t.Run("a client an administrator allowed", func(t *testing.T) {
		if err := h.st.UpdateOAuthPolicy(context.Background(), store.OAuthPolicy{Mode: store.OAuthPolicyAllowlist, Allowed: []string{phish}}); err != nil {
			t.Fatal(err)
		}
		defer func() {
			_ = h.st.UpdateOAuthPolicy(context.Background(), store.OAuthPolicy{Mode: store.OAuthPolicyAny})
		}()
		r := h.browser().get(h.authzURL(phish, phishRedirect, withParam("scope", "admin:all")))
		if r.status != http.StatusFound || r.location(t).Query().Get("error") != "invalid_scope" {
			t.Fatalf("allowed client: %d %q, want the error at its redirect URI", r.status, r.header.Get("Location"))
		}
	})

	t.Run("after the person answered the consent page", func(t *testing.T) {
		// The page named the redirect host, and the person chose to answer.
		b := h.browser()
		page := b.signIn(t, h.authzURL(phish, phishRedirect, withParam("scope", "issues:read")), "bob")
		r := b.consent(t, page, "deny", "", "issues:read")
		loc := r.location(t)
		if r.status != http.StatusSeeOther || loc.Host != "evil.example" || loc.Query().Get("error") != "access_denied" {
			t.Fatalf("deny: %d %s", r.status, loc)
		}
	})
}

// A person who cancels at the identity provider has approved nothing either.
func TestCancelledSignInDoesNotRedirectToUnapprovedClients(t *testing.T) {
	h := newHarness(t, func(_ *harness, c *Config) { c.Dev = false })
	h.srv.setUpstream(fakeSigner{id: upstream.Identity{}})
	b := h.browser()
	r := b.get(h.authzURL(h.phishClient(), phishRedirect))
	if r.status != http.StatusFound {
		t.Fatalf("authorize: %d %s", r.status, r.body)
	}
	r = b.get("/oauth/callback?error=access_denied&state=" + url.QueryEscape(r.location(t).Query().Get("state")))
	noRedirect(t, r, "access_denied")
}
