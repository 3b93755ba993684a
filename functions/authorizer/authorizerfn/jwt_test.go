package authorizerfn

import (
	"context"
	"crypto/rsa"
	"io"
	"log/slog"
	"maps"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/auth/jwtaccess"
	"github.com/aacworkflow/aacmcp/shared/auth/jwtaccess/jwtconf"
	"github.com/aacworkflow/aacmcp/shared/auth/jwtaccess/jwttest"
	"github.com/aacworkflow/aacmcp/shared/store"
	"github.com/aacworkflow/aacmcp/shared/store/sqlite"
)

// TestHandleJWT runs authorizer events carrying JWT access tokens of an issuer on
// 127.0.0.1 through Handle, with the real jwtaccess verifier and the members of a
// SQLite store (the DynamoDB lookup by e-mail is tested with its store).
func TestHandleJWT(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "aacmcp.db"), sqlite.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.CreateWorkspace(ctx, store.Workspace{ID: "acme", Key: "ACME", Name: "Acme"}); err != nil {
		t.Fatal(err)
	}
	for _, m := range []store.Member{
		{WorkspaceID: "acme", UserID: "ada", Role: store.RoleMember, Email: "ada@example.com"},
		{WorkspaceID: "acme", UserID: "bob", Role: store.RoleViewer, Email: "bob@example.com"},
	} {
		if _, err := st.UpdateMember(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	personal, _, err := auth.IssueToken(ctx, st, auth.TokenRequest{WorkspaceID: "acme", UserID: "ada", Name: "cli", Scopes: []string{"issues:read"}, TTL: time.Hour}, time.Now())
	if err != nil {
		t.Fatal(err)
	}

	iss := jwttest.NewIssuer(t)
	rsaKey := iss.AddRSA(t, "r1")
	ecKey := iss.AddEC(t, "e1")
	const aud = "https://abc123def4.execute-api.us-east-1.amazonaws.com/prod/mcp"
	now := time.Now().UTC().Truncate(time.Second)
	claims := func(kv ...any) map[string]any {
		c := map[string]any{"iss": iss.URL, "aud": aud, "email": "ada@example.com", "client_id": "claude",
			"exp": now.Add(time.Hour).Unix(), "iat": now.Unix(), "jti": "j1", "scp": []string{"issues:read", "issues:write", "openid"}}
		for i := 0; i < len(kv); i += 2 {
			c[kv[i].(string)] = kv[i+1]
		}
		return c
	}
	newJWT := func(t *testing.T) *jwtaccess.Verifier {
		v, err := jwtaccess.New(jwtaccess.Config{Settings: jwtconf.Settings{Issuer: iss.URL, Audiences: []string{aud}}, Members: st,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	wantCtx := map[string]any{"workspace_id": "acme", "user_id": "ada", "token_id": "jwt:j1",
		"scopes": "issues:read issues:write", "client_id": "claude", "expires_at": strconv.FormatInt(now.Add(time.Hour).Unix(), 10)}

	tests := []struct {
		name        string
		header      string
		noJWT       bool // the authorizer has no external issuer
		wantDenied  bool
		wantContext map[string]any
		wantTokenID string // audited on a refusal
	}{
		{name: "RS256", header: "Bearer " + rsaKey.Sign(t, claims()), wantContext: wantCtx},
		{name: "ES256", header: "bearer " + ecKey.Sign(t, claims()), wantContext: wantCtx},
		{name: "a personal token beside JWTs", header: "Bearer " + personal, wantContext: nil},
		{name: "expired: audited with its id", header: "Bearer " + rsaKey.Sign(t, claims("exp", now.Add(-time.Hour).Unix())), wantDenied: true, wantTokenID: "jwt:j1"},
		{name: "wrong audience", header: "Bearer " + rsaKey.Sign(t, claims("aud", "https://other.example.com/mcp")), wantDenied: true, wantTokenID: "jwt:j1"},
		{name: "wrong issuer", header: "Bearer " + rsaKey.Sign(t, claims("iss", "https://evil.example.com")), wantDenied: true, wantTokenID: "jwt:j1"},
		{name: "unknown kid: no id (nothing vouches for it)", header: "Bearer " + jwttest.RSA(t, "r9").Sign(t, claims()), wantDenied: true},
		{name: "alg confusion", header: "Bearer " + jwttest.SignHMAC(t, rsaKey.Public().(*rsa.PublicKey).N.Bytes(), "r1", claims()), wantDenied: true},
		{name: "alg none", header: "Bearer eyJhbGciOiJub25lIn0.eyJpc3MiOiJ4In0.", wantDenied: true},
		{name: "no member", header: "Bearer " + rsaKey.Sign(t, claims("email", "eve@example.com")), wantDenied: true, wantTokenID: "jwt:j1"},
		{name: "a JWT without an external issuer", noJWT: true, header: "Bearer " + rsaKey.Sign(t, claims()), wantDenied: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rej := &rejections{}
			fails := &memFailures{n: map[string]int64{}}
			cfg := Config{Verifier: &auth.Verifier{Store: st}, Audit: rej, Failures: fails, FailureLimit: 5,
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
			if !tt.noJWT {
				cfg.JWT = newJWT(t)
			}
			resp, err := New(cfg).Handle(ctx, event(tt.header))
			if tt.wantDenied {
				if err != nil || !Denied(resp) {
					t.Fatalf("answer %+v, %v; want the Deny of a refused token", resp, err)
				}
				if len(rej.errs) != 1 || rej.errs[0].Code != "invalid_token" {
					t.Fatalf("audits %v, want one invalid_token", rej.errs)
				}
				got := ""
				if rej.reqs[0].Principal != nil {
					got = rej.reqs[0].Principal.TokenID
				}
				if got != tt.wantTokenID {
					t.Errorf("audited token id %q, want %q", got, tt.wantTokenID)
				}
				if fails.n["198.51.100.7"] != 1 {
					t.Errorf("failures = %d, want 1", fails.n["198.51.100.7"])
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if st := resp.PolicyDocument.Statement; len(st) != 1 || st[0].Effect != "Allow" {
				t.Fatalf("policy %+v", resp.PolicyDocument)
			}
			if tt.wantContext != nil && !maps.Equal(resp.Context, tt.wantContext) {
				t.Errorf("context %v, want %v", resp.Context, tt.wantContext)
			}
			if len(rej.errs) != 0 {
				t.Errorf("an Allow audited %v", rej.errs)
			}
		})
	}

	t.Run("the member record decides: removed, the next token is refused", func(t *testing.T) {
		a := New(Config{Verifier: &auth.Verifier{Store: st}, JWT: newJWT(t), Audit: &rejections{}})
		tok := "Bearer " + rsaKey.Sign(t, claims("email", "bob@example.com", "jti", "j2"))
		if _, err := a.Handle(ctx, event(tok)); err != nil {
			t.Fatal(err)
		}
		if err := st.DeleteMember(ctx, "acme", "bob"); err != nil {
			t.Fatal(err)
		}
		if resp, err := a.Handle(ctx, event(tok)); err != nil || !Denied(resp) {
			t.Fatalf("answer %+v, %v; want the Deny of a refused token", resp, err)
		}
	})

	t.Run("issuer unreachable: 500, not a 401 the client would act on", func(t *testing.T) {
		down := jwttest.NewIssuer(t)
		k := down.AddRSA(t, "d1")
		v, err := jwtaccess.New(jwtaccess.Config{Settings: jwtconf.Settings{Issuer: down.URL, Audiences: []string{aud}}, Members: st,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		down.Close()
		rej := &rejections{}
		_, err = New(Config{Verifier: &auth.Verifier{Store: st}, JWT: v, Audit: rej,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}).Handle(ctx, event("Bearer "+k.Sign(t, claims("iss", down.URL))))
		if err == nil || err.Error() != "token verification unavailable" || len(rej.errs) != 0 {
			t.Fatalf("err = %v, audits %v", err, rej.errs)
		}
	})
}

func event(authorization string) events.APIGatewayCustomAuthorizerRequestTypeRequest {
	return events.APIGatewayCustomAuthorizerRequestTypeRequest{
		Type: "REQUEST", MethodArn: "arn:aws:execute-api:us-east-1:123456789012:abc123def4/prod/POST/mcp",
		Resource: "/mcp", Path: "/mcp",
		Headers: map[string]string{"Authorization": authorization},
		RequestContext: events.APIGatewayCustomAuthorizerRequestTypeRequestContext{
			RequestID: "req-jwt", Identity: events.APIGatewayCustomAuthorizerRequestTypeRequestIdentity{SourceIP: "198.51.100.7"},
		},
	}
}
