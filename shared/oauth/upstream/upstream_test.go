package upstream_test

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/aacworkflow/aacmcp/shared/oauth/upstream"
	"github.com/aacworkflow/aacmcp/test/oidcop"
)

// The callback is never requested: Login stops at the redirect to it.
const callback = "http://127.0.0.1:8080/oauth/callback"

func newProvider(t *testing.T, op *oidcop.OP, client *http.Client) *upstream.Provider {
	t.Helper()
	p, err := upstream.New(t.Context(), upstream.Config{
		Issuer: op.Issuer, ClientID: op.ClientID, ClientSecret: op.ClientSecret, HTTPClient: client,
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p
}

// signIn is one pending sign-in: what the AS keeps between AuthCodeURL and the callback.
type signIn struct {
	state, nonce, verifier string
	authURL                string
}

func start(p *upstream.Provider) signIn {
	s := signIn{state: upstream.NewNonce(), nonce: upstream.NewNonce(), verifier: upstream.NewVerifier()}
	s.authURL = p.AuthCodeURL(callback, s.state, s.nonce, s.verifier)
	return s
}

// login drives the provider's sign-in page and returns the code from the callback.
func login(t *testing.T, op *oidcop.OP, s signIn) string {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := op.Login(t.Context(), &http.Client{Jar: jar}, s.authURL)
	if err != nil {
		t.Fatalf("Login: %v", err)
	}
	u, err := url.Parse(got)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	if q.Get("error") != "" {
		t.Fatalf("provider answered %s: %s", q.Get("error"), q.Get("error_description"))
	}
	if q.Get("state") != s.state || q.Get("code") == "" {
		t.Fatalf("callback %q lacks the code or state %q", got, s.state)
	}
	return q.Get("code")
}

func TestAuthCodeURL(t *testing.T) {
	op := oidcop.Start(t, callback)
	p := newProvider(t, op, nil)
	s := start(p)
	u, err := url.Parse(s.authURL)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.authURL, op.Issuer+"/") {
		t.Fatalf("auth URL %q is not at the provider %s", s.authURL, op.Issuer)
	}
	sum := sha256.Sum256([]byte(s.verifier))
	q := u.Query()
	want := map[string]string{
		"response_type":         "code",
		"client_id":             op.ClientID,
		"redirect_uri":          callback,
		"state":                 s.state,
		"nonce":                 s.nonce,
		"code_challenge_method": "S256",
		"code_challenge":        base64.RawURLEncoding.EncodeToString(sum[:]),
	}
	for k, v := range want {
		if got := q.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if got := strings.Fields(q.Get("scope")); !slices.Equal(got, []string{"openid", "email", "profile"}) {
		t.Errorf("scope = %q, want openid email profile", got)
	}
	if q.Has("code_verifier") || strings.Contains(s.authURL, s.verifier) {
		t.Errorf("the verifier leaks into the auth URL %q", s.authURL)
	}
}

// countingTransport records the paths requested through it.
type countingTransport struct {
	mu    sync.Mutex
	paths []string
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.paths = append(c.paths, r.URL.Path)
	c.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

// TestExchange runs the whole flow against the real provider: discovery, the
// provider's sign-in form, the code exchange with PKCE, ID token verification and,
// because this provider keeps e-mail claims for UserInfo when it issues an access
// token, the UserInfo call; all through Config.HTTPClient.
func TestExchange(t *testing.T) {
	op := oidcop.Start(t, callback)
	tr := &countingTransport{}
	p := newProvider(t, op, &http.Client{Transport: tr})
	s := start(p)
	id, err := p.Exchange(t.Context(), callback, login(t, op, s), s.verifier, s.nonce)
	if err != nil {
		t.Fatalf("Exchange: %v", err)
	}
	if id.Issuer != op.Issuer || id.Email != op.Email || !id.EmailVerified || id.Subject == "" || id.Name == "" {
		t.Fatalf("Exchange = %+v, want issuer %s, verified e-mail %s, a subject and a name", id, op.Issuer, op.Email)
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for _, path := range []string{"/.well-known/openid-configuration", "/oauth/token", "/keys", "/userinfo"} {
		if !slices.Contains(tr.paths, path) {
			t.Errorf("%s was not requested through Config.HTTPClient (requested: %q)", path, tr.paths)
		}
	}
}

func TestExchangeRefuses(t *testing.T) {
	op := oidcop.Start(t, callback)
	tests := []struct {
		name string
		// exchange redeems code for the sign-in s, or misuses it.
		exchange func(t *testing.T, p *upstream.Provider, s signIn, code string) error
		// providerRefuses: the provider's token endpoint answers invalid_grant.
		providerRefuses bool
	}{
		{
			name: "another nonce",
			exchange: func(t *testing.T, p *upstream.Provider, s signIn, code string) error {
				_, err := p.Exchange(t.Context(), callback, code, s.verifier, upstream.NewNonce())
				return err
			},
		},
		{
			name: "empty nonce",
			exchange: func(t *testing.T, p *upstream.Provider, s signIn, code string) error {
				_, err := p.Exchange(t.Context(), callback, code, s.verifier, "")
				return err
			},
		},
		{
			name: "another verifier",
			exchange: func(t *testing.T, p *upstream.Provider, s signIn, code string) error {
				_, err := p.Exchange(t.Context(), callback, code, upstream.NewVerifier(), s.nonce)
				return err
			},
			providerRefuses: true,
		},
		{
			name: "code reused",
			exchange: func(t *testing.T, p *upstream.Provider, s signIn, code string) error {
				if _, err := p.Exchange(t.Context(), callback, code, s.verifier, s.nonce); err != nil {
					t.Fatalf("first Exchange: %v", err)
				}
				_, err := p.Exchange(t.Context(), callback, code, s.verifier, s.nonce)
				return err
			},
			providerRefuses: true,
		},
		{
			name: "ID token for another client",
			exchange: func(t *testing.T, p *upstream.Provider, s signIn, code string) error {
				upstream.VerifyForAudience(p, op.ClientID+"-other")
				_, err := p.Exchange(t.Context(), callback, code, s.verifier, s.nonce)
				return err
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newProvider(t, op, nil)
			s := start(p)
			err := tt.exchange(t, p, s, login(t, op, s))
			if err == nil {
				t.Fatal("Exchange succeeded")
			}
			t.Logf("refused: %v", err)
			var re *oauth2.RetrieveError
			if isRE := errors.As(err, &re); isRE != tt.providerRefuses || (isRE && re.ErrorCode != "invalid_grant") {
				t.Fatalf("Exchange error %v: want the provider's invalid_grant: %v", err, tt.providerRefuses)
			}
		})
	}
}

func TestNewRefuses(t *testing.T) {
	op := oidcop.Start(t, callback)
	tests := []struct {
		name string
		cfg  upstream.Config
		// mismatch: go-oidc's check that discovery names the configured issuer.
		mismatch bool
	}{
		{name: "no issuer", cfg: upstream.Config{ClientID: op.ClientID, ClientSecret: op.ClientSecret}},
		{name: "no client id", cfg: upstream.Config{Issuer: op.Issuer, ClientSecret: op.ClientSecret}},
		{name: "no client secret", cfg: upstream.Config{Issuer: op.Issuer, ClientID: op.ClientID}},
		{name: "issuer differs from discovery", cfg: upstream.Config{Issuer: op.Issuer + "/", ClientID: op.ClientID, ClientSecret: op.ClientSecret}, mismatch: true},
		{name: "no provider there", cfg: upstream.Config{Issuer: op.Issuer + "/nothing", ClientID: op.ClientID, ClientSecret: op.ClientSecret}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := upstream.New(t.Context(), tt.cfg)
			if err == nil {
				t.Fatalf("New = %v, want an error", p)
			}
			t.Logf("refused: %v", err)
			var mm *oidc.IssuerMismatchError
			if errors.As(err, &mm) != tt.mismatch {
				t.Fatalf("New error %v: want an issuer mismatch: %v", err, tt.mismatch)
			}
		})
	}
}
