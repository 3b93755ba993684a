package jwtaccess_test

import (
	"context"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/auth/jwtaccess"
	"github.com/aacworkflow/aacmcp/shared/auth/jwtaccess/jwtconf"
	"github.com/aacworkflow/aacmcp/shared/auth/jwtaccess/jwttest"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// members is an in-memory member directory keyed by lower-case e-mail.
type members map[string][]store.Member

func (m members) ListMembersByEmail(_ context.Context, email string) ([]store.Member, error) {
	return slices.Clone(m[strings.ToLower(email)]), nil
}

var dir = members{
	"ada@example.com":   {{WorkspaceID: "acme", UserID: "ada", Role: store.RoleMember, Email: "ada@example.com"}},
	"grace@example.com": {{WorkspaceID: "acme", UserID: "grace", Email: "grace@example.com"}, {WorkspaceID: "globex", UserID: "grace", Email: "grace@example.com"}},
}

const resource = "https://mcp.example.com/mcp"

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newVerifier(t testing.TB, iss *jwttest.Issuer, clk *clock, mod func(*jwtaccess.Config)) *jwtaccess.Verifier {
	t.Helper()
	cfg := jwtaccess.Config{
		Settings: jwtconf.Settings{Issuer: iss.URL, Audiences: []string{resource}},
		Members:  dir,
		Now:      clk.Now,
	}
	if mod != nil {
		mod(&cfg)
	}
	v, err := jwtaccess.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// claims returns a valid claims set for ada.
func claims(iss string) map[string]any {
	return map[string]any{
		"iss": iss, "sub": "00u1", "aud": resource, "email": "ada@example.com",
		"exp": t0.Add(time.Hour).Unix(), "iat": t0.Unix(), "nbf": t0.Unix(),
		"jti": "tok-1", "client_id": "claude", "scope": "issues:read issues:write openid",
	}
}

func with(c map[string]any, kv ...any) map[string]any {
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(c, kv[i].(string))
		} else {
			c[kv[i].(string)] = kv[i+1]
		}
	}
	return c
}

func wantReject(t *testing.T, err error, reason auth.Reason) {
	t.Helper()
	if !apperr.Is(err, apperr.InvalidToken) {
		t.Fatalf("err = %v, want invalid_token", err)
	}
	if e := apperr.As(err); e.Message != auth.PublicMessage {
		t.Errorf("message = %q, want the public message", e.Message)
	}
	if got := auth.RejectReason(err); got != reason {
		t.Fatalf("reason = %q, want %q (%v)", got, reason, err)
	}
}

