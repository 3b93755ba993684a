package oauth

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/oauth/upstream"
	"github.com/aacworkflow/aacmcp/shared/store"
	"github.com/aacworkflow/aacmcp/test/oidcop"
)

// withOP puts a real OpenID Provider (zitadel's example OP on 127.0.0.1) upstream
// and makes its example user a member of demo by e-mail.
func withOP(op **oidcop.OP) option {
	return func(h *harness, c *Config) {
		*op = oidcop.Start(h.t, h.issuer+pathCallback)
		p, err := upstream.New(context.Background(), upstream.Config{Issuer: (*op).Issuer, ClientID: (*op).ClientID, ClientSecret: (*op).ClientSecret})
		if err != nil {
			h.t.Fatalf("upstream.New: %v", err)
		}
		c.Upstream, c.Dev = p, false
		if _, err := h.st.UpdateMember(context.Background(), store.Member{
			WorkspaceID: "demo", UserID: "zed", Role: store.RoleMember, Email: strings.ToUpper((*op).Email), CreatedAt: testEpoch,
		}); err != nil {
			h.t.Fatal(err)
		}
	}
}

func TestUpstreamOpenIDProviderSignIn(t *testing.T) {
	var op *oidcop.OP
	h := newHarness(t, withOP(&op))
	id := h.publicClient("OIDC Client")
	b := h.browser()

	r := b.get(h.authzURL(id, nativeRedirect, withParam("scope", "issues:read")))
	if r.status != http.StatusFound || !strings.HasPrefix(r.header.Get("Location"), op.Issuer) {
		t.Fatalf("authorize: %d, Location %q: want the upstream provider", r.status, r.header.Get("Location"))
	}
	up := r.location(t).Query()
	if up.Get("code_challenge_method") != "S256" || up.Get("nonce") == "" || up.Get("redirect_uri") != h.issuer+pathCallback {
		t.Fatalf("upstream request %v lacks PKCE, nonce or our callback", up)
	}
	cb, err := op.Login(context.Background(), b.c, r.header.Get("Location"))
	if err != nil {
		t.Fatalf("sign-in at the provider: %v", err)
	}
	r = b.get(cb)
	if r.status != http.StatusSeeOther || r.location(t).Path != pathConsent {
		t.Fatalf("callback: %d %s", r.status, r.body)
	}
	page := b.get(r.location(t).String())
	contains(t, page.body, op.Email) // the consent page says who signed in
	r = b.consent(t, page, "allow", "", "issues:read")
	status, tok := h.redeem(id, r.location(t).Query().Get("code"), nativeRedirect)
	if status != http.StatusOK {
		t.Fatalf("redeem: %d %v", status, tok)
	}
	if p := h.mustVerify(str(tok, "access_token")); p.UserID != "zed" || p.WorkspaceID != "demo" {
		t.Fatalf("principal = %+v, want the member found by the provider's verified e-mail", p)
	}

	// The callback is single use: replaying it (a stolen redirect) gets nothing.
	if r := b.get(cb); r.status == http.StatusSeeOther {
		t.Fatalf("replayed callback: %d", r.status)
	}
	// A callback in another browser is refused before the code is redeemed.
	r = b.get(h.authzURL(id, nativeRedirect))
	cb, err = op.Login(context.Background(), b.c, r.header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	if r := h.browser().get(cb); r.status != http.StatusForbidden {
		t.Fatalf("callback in another browser: %d", r.status)
	}
	if _, ok := h.sink.last(audit.ActionTokenIssued); !ok {
		t.Fatal("no token_issued record")
	}
}

// fakeSigner stands in for the provider where the example OP cannot go: an
// unverified e-mail, an e-mail of nobody, a refused answer.
type fakeSigner struct {
	id  upstream.Identity
	err error
}

func (f fakeSigner) AuthCodeURL(redirectURL, state, nonce, verifier string) string {
	return "https://idp.example/authorize?state=" + url.QueryEscape(state)
}

func (f fakeSigner) Exchange(context.Context, string, string, string, string) (upstream.Identity, error) {
	return f.id, f.err
}

func TestCallbackRefusals(t *testing.T) {
	for _, tc := range []struct {
		name   string
		signer fakeSigner
		query  string
		status int
		want   string
	}{
		{"unverified e-mail", fakeSigner{id: upstream.Identity{Email: "bob@example.com"}}, "code=c", http.StatusForbidden, "not verified"},
		{"member of nothing", fakeSigner{id: upstream.Identity{Email: "nobody@example.com", EmailVerified: true}}, "code=c", http.StatusForbidden, "member of no AACWorkflow workspace"},
		{"exchange refused", fakeSigner{err: errors.New("upstream: invalid_grant")}, "code=c", http.StatusBadGateway, "could not be verified"},
		{"no code", fakeSigner{}, "", http.StatusBadRequest, "no code"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(_ *harness, c *Config) { c.Dev = false })
			h.srv.setUpstream(tc.signer)
			id := h.publicClient("C")
			b := h.browser()
			r := b.get(h.authzURL(id, nativeRedirect))
			state := r.location(t).Query().Get("state")
			before := h.rows()
			r = b.get("/oauth/callback?state=" + url.QueryEscape(state) + "&" + tc.query)
			if r.status != tc.status || r.header.Get("Location") != "" {
				t.Fatalf("callback: %d %q\n%s", r.status, r.header.Get("Location"), r.body)
			}
			contains(t, r.body, tc.want)
			after := h.rows()
			for k, v := range after {
				if (strings.Contains(k, "grant") || strings.Contains(k, "code") || k == "tokens") && before[k] != v {
					t.Errorf("a refused sign-in changed %s", k)
				}
			}
		})
	}
	t.Run("bob found case-insensitively", func(t *testing.T) {
		h := newHarness(t, func(_ *harness, c *Config) { c.Dev = false })
		h.srv.setUpstream(fakeSigner{id: upstream.Identity{Issuer: "https://idp.example", Subject: "s1", Email: "BOB@example.COM", EmailVerified: true}})
		b := h.browser()
		r := b.get(h.authzURL(h.publicClient("C"), nativeRedirect))
		r = b.get("/oauth/callback?code=c&state=" + url.QueryEscape(r.location(t).Query().Get("state")))
		if r.status != http.StatusSeeOther || r.location(t).Path != pathConsent {
			t.Fatalf("callback: %d %s", r.status, r.body)
		}
	})
	t.Run("person cancelled at the provider", func(t *testing.T) {
		h := newHarness(t, func(_ *harness, c *Config) { c.Dev = false })
		h.srv.setUpstream(fakeSigner{})
		b := h.browser()
		r := b.get(h.authzURL(h.publicClient("C"), nativeRedirect))
		r = b.get("/oauth/callback?error=access_denied&state=" + url.QueryEscape(r.location(t).Query().Get("state")))
		q := r.location(t).Query()
		if r.status != http.StatusFound || q.Get("error") != "access_denied" || q.Get("state") != "st-123" || q.Get("iss") != h.issuer {
			t.Fatalf("cancelled sign-in: %d %v", r.status, q)
		}
	})
}
