package oauth_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/aacworkflow/aacmcp/test/oauth/flow"
	"github.com/aacworkflow/aacmcp/test/oidcop"
)

// TestUpstreamOpenIDProvider: sign-in is delegated to a real OpenID Provider
// (zitadel/oidc's example OP on 127.0.0.1), with no dev sign-in page. A member whose
// e-mail is the one the provider has verified for its user signs in on the
// provider's own login page in chromium, consents, and the TypeScript SDK client
// calls a tool. The server issues access tokens that live three seconds, so the
// client's next call after one has expired gets 401 and the SDK refreshes by itself.
func TestUpstreamOpenIDProvider(t *testing.T) {
	// The provider must know our redirect URI before the server starts, and the
	// server must know the provider's issuer: the server's port is chosen first.
	addr := freeAddr(t)
	op := oidcop.Start(t, "http://"+addr+"/oauth/callback")
	srv := flow.Serve(t, flow.ServeOptions{
		Addr: addr,
		Flags: []string{
			"--oidc-issuer", op.Issuer,
			"--oidc-client-id", op.ClientID,
			"--oidc-client-secret-file", flow.WriteSecret(t, "oidc-secret", op.ClientSecret),
			"--oauth-access-ttl", "3s",
		},
	})
	srv.CLI(t, "workspace", "create", "--id", "acme", "--key", "ACME", "--name", "Acme")

	t.Run("no membership", func(t *testing.T) {
		// Signed in at the provider, but a member of no workspace: a page that
		// says so, and no code for the client.
		ctx := context.Background()
		redirectURI := flow.NewRedirect(t).URL
		clientID := flow.RegisterPublicClient(t, srv.Base, "aacmcp e2e (no member)", redirectURI)
		person, err := flow.NewPerson(srv.Base)
		if err != nil {
			t.Fatal(err)
		}
		toOP, _, err := person.Authorize(ctx, flow.AuthorizationURL(srv.Base, clientID, redirectURI, "issues:read", "s1", oauth2.GenerateVerifier()), flow.Answer{})
		if err != nil {
			t.Fatal(err)
		}
		if want, _ := url.Parse(op.Issuer); toOP.Host != want.Host {
			t.Fatalf("the authorization request went to %s, not to the provider %s", toOP.Redacted(), op.Issuer)
		}
		back, err := op.Login(ctx, person.HTTPClient(), toOP.String())
		if err != nil {
			t.Fatal(err)
		}
		resp, err := person.HTTPClient().Get(back)
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Location") != "" {
			t.Fatalf("callback for a person with no membership: HTTP %d (Location %q), want 403 and no redirect: %s", resp.StatusCode, resp.Header.Get("Location"), flow.Text(string(page)))
		}
		if text := flow.Text(string(page)); !strings.Contains(text, op.Email) {
			t.Errorf("the page does not name the e-mail the person signed in with (%s): %s", op.Email, text)
		}
	})
	// The provider's e-mail in another case: the match is case-insensitive.
	srv.CLI(t, "member", "add", "--workspace", "acme", "--user", "alice", "--role", "admin", "--email", strings.ToUpper(op.Email))

	answer, err := json.Marshal(map[string]any{"login": map[string]string{
		"username": opUsername(t, op),
		"password": op.Password,
	}})
	if err != nil {
		t.Fatal(err)
	}
	tsRun{srv: srv, rd: flow.NewRedirect(t), answer: string(answer),
		steps: []string{"authorize-all", "expiry"}}.run(t)
}

// opUsername is the login name of the provider's example user, whose e-mail is
// op.Email: storage.NewUserStore names it test-user@<issuer host>.
func opUsername(t *testing.T, op *oidcop.OP) string {
	t.Helper()
	u, err := url.Parse(op.Issuer)
	if err != nil {
		t.Fatal(err)
	}
	return "test-user@" + u.Hostname()
}

// freeAddr is a loopback address nobody listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