func TestVerify(t *testing.T) {
	iss := jwttest.NewIssuer(t)
	rsaKey := iss.AddRSA(t, "rsa-1")
	ecKey := iss.AddEC(t, "ec-1")
	// A key the issuer publishes for encryption only: it must never verify.
	encKey := iss.Add(t, jwttest.RSAKey(t), "enc-1", "enc")
	u := iss.URL
	// An RSA public key's PEM bytes as an HMAC secret: the classic confusion.
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: must(x509.MarshalPKIXPublicKey(rsaKey.Public()))})

	tests := []struct {
		name   string
		token  func() string
		mod    func(*jwtaccess.Config)
		reason auth.Reason // "" = valid
		check  func(*testing.T, auth.Principal)
	}{
		{name: "RS256 valid", token: func() string { return rsaKey.Sign(t, claims(u)) }, check: func(t *testing.T, p auth.Principal) {
			want := auth.Principal{WorkspaceID: "acme", UserID: "ada", TokenID: "jwt:tok-1",
				Scopes: []string{"issues:read", "issues:write"}, ClientID: "claude", ExpiresAt: t0.Add(time.Hour)}
			if p.WorkspaceID != want.WorkspaceID || p.UserID != want.UserID || p.TokenID != want.TokenID ||
				!slices.Equal(p.Scopes, want.Scopes) || p.ClientID != want.ClientID || !p.ExpiresAt.Equal(want.ExpiresAt) {
				t.Errorf("principal = %+v, want %+v", p, want)
			}
		}},
		{name: "ES256 valid, typ at+jwt", token: func() string { return ecKey.SignTyp(t, claims(u), "at+jwt") }},
		{name: "typ application/at+jwt", token: func() string { return ecKey.SignTyp(t, claims(u), "application/at+jwt") }},
		{name: "no typ", token: func() string { return ecKey.SignTyp(t, claims(u), "") }},
		{name: "typ JWT refused when at+jwt is required", mod: func(c *jwtaccess.Config) { c.RequireATJWT = true },
			token: func() string { return rsaKey.SignTyp(t, claims(u), "JWT") }, reason: jwtaccess.ReasonType},
		{name: "no typ refused when at+jwt is required", mod: func(c *jwtaccess.Config) { c.RequireATJWT = true },
			token: func() string { return rsaKey.SignTyp(t, claims(u), "") }, reason: jwtaccess.ReasonType},
		{name: "typ at+jwt when required", mod: func(c *jwtaccess.Config) { c.RequireATJWT = true },
			token: func() string { return rsaKey.SignTyp(t, claims(u), "at+jwt") }},
		{name: "another kind of token (dpop+jwt)", token: func() string { return rsaKey.SignTyp(t, claims(u), "dpop+jwt") }, reason: jwtaccess.ReasonType},
		{name: "expired past the skew", token: func() string { return rsaKey.Sign(t, with(claims(u), "exp", t0.Add(-61*time.Second).Unix())) }, reason: auth.ReasonExpired},
		{name: "expired within the skew", token: func() string { return rsaKey.Sign(t, with(claims(u), "exp", t0.Add(-59*time.Second).Unix())) }},
		{name: "no exp", token: func() string { return rsaKey.Sign(t, with(claims(u), "exp", nil)) }, reason: auth.ReasonMalformed},
		{name: "nbf in the future", token: func() string { return rsaKey.Sign(t, with(claims(u), "nbf", t0.Add(2*time.Minute).Unix())) }, reason: jwtaccess.ReasonNotYetValid},
		{name: "nbf within the skew", token: func() string { return rsaKey.Sign(t, with(claims(u), "nbf", t0.Add(30*time.Second).Unix())) }},
		{name: "iat in the future", token: func() string { return rsaKey.Sign(t, with(claims(u), "iat", t0.Add(2*time.Minute).Unix())) }, reason: jwtaccess.ReasonNotYetValid},
		{name: "fractional dates", token: func() string { return rsaKey.Sign(t, with(claims(u), "exp", float64(t0.Unix())+3600.5)) }},
		{name: "wrong audience", token: func() string { return rsaKey.Sign(t, with(claims(u), "aud", "https://other.example.com/mcp")) }, reason: jwtaccess.ReasonAudience},
		{name: "audience list naming us", token: func() string { return rsaKey.Sign(t, with(claims(u), "aud", []string{"api://x", resource})) }},
		{name: "no audience", token: func() string { return rsaKey.Sign(t, with(claims(u), "aud", nil)) }, reason: jwtaccess.ReasonAudience},
		{name: "audience as configured", mod: func(c *jwtaccess.Config) { c.Audiences = []string{"api://aacmcp"} },
			token: func() string { return rsaKey.Sign(t, with(claims(u), "aud", "api://aacmcp")) }},
		{name: "allowed client", mod: func(c *jwtaccess.Config) { c.Clients = []string{"claude", "chatgpt"} },
			token: func() string { return rsaKey.Sign(t, claims(u)) }},
		{name: "client not allowed", mod: func(c *jwtaccess.Config) { c.Clients = []string{"chatgpt"} },
			token: func() string { return rsaKey.Sign(t, claims(u)) }, reason: jwtaccess.ReasonClient},
		{name: "Cognito style: clients, no audience, no aud", mod: func(c *jwtaccess.Config) { c.Clients, c.Audiences = []string{"claude"}, nil },
			token: func() string { return rsaKey.Sign(t, with(claims(u), "aud", nil, "token_use", "access")) }},
		{name: "Cognito ID token refused", mod: func(c *jwtaccess.Config) { c.Clients, c.Audiences = []string{"claude"}, nil },
			token: func() string { return rsaKey.Sign(t, with(claims(u), "aud", "claude", "token_use", "id")) }, reason: jwtaccess.ReasonType},
		{name: "wrong issuer", token: func() string { return rsaKey.Sign(t, with(claims(u), "iss", u+"/other")) }, reason: jwtaccess.ReasonIssuer},
		{name: "issuer with a trailing slash is another issuer", token: func() string { return rsaKey.Sign(t, with(claims(u), "iss", u+"/")) }, reason: jwtaccess.ReasonIssuer},
		{name: "unknown kid", token: func() string { return jwttest.RSA(t, "rsa-unknown").Sign(t, claims(u)) }, reason: jwtaccess.ReasonUnknownKey},
		{name: "no kid and several keys", token: func() string { return rsaKey.WithoutKid().Sign(t, claims(u)) }, reason: jwtaccess.ReasonUnknownKey},
		{name: "kid of an encryption key", token: func() string { return encKey.Sign(t, claims(u)) }, reason: jwtaccess.ReasonUnknownKey},
		{name: "signed by another key under a known kid", token: func() string { return jwttest.RSA(t, "rsa-1").Sign(t, claims(u)) }, reason: jwtaccess.ReasonSignature},
		{name: "EC kid with an RSA algorithm", token: func() string { return jwttest.RSA(t, "ec-1").Sign(t, claims(u)) }, reason: jwtaccess.ReasonSignature},
		{name: "a key published for RS256 used with PS256", mod: func(c *jwtaccess.Config) { c.Algorithms = []string{"RS256", "PS256"} },
			token: func() string { return rsaKey.WithAlg("PS256").Sign(t, claims(u)) }, reason: jwtaccess.ReasonSignature},
		{name: "PS256 when configured", mod: func(c *jwtaccess.Config) { c.Algorithms = []string{"PS256"} },
			token: func() string { return iss.AddUnbound(t, "ps-1").WithAlg("PS256").Sign(t, claims(u)) }},
		{name: "tampered payload", token: func() string {
			tok := rsaKey.Sign(t, claims(u))
			parts := strings.Split(tok, ".")
			parts[1] = b64(t, with(claims(u), "email", "grace@example.com"))
			return strings.Join(parts, ".")
		}, reason: jwtaccess.ReasonSignature},
		{name: "alg confusion: HS256 with the RSA public key as secret", token: func() string {
			return jwttest.SignHMAC(t, pubPEM, "rsa-1", claims(u))
		}, reason: jwtaccess.ReasonAlgorithm},
		{name: "alg confusion: HS256 with the modulus bytes", token: func() string {
			return jwttest.SignHMAC(t, rsaKey.Public().(*rsa.PublicKey).N.Bytes(), "rsa-1", claims(u))
		}, reason: jwtaccess.ReasonAlgorithm},
		{name: "alg none", token: func() string {
			return b64(t, map[string]any{"alg": "none", "typ": "JWT"}) + "." + b64(t, claims(u)) + "."
		}, reason: jwtaccess.ReasonAlgorithm},
		{name: "alg None (case)", token: func() string {
			return b64(t, map[string]any{"alg": "None", "kid": "rsa-1"}) + "." + b64(t, claims(u)) + "."
		}, reason: jwtaccess.ReasonAlgorithm},
		{name: "ES256 refused when only RS256 is configured", mod: func(c *jwtaccess.Config) { c.Algorithms = []string{"RS256"} },
			token: func() string { return ecKey.Sign(t, claims(u)) }, reason: jwtaccess.ReasonAlgorithm},
		{name: "scp as an array", token: func() string {
			return rsaKey.Sign(t, with(claims(u), "scope", nil, "scp", []string{"issues:read", "comments:write", "User.Read"}))
		}, check: scopes("comments:write", "issues:read")},
		{name: "scp as a string", token: func() string {
			return rsaKey.Sign(t, with(claims(u), "scope", nil, "scp", "dashboard:read agents:write"))
		},
			check: scopes("agents:write", "dashboard:read")},
		{name: "unknown scopes dropped", token: func() string { return rsaKey.Sign(t, with(claims(u), "scope", "openid profile issues:delete")) },
			check: scopes()},
		{name: "scope of the wrong type", token: func() string { return rsaKey.Sign(t, with(claims(u), "scope", 7)) }, reason: auth.ReasonMalformed},
		{name: "azp when there is no client_id", token: func() string { return rsaKey.Sign(t, with(claims(u), "client_id", nil, "azp", "chatgpt")) },
			check: func(t *testing.T, p auth.Principal) {
				if p.ClientID != "chatgpt" {
					t.Errorf("client id = %q", p.ClientID)
				}
			}},
		{name: "no jti: a hash of the token", token: func() string { return rsaKey.Sign(t, with(claims(u), "jti", nil)) },
			check: func(t *testing.T, p auth.Principal) {
				if !strings.HasPrefix(p.TokenID, "jwt:sha256:") || len(p.TokenID) != len("jwt:sha256:")+32 {
					t.Errorf("token id = %q", p.TokenID)
				}
			}},
		{name: "jti with odd characters is hashed", token: func() string { return rsaKey.Sign(t, with(claims(u), "jti", "a b\"c")) },
			check: func(t *testing.T, p auth.Principal) {
				if !strings.HasPrefix(p.TokenID, "jwt:sha256:") {
					t.Errorf("token id = %q", p.TokenID)
				}
			}},
		{name: "e-mail case does not matter", token: func() string { return rsaKey.Sign(t, with(claims(u), "email", "Ada@Example.COM")) }},
		{name: "no user claim", token: func() string { return rsaKey.Sign(t, with(claims(u), "email", nil)) }, reason: jwtaccess.ReasonNoUser},
		{name: "configured user claim", mod: func(c *jwtaccess.Config) { c.UserClaim = "upn" },
			token: func() string {
				return rsaKey.Sign(t, with(claims(u), "email", "mallory@example.com", "upn", "ada@example.com"))
			}},
		{name: "email_verified false", token: func() string { return rsaKey.Sign(t, with(claims(u), "email_verified", false)) }, reason: jwtaccess.ReasonUnverified},
		{name: "email_verified true", token: func() string { return rsaKey.Sign(t, with(claims(u), "email_verified", true)) }},
		{name: "no member", token: func() string { return rsaKey.Sign(t, with(claims(u), "email", "eve@example.com")) }, reason: jwtaccess.ReasonNoMember},
		{name: "member of several workspaces, none chosen", token: func() string { return rsaKey.Sign(t, with(claims(u), "email", "grace@example.com")) },
			reason: jwtaccess.ReasonAmbiguous},
		{name: "configured workspace", mod: func(c *jwtaccess.Config) { c.Workspace = "globex" },
			token: func() string { return rsaKey.Sign(t, with(claims(u), "email", "grace@example.com")) },
			check: func(t *testing.T, p auth.Principal) {
				if p.WorkspaceID != "globex" || p.UserID != "grace" {
					t.Errorf("principal = %+v", p)
				}
			}},
		{name: "configured workspace the person is not in", mod: func(c *jwtaccess.Config) { c.Workspace = "globex" },
			token: func() string { return rsaKey.Sign(t, claims(u)) }, reason: jwtaccess.ReasonNoMember},
		{name: "workspace claim", mod: func(c *jwtaccess.Config) { c.WorkspaceClaim = "aac_workspace" },
			token: func() string {
				return rsaKey.Sign(t, with(claims(u), "email", "grace@example.com", "aac_workspace", "acme"))
			},
			check: func(t *testing.T, p auth.Principal) {
				if p.WorkspaceID != "acme" {
					t.Errorf("principal = %+v", p)
				}
			}},
		{name: "workspace claim missing", mod: func(c *jwtaccess.Config) { c.WorkspaceClaim = "aac_workspace" },
			token: func() string { return rsaKey.Sign(t, claims(u)) }, reason: jwtaccess.ReasonWorkspaceClaim},
		{name: "not a JWT", token: func() string { return "aac_notatoken" }, reason: auth.ReasonMalformed},
		{name: "JSON serialization", token: func() string { return `{"payload":"e30","signatures":[]}` }, reason: auth.ReasonMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := &clock{t: t0}
			v := newVerifier(t, iss, clk, tt.mod)
			p, err := v.Verify(context.Background(), tt.token())
			if tt.reason != "" {
				wantReject(t, err, tt.reason)
				return
			}
			if err != nil {
				t.Fatalf("Verify: %v (reason %q)", err, auth.RejectReason(err))
			}
			if tt.check != nil {
				tt.check(t, p)
			}
		})
	}
}

