package oidcop

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"testing"

	"golang.org/x/oauth2"
)

const callback = "http://127.0.0.1:8080/oauth/callback"

func jarClient(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar}
}

func discover(t *testing.T, op *OP) (auth, token, userinfo string) {
	t.Helper()
	resp, err := http.Get(op.Issuer + "/.well-known/openid-configuration")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct {
		Issuer   string `json:"issuer"`
		Auth     string `json:"authorization_endpoint"`
		Token    string `json:"token_endpoint"`
		UserInfo string `json:"userinfo_endpoint"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if doc.Issuer != op.Issuer {
		t.Fatalf("discovery issuer = %q, want the listener's URL %q", doc.Issuer, op.Issuer)
	}
	return doc.Auth, doc.Token, doc.UserInfo
}

func TestStartListensOnLoopback(t *testing.T) {
	op := Start(t, callback)
	u, err := url.Parse(op.Issuer)
	if err != nil {
		t.Fatal(err)
	}
	if u.Hostname() != "127.0.0.1" || u.Port() == "" {
		t.Fatalf("issuer %q is not on 127.0.0.1 with a port", op.Issuer)
	}
	if op.Email == "" || op.Password == "" || op.ClientID == "" || op.ClientSecret == "" {
		t.Fatalf("OP fields not all set: %+v", op)
	}
}

// TestLoginRedeemsAtTheProvider signs in through the HTML form and redeems the code
// with plain oauth2, so Login is proven against the provider, not against itself.
func TestLoginRedeemsAtTheProvider(t *testing.T) {
	op := Start(t, "http://127.0.0.1:9/other", callback)
	auth, token, userinfo := discover(t, op)
	cfg := oauth2.Config{
		ClientID: op.ClientID, ClientSecret: op.ClientSecret, RedirectURL: callback,
		Endpoint: oauth2.Endpoint{AuthURL: auth, TokenURL: token, AuthStyle: oauth2.AuthStyleInHeader},
		Scopes:   []string{"openid", "email"},
	}
	verifier := oauth2.GenerateVerifier()
	got, err := op.Login(t.Context(), jarClient(t), cfg.AuthCodeURL("st-1", oauth2.S256ChallengeOption(verifier)))
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(got)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got, callback+"?") || u.Query().Get("state") != "st-1" || u.Query().Get("code") == "" {
		t.Fatalf("Login = %q, want %s with the code and state st-1", got, callback)
	}
	tok, err := cfg.Exchange(t.Context(), u.Query().Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("the code Login returned does not redeem: %v", err)
	}
	resp, err := cfg.Client(t.Context(), tok).Get(userinfo)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var info struct {
		Email    string `json:"email"`
		Verified bool   `json:"email_verified"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&info); err != nil {
		t.Fatal(err)
	}
	if info.Email != op.Email || !info.Verified {
		t.Fatalf("userinfo = %+v, want %s verified", info, op.Email)
	}
}

func TestLoginFailures(t *testing.T) {
	op := Start(t, callback)
	auth, _, _ := discover(t, op)
	authURL := func(redirect string) string {
		q := url.Values{
			"client_id": {op.ClientID}, "response_type": {"code"}, "scope": {"openid"},
			"redirect_uri": {redirect}, "state": {"s"},
		}
		return auth + "?" + q.Encode()
	}
	tests := []struct {
		name     string
		client   *http.Client
		authURL  string
		password string
		wantErr  string
		wantURL  string // an error redirect from the provider, returned as is
	}{
		{name: "no cookie jar", client: &http.Client{}, authURL: authURL(callback), password: op.Password, wantErr: "cookie jar"},
		{name: "wrong password", client: jarClient(t), authURL: authURL(callback), password: "not-" + op.Password, wantErr: "did not redirect"},
		{name: "unregistered redirect URI", client: jarClient(t), authURL: authURL("http://127.0.0.1:9/evil"), password: op.Password, wantErr: "ended at"},
		{name: "provider error redirect", client: jarClient(t), authURL: authURL(callback) + "&prompt=none", password: op.Password, wantURL: "error=login_required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := op.login(context.Background(), tt.client, tt.authURL, op.username, tt.password)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("login = %q, %v; want an error about %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || !strings.HasPrefix(got, callback+"?") || !strings.Contains(got, tt.wantURL) {
				t.Fatalf("login = %q, %v; want %s with %s", got, err, callback, tt.wantURL)
			}
		})
	}
}

func TestLoginForm(t *testing.T) {
	base, _ := url.Parse("http://127.0.0.1:1/login/username?authRequestID=x")
	tests := []struct {
		name, page string
		want       form
		wantErr    bool
	}{
		{
			name: "relative action, hidden input",
			page: `<form method="post" action="/login/username"><input type="hidden" name="id" value="r1"><input name="username"><input name="password" type="password"></form>`,
			want: form{method: "POST", action: "http://127.0.0.1:1/login/username", values: url.Values{"id": {"r1"}, "username": {""}, "password": {""}}},
		},
		{
			name: "the password form, not the first",
			page: `<form action="/search"><input name="q"></form><form method="POST"><input name="password" type="password"></form>`,
			want: form{method: "POST", action: base.String(), values: url.Values{"password": {""}}},
		},
		{name: "no password field", page: `<form method="post"><input name="username"></form>`, wantErr: true},
		{name: "no form", page: `<p>error</p>`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := loginForm([]byte(tt.page), base)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("loginForm = %+v, want an error", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.method != tt.want.method || got.action != tt.want.action || got.values.Encode() != tt.want.values.Encode() {
				t.Fatalf("loginForm = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestNotLinkedIntoBinaries keeps the test-only servers out of everything that is
// deployed or shipped: the example OP (an in-memory provider with a fixed password)
// and test/kmsemu's KMS emulator (local-kms, whose keys sit unencrypted on disk).
func TestNotLinkedIntoBinaries(t *testing.T) {
	root, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	cmd := exec.Command("go", "list", "-deps", "./functions/...", "./cmd/...")
	cmd.Dir = strings.TrimSpace(string(root))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	if !strings.Contains(string(out), "github.com/aacworkflow/aacmcp/cmd/aacmcp\n") {
		t.Fatalf("go list -deps did not list cmd/aacmcp; the patterns match nothing?\n%s", out)
	}
	self := reflect.TypeFor[OP]().PkgPath()
	testOnly := []string{self, "github.com/aacworkflow/aacmcp/test/kmsemu"}
	testOnlyPrefixes := []string{"github.com/zitadel/", "github.com/nsmithuk/"}
	for pkg := range strings.Lines(string(out)) {
		pkg = strings.TrimSpace(pkg)
		if slices.Contains(testOnly, pkg) || slices.ContainsFunc(testOnlyPrefixes, func(p string) bool { return strings.HasPrefix(pkg, p) }) {
			t.Errorf("%s is linked into a binary under functions/ or cmd/", pkg)
		}
	}
}
