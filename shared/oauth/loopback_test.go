package oauth

import (
	"net/http"
	"net/url"
	"testing"
)

// claudeCodeDocument is shaped like Claude Code's metadata document: two loopback
// redirect URIs without a port and no application_type.
var claudeCodeDocument = map[string]any{
	"client_name": "Claude Code", "redirect_uris": []string{"http://localhost/callback", "http://127.0.0.1/callback"},
	"grant_types": []string{"authorization_code", "refresh_token"}, "response_types": []string{"code"},
	"token_endpoint_auth_method": "none",
}

// TestLoopbackRedirectAnyPort: RFC 8252 §7.3 for a metadata-document client. The
// port it listens on at authorization time may be any; the path and host may not
// differ; and the code is redeemed only with the redirect URI of its authorization.
func TestLoopbackRedirectAnyPort(t *testing.T) {
	var id string
	h := newHarness(t, withDocument(&id, claudeCodeDocument))
	for _, redirect := range []string{"http://localhost:58135/callback", "http://127.0.0.1:58135/callback", "http://localhost/callback"} {
		t.Run(redirect, func(t *testing.T) {
			code := h.browser().authorize(t, id, redirect, "bob", "", "issues:read")
			if status, tok := h.redeem(id, code, redirect); status != http.StatusOK {
				t.Fatalf("redeem with the redirect URI of the authorization: %d %v", status, tok)
			} else {
				h.mustVerify(str(tok, "access_token"))
			}
		})
	}
	t.Run("another port at the token endpoint", func(t *testing.T) {
		code := h.browser().authorize(t, id, "http://localhost:58135/callback", "bob", "", "issues:read")
		for _, other := range []string{"http://localhost:58136/callback", "http://localhost/callback", "http://127.0.0.1:58135/callback"} {
			status, body := h.redeem(id, code, other)
			if status != http.StatusBadRequest || str(body, "error") != "invalid_grant" {
				t.Fatalf("redeem with %s: %d %v, want invalid_grant", other, status, body)
			}
		}
	})
	for _, bad := range []string{
		"http://localhost:58135/other",
		"http://localhost:58135/callback/x",
		"http://localhost:58135/callback?x=1",
		"https://localhost:58135/callback",
		"http://[::1]:58135/callback",
		"http://localhost:0/callback",
	} {
		t.Run("refused "+bad, func(t *testing.T) {
			before := h.rows()
			r := h.browser().get(h.authzURL(id, bad))
			if r.status != http.StatusBadRequest || r.header.Get("Location") != "" {
				t.Fatalf("status %d, Location %q: want a page, never a redirect", r.status, r.header.Get("Location"))
			}
			contains(t, r.body, "is not one the client")
			sameRows(t, before, h.rows(), "a refused redirect URI")
		})
	}
}

// TestLoopbackRedirectAnyPortRegistered: the same rule for a registered client, and
// a declared port (Copilot CLI's http://127.0.0.1:33418/) is no more binding.
func TestLoopbackRedirectAnyPortRegistered(t *testing.T) {
	h := newHarness(t)
	id, _ := h.register(map[string]any{
		"client_name": "Copilot-like", "redirect_uris": []string{"http://127.0.0.1:33418/"}, "application_type": "native",
		"token_endpoint_auth_method": "none", "grant_types": []string{"authorization_code", "refresh_token"},
	})
	for _, redirect := range []string{"http://127.0.0.1:33418/", "http://127.0.0.1:52001/"} {
		code := h.browser().authorize(t, id, redirect, "bob", "", "issues:read")
		if status, tok := h.redeem(id, code, redirect); status != http.StatusOK {
			t.Fatalf("redeem at %s: %d %v", redirect, status, tok)
		}
	}
	code := h.browser().authorize(t, id, "http://127.0.0.1:52001/", "bob", "", "issues:read")
	if status, body := h.redeem(id, code, "http://127.0.0.1:33418/"); status != http.StatusBadRequest || str(body, "error") != "invalid_grant" {
		t.Fatalf("redeem with the declared port after authorizing with another: %d %v, want invalid_grant", status, body)
	}
	for _, bad := range []string{"http://localhost:33418/", "http://127.0.0.1:52001", "http://127.0.0.1:52001/x"} {
		if r := h.browser().get(h.authzURL(id, bad)); r.status != http.StatusBadRequest || r.header.Get("Location") != "" {
			t.Errorf("%s: status %d, Location %q: want a page", bad, r.status, r.header.Get("Location"))
		}
	}
}

// TestUnofferedGrantType: a document listing a grant this server does not offer
// (claude.ai lists jwt-bearer) is accepted; using that grant is refused at the token
// endpoint with unsupported_grant_type, and the grants it does offer work.
func TestUnofferedGrantType(t *testing.T) {
	var id string
	const redirect = "https://claude.example/api/mcp/auth_callback"
	h := newHarness(t, withDocument(&id, map[string]any{
		"client_name": "Claude", "client_uri": "https://claude.example", "redirect_uris": []string{redirect},
		"grant_types":    []string{"authorization_code", "refresh_token", "urn:ietf:params:oauth:grant-type:jwt-bearer"},
		"response_types": []string{"code"}, "token_endpoint_auth_method": "none",
	}))
	code := h.browser().authorize(t, id, redirect, "bob", "", "issues:read")
	status, tok := h.redeem(id, code, redirect)
	if status != http.StatusOK {
		t.Fatalf("redeem: %d %v", status, tok)
	}
	if status, body := h.refresh(id, str(tok, "refresh_token")); status != http.StatusOK {
		t.Fatalf("refresh: %d %v", status, body)
	}
	for _, grant := range []string{"urn:ietf:params:oauth:grant-type:jwt-bearer", "client_credentials", "urn:ietf:params:oauth:grant-type:device_code"} {
		status, body, _ := h.tokenCall("/oauth/token", url.Values{"grant_type": {grant}, "client_id": {id}, "assertion": {"x.y.z"}})
		if status != http.StatusBadRequest || str(body, "error") != "unsupported_grant_type" {
			t.Errorf("grant_type %s: %d %v, want 400 unsupported_grant_type", grant, status, body)
		}
	}
}