func scopes(want ...string) func(*testing.T, auth.Principal) {
	return func(t *testing.T, p auth.Principal) {
		t.Helper()
		if !slices.Equal(p.Scopes, want) && !(len(p.Scopes) == 0 && len(want) == 0) {
			t.Errorf("scopes = %q, want %q", p.Scopes, want)
		}
	}
}

func b64(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestRotation: a token signed with a key the JWKS does not have yet is refused;
// once the issuer publishes the key, the next token after the refresh interval
// passes. A removed key stops verifying once the set's max age has passed.
func TestRotation(t *testing.T) {
	iss := jwttest.NewIssuer(t)
	old := iss.AddRSA(t, "k1")
	clk := &clock{t: t0}
	v := newVerifier(t, iss, clk, func(c *jwtaccess.Config) {
		c.MinRefreshInterval = 30 * time.Second
		c.KeysMaxAge = 10 * time.Minute
		c.ClockSkew = time.Hour // the clock moves below; expiry is not under test here
	})
	ctx := context.Background()
	if _, err := v.Verify(ctx, old.Sign(t, claims(iss.URL))); err != nil {
		t.Fatal(err)
	}
	next := jwttest.RSA(t, "k2")
	_, err := v.Verify(ctx, next.Sign(t, claims(iss.URL)))
	wantReject(t, err, jwtaccess.ReasonUnknownKey)

	iss.Publish(next)
	// Within the refresh interval the set is not fetched again.
	_, err = v.Verify(ctx, next.Sign(t, claims(iss.URL)))
	wantReject(t, err, jwtaccess.ReasonUnknownKey)
	clk.Add(31 * time.Second)
	if _, err := v.Verify(ctx, next.Sign(t, claims(iss.URL))); err != nil {
		t.Fatalf("after the rotation: %v (%q)", err, auth.RejectReason(err))
	}
	// The old key still works while the issuer publishes it.
	if _, err := v.Verify(ctx, old.Sign(t, claims(iss.URL))); err != nil {
		t.Fatal(err)
	}
	iss.Remove("k1")
	clk.Add(11 * time.Minute)
	_, err = v.Verify(ctx, old.Sign(t, claims(iss.URL)))
	wantReject(t, err, jwtaccess.ReasonUnknownKey)
	if _, err := v.Verify(ctx, next.Sign(t, claims(iss.URL))); err != nil {
		t.Fatal(err)
	}
}

// TestUnknownKidFloodIsRateLimited: many tokens with random kids, concurrently,
// cost the issuer one JWKS fetch per refresh interval.
func TestUnknownKidFloodIsRateLimited(t *testing.T) {
	iss := jwttest.NewIssuer(t)
	iss.AddRSA(t, "k1")
	clk := &clock{t: t0}
	v := newVerifier(t, iss, clk, nil)
	if err := v.Prime(context.Background()); err != nil {
		t.Fatal(err)
	}
	before := iss.JWKSFetches()
	forger := jwttest.RSA(t, "")
	var wg sync.WaitGroup
	var refused atomic.Int64
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := v.Verify(context.Background(), forger.WithKid(fmt.Sprint("random-", i)).Sign(t, claims(iss.URL)))
			if auth.RejectReason(err) == jwtaccess.ReasonUnknownKey {
				refused.Add(1)
			}
		}()
	}
	wg.Wait()
	if refused.Load() != 64 {
		t.Errorf("refused %d of 64", refused.Load())
	}
	// Prime fetched at t0; the interval has not passed, so none of the 64 fetched.
	if got := iss.JWKSFetches() - before; got != 0 {
		t.Errorf("%d JWKS fetches for 64 random kids within the interval, want 0", got)
	}
	clk.Add(jwtaccess.DefaultMinRefreshInterval)
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = v.Verify(context.Background(), forger.WithKid(fmt.Sprint("again-", i)).Sign(t, claims(iss.URL)))
		}()
	}
	wg.Wait()
	if got := iss.JWKSFetches() - before; got != 1 {
		t.Errorf("%d JWKS fetches after the interval, want 1", got)
	}
}

