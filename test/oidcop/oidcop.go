// Package oidcop runs a real OpenID Provider for tests: zitadel/oidc's example OP
// (github.com/zitadel/oidc/v3/example/server), in process on 127.0.0.1, with its
// in-memory storage and its example users. Only tests import it, so the example and
// its dependencies never reach a deployed binary.
package oidcop

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"golang.org/x/net/html"
)

// exampleUserID is the first user of storage.NewUserStore: a verified e-mail,
// test-user@zitadel.ch, and the username test-user@<issuer host>.
const exampleUserID = "id1"

// maxPage bounds what Login reads of one page of the provider.
const maxPage = 1 << 20

// OP is a running provider. Email and Password are the example user's; Exchange at
// the provider returns Email with email_verified true.
type OP struct {
	Issuer, ClientID, ClientSecret string
	Email, Password                string

	username     string
	redirectURIs []string
}

// Start runs zitadel/oidc's example OpenID Provider on a 127.0.0.1 listener for the
// test's lifetime, with one confidential web client registered for redirectURIs.
func Start(t testing.TB, redirectURIs ...string) *OP {
	t.Helper()
	if len(redirectURIs) == 0 {
		// storage.WebClient would silently register http://localhost:9999/auth/callback.
		t.Fatal("oidcop.Start: at least one redirect URI is required")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("oidcop.Start: %v", err)
	}
	// The example OP has a static issuer, so it must be this listener's URL before
	// the handler exists.
	issuer := "http://" + ln.Addr().String()
	users := storage.NewUserStore(issuer)
	u := users.GetUserByID(exampleUserID)
	if u == nil || !u.EmailVerified || u.Email == "" {
		ln.Close()
		t.Fatalf("oidcop.Start: the example user store no longer has user %q with a verified e-mail", exampleUserID)
	}
	op := &OP{
		Issuer:       issuer,
		ClientID:     "aacmcp",
		ClientSecret: rand.Text(),
		Email:        u.Email,
		Password:     u.Password,
		username:     u.Username,
		redirectURIs: slices.Clone(redirectURIs),
	}
	// A client map of our own: storage.RegisterClients writes a package-level map,
	// which parallel tests would share and race on.
	st := storage.NewStorageWithClients(users, map[string]*storage.Client{
		op.ClientID: storage.WebClient(op.ClientID, op.ClientSecret, redirectURIs...),
	})
	// A nil logger: a non-nil one replaces slog's default logger for the whole process.
	router := exampleop.SetupServer(issuer, st, nil, false)
	srv := &httptest.Server{
		Listener: ln,
		Config:   &http.Server{Handler: router, ReadHeaderTimeout: 10 * time.Second},
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return op
}

// Login follows authURL with client (which must have a cookie jar), signs in as the
// example user and returns the final redirect URL to our callback (not followed).
// When the provider answers the authorization request with an error redirect to a
// registered redirect URI, that URL is returned as is.
func (op *OP) Login(ctx context.Context, client *http.Client, authURL string) (string, error) {
	return op.login(ctx, client, authURL, op.username, op.Password)
}

func (op *OP) login(ctx context.Context, client *http.Client, authURL, username, password string) (string, error) {
	if client == nil || client.Jar == nil {
		return "", errors.New("oidcop: Login needs an http.Client with a cookie jar")
	}
	c := *client
	c.CheckRedirect = op.checkRedirect

	resp, page, err := op.do(ctx, &c, http.MethodGet, authURL, nil)
	if err != nil {
		return "", err
	}
	if to, ok := op.callback(resp); ok {
		return to, nil
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("oidcop: GET %s ended at %s with %s", authURL, resp.Request.URL, resp.Status)
	}
	f, err := loginForm(page, resp.Request.URL)
	if err != nil {
		return "", fmt.Errorf("oidcop: login page %s: %w", resp.Request.URL, err)
	}
	if f.method != http.MethodPost {
		return "", fmt.Errorf("oidcop: login form method is %q, want POST", f.method)
	}
	f.values.Set("username", username)
	f.values.Set("password", password)

	resp, _, err = op.do(ctx, &c, f.method, f.action, f.values)
	if err != nil {
		return "", err
	}
	if to, ok := op.callback(resp); ok {
		return to, nil
	}
	// The example OP answers wrong credentials with the form again, status 200.
	return "", fmt.Errorf("oidcop: sign-in as %q did not redirect to a registered redirect URI (%s at %s)", username, resp.Status, resp.Request.URL)
}

// checkRedirect stops at our redirect URI, which Login returns without requesting,
// and refuses to wander off the provider.
func (op *OP) checkRedirect(req *http.Request, via []*http.Request) error {
	if op.isRedirectURI(req.URL) {
		return http.ErrUseLastResponse
	}
	if len(via) >= 10 {
		return errors.New("oidcop: more than 10 redirects")
	}
	if iss, _ := url.Parse(op.Issuer); req.URL.Host != iss.Host {
		return fmt.Errorf("oidcop: redirect to %s, neither the provider nor a registered redirect URI", req.URL.Redacted())
	}
	return nil
}

func (op *OP) isRedirectURI(u *url.URL) bool {
	bare := *u
	bare.RawQuery, bare.Fragment, bare.RawFragment = "", "", ""
	return slices.Contains(op.redirectURIs, bare.String())
}

// callback reports the redirect to our redirect URI that checkRedirect stopped at.
func (op *OP) callback(resp *http.Response) (string, bool) {
	if resp.StatusCode < 300 || resp.StatusCode > 399 {
		return "", false
	}
	to, err := resp.Location()
	if err != nil || !op.isRedirectURI(to) {
		return "", false
	}
	return to.String(), true
}

func (op *OP) do(ctx context.Context, c *http.Client, method, target string, form url.Values) (*http.Response, []byte, error) {
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, target, body)
	if err != nil {
		return nil, nil, fmt.Errorf("oidcop: %w", err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("oidcop: %s: %w", method, err)
	}
	defer resp.Body.Close()
	page, err := io.ReadAll(io.LimitReader(resp.Body, maxPage))
	if err != nil {
		return nil, nil, fmt.Errorf("oidcop: %s %s: %w", method, resp.Request.URL, err)
	}
	return resp, page, nil
}

type form struct {
	method, action string
	values         url.Values
}

// loginForm reads the form with a password field from page, as a browser would
// submit it: its method, its action resolved against base, and the values of its
// named inputs (the example OP's hidden auth request id among them).
func loginForm(page []byte, base *url.URL) (form, error) {
	doc, err := html.Parse(strings.NewReader(string(page)))
	if err != nil {
		return form{}, err
	}
	for n := range doc.Descendants() {
		if n.Type != html.ElementNode || n.Data != "form" {
			continue
		}
		f := form{method: http.MethodGet, action: base.String(), values: url.Values{}}
		hasPassword := false
		if m := attr(n, "method"); m != "" {
			f.method = strings.ToUpper(m)
		}
		if a := attr(n, "action"); a != "" {
			u, err := base.Parse(a)
			if err != nil {
				return form{}, fmt.Errorf("form action %q: %w", a, err)
			}
			f.action = u.String()
		}
		for in := range n.Descendants() {
			if in.Type != html.ElementNode || in.Data != "input" {
				continue
			}
			name := attr(in, "name")
			if name == "" {
				continue
			}
			if attr(in, "type") == "password" {
				hasPassword = true
			}
			f.values.Set(name, attr(in, "value"))
		}
		if hasPassword {
			return f, nil
		}
	}
	return form{}, errors.New("no form with a password field")
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}