func TestDiscovery(t *testing.T) {
	ctx := context.Background()
	t.Run("OpenID Connect discovery when RFC 8414 metadata is absent", func(t *testing.T) {
		iss := jwttest.NewIssuer(t, jwttest.OIDCOnly())
		k := iss.AddRSA(t, "k1")
		v := newVerifier(t, iss, &clock{t: t0}, nil)
		if _, err := v.Verify(ctx, k.Sign(t, claims(iss.URL))); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("configured JWKS URL, no discovery", func(t *testing.T) {
		iss := jwttest.NewIssuer(t, jwttest.NoMetadata())
		k := iss.AddEC(t, "k1")
		v := newVerifier(t, iss, &clock{t: t0}, func(c *jwtaccess.Config) { c.JWKSURL = iss.URL + "/jwks" })
		if _, err := v.Verify(ctx, k.Sign(t, claims(iss.URL))); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("metadata naming another issuer is refused", func(t *testing.T) {
		iss := jwttest.NewIssuer(t, jwttest.MetadataIssuer("https://evil.example.com"))
		k := iss.AddRSA(t, "k1")
		v := newVerifier(t, iss, &clock{t: t0}, nil)
		if err := v.Prime(ctx); err == nil || !strings.Contains(err.Error(), "evil.example.com") {
			t.Fatalf("Prime = %v", err)
		}
		_, err := v.Verify(ctx, k.Sign(t, claims(iss.URL)))
		if !apperr.Is(err, apperr.InternalError) {
			t.Fatalf("err = %v, want internal_error (nothing is known about the token)", err)
		}
	})
	t.Run("issuer down is internal_error, not a bad token", func(t *testing.T) {
		iss := jwttest.NewIssuer(t)
		k := iss.AddRSA(t, "k1")
		v := newVerifier(t, iss, &clock{t: t0}, nil)
		iss.Close()
		_, err := v.Verify(ctx, k.Sign(t, claims(iss.URL)))
		if !apperr.Is(err, apperr.InternalError) {
			t.Fatalf("err = %v, want internal_error", err)
		}
	})
	t.Run("keys are kept through an outage", func(t *testing.T) {
		iss := jwttest.NewIssuer(t)
		k := iss.AddRSA(t, "k1")
		clk := &clock{t: t0}
		v := newVerifier(t, iss, clk, func(c *jwtaccess.Config) { c.ClockSkew = 5 * time.Minute })
		if _, err := v.Verify(ctx, k.Sign(t, claims(iss.URL))); err != nil {
			t.Fatal(err)
		}
		iss.Close()
		clk.Add(jwtaccess.DefaultKeysMaxAge + time.Minute) // stale: a refresh is tried and fails
		c := with(claims(iss.URL), "exp", clk.Now().Add(time.Hour).Unix())
		if _, err := v.Verify(ctx, k.Sign(t, c)); err != nil {
			t.Fatalf("stale keys during an outage: %v", err)
		}
		clk.Add(25 * time.Hour) // past maxStale
		c = with(claims(iss.URL), "exp", clk.Now().Add(time.Hour).Unix())
		if _, err := v.Verify(ctx, k.Sign(t, c)); !apperr.Is(err, apperr.InternalError) {
			t.Fatalf("keys a day stale: err = %v, want internal_error", err)
		}
	})
}

func TestNewRefusesUnsafeConfig(t *testing.T) {
	base := func() jwtaccess.Config {
		return jwtaccess.Config{Settings: jwtconf.Settings{Issuer: "https://idp.example.com", Audiences: []string{resource}}, Members: dir}
	}
	tests := []struct {
		name string
		mod  func(*jwtaccess.Config)
	}{
		{"HS256", func(c *jwtaccess.Config) { c.Algorithms = []string{"HS256"} }},
		{"none", func(c *jwtaccess.Config) { c.Algorithms = []string{"RS256", "none"} }},
		{"no audience and no clients", func(c *jwtaccess.Config) { c.Audiences = nil }},
		{"empty client", func(c *jwtaccess.Config) { c.Clients = []string{""} }},
		{"empty audience", func(c *jwtaccess.Config) { c.Audiences = []string{""} }},
		{"http issuer off loopback", func(c *jwtaccess.Config) { c.Issuer = "http://idp.example.com" }},
		{"http JWKS off loopback", func(c *jwtaccess.Config) { c.JWKSURL = "http://idp.example.com/jwks" }},
		{"no members", func(c *jwtaccess.Config) { c.Members = nil }},
		{"workspace and claim", func(c *jwtaccess.Config) { c.Workspace, c.WorkspaceClaim = "acme", "ws" }},
	}
	if _, err := jwtaccess.New(base()); err != nil {
		t.Fatalf("the base config: %v", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base()
			tt.mod(&c)
			if _, err := jwtaccess.New(c); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

// TestRSAAndECKeysTogether: both key types in one JWKS, each token checked only
// against its own key.
func TestRSAAndECKeysTogether(t *testing.T) {
	iss := jwttest.NewIssuer(t)
	r := iss.AddRSA(t, "r")
	e := iss.AddEC(t, "e")
	v := newVerifier(t, iss, &clock{t: t0}, nil)
	for _, k := range []*jwttest.Key{r, e} {
		if _, err := v.Verify(context.Background(), k.Sign(t, claims(iss.URL))); err != nil {
			t.Errorf("%s: %v", k.Kid, err)
		}
	}
}
