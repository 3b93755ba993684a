package authorizerfn

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/audit/record"
	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/authzctx"
)

func TestAPIWildcard(t *testing.T) {
	tests := []struct {
		arn, want string
		wantErr   bool
	}{
		{arn: "arn:aws:execute-api:eu-west-1:123456789012:abc123/prod/POST/mcp", want: "arn:aws:execute-api:eu-west-1:123456789012:abc123/prod/*/*"},
		{arn: "arn:aws:execute-api:eu-west-1:123456789012:abc123/prod/POST/tools/get_issue", want: "arn:aws:execute-api:eu-west-1:123456789012:abc123/prod/*/*"},
		{arn: "arn:aws:execute-api:eu-west-1:123456789012:abc123/local/GET/", want: "arn:aws:execute-api:eu-west-1:123456789012:abc123/local/*/*"},
		{arn: "", wantErr: true},
		{arn: "arn:aws:execute-api:eu-west-1:123456789012:abc123", wantErr: true},
		{arn: "arn:aws:execute-api:eu-west-1:abc123/prod/GET/x", wantErr: true},
		{arn: "not-an-arn/prod/GET/x", wantErr: true},
	}
	for _, tt := range tests {
		got, err := apiWildcard(tt.arn)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("apiWildcard(%q) = %q, %v; want %q, err %v", tt.arn, got, err, tt.want, tt.wantErr)
		}
	}
}

type verifierFunc func(ctx context.Context, secret string) (auth.Principal, error)

func (f verifierFunc) Verify(ctx context.Context, s string) (auth.Principal, error) { return f(ctx, s) }

type rejections struct {
	mu   sync.Mutex
	reqs []record.Request
	errs []*apperr.Error
}

func (r *rejections) RecordRejected(_ context.Context, req record.Request, err *apperr.Error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reqs = append(r.reqs, req)
	r.errs = append(r.errs, err)
}

type memFailures struct {
	mu sync.Mutex
	n  map[string]int64
}

func (m *memFailures) AddFailure(_ context.Context, ip string, _ time.Time) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.n[ip]++
	return m.n[ip], nil
}

// TestHandleDecisions covers the decisions with an in-memory verifier (the real verifier
// against DynamoDB is exercised by the golden event tests).
func TestHandleDecisions(t *testing.T) {
	good, _, err := auth.Mint()
	if err != nil {
		t.Fatal(err)
	}
	other, _, _ := auth.Mint()
	oauthTok, _, err := auth.MintWithPrefix(auth.AccessTokenPrefix)
	if err != nil {
		t.Fatal(err)
	}
	exp := time.Date(2026, 3, 1, 13, 0, 0, 999e6, time.UTC) // fractions round down
	p := auth.Principal{WorkspaceID: "ws1", UserID: "u1", TokenID: "tok_1", Scopes: []string{"issues:read", "issues:write"}, ExpiresAt: exp}
	op := auth.Principal{WorkspaceID: "ws1", UserID: "u2", TokenID: "tok_2", Scopes: []string{"issues:read"},
		ClientID: "https://claude.ai/oauth/mcp-oauth-client-metadata", ExpiresAt: exp.Add(time.Hour)}
	verifier := verifierFunc(func(_ context.Context, s string) (auth.Principal, error) {
		switch s {
		case good:
			return p, nil
		case oauthTok:
			return op, nil
		case other:
			return auth.Principal{}, apperr.Internal(errors.New("table down"))
		}
		return auth.Principal{}, apperr.Wrap(apperr.InvalidToken, auth.PublicMessage, &auth.RejectError{Reason: auth.ReasonRevoked, TokenID: "tok_revoked", ClientID: "https://chatgpt.example/client.json"})
	})
	unknown, _, _ := auth.Mint()
	arn := "arn:aws:execute-api:us-east-1:123456789012:api1/prod/POST/tools/get_issue"

	tests := []struct {
		name         string
		header       string
		wantErr      string // the error answer ("Unauthorized" or a 500)
		wantDenied   bool   // the Deny of a refused token
		wantAudit    apperr.Code
		wantTokenID  string
		wantFailures int64
		wantContext  map[string]any // for an allowed request
	}{
		{name: "valid", header: "Bearer " + good, wantContext: map[string]any{"workspace_id": "ws1", "user_id": "u1",
			"token_id": "tok_1", "scopes": "issues:read issues:write", "client_id": "", "expires_at": "1772370000"}},
		{name: "valid OAuth access token", header: "Bearer " + oauthTok, wantContext: map[string]any{"workspace_id": "ws1",
			"user_id": "u2", "token_id": "tok_2", "scopes": "issues:read",
			"client_id": "https://claude.ai/oauth/mcp-oauth-client-metadata", "expires_at": "1772373600"}},
		// No credential: nothing to call invalid, so no Deny (RFC 6750 section 3.1).
		{name: "missing header", header: "", wantErr: "Unauthorized", wantAudit: apperr.InvalidToken, wantFailures: 1},
		{name: "blank header", header: " \t ", wantErr: "Unauthorized", wantAudit: apperr.InvalidToken, wantFailures: 1},
		{name: "malformed", header: "Bearer nope", wantDenied: true, wantAudit: apperr.InvalidToken, wantFailures: 1},
		{name: "another scheme", header: "Basic ZGV2OnB3", wantDenied: true, wantAudit: apperr.InvalidToken, wantFailures: 1},
		{name: "revoked", header: "Bearer " + unknown, wantDenied: true, wantAudit: apperr.InvalidToken, wantTokenID: "tok_revoked", wantFailures: 1},
		{name: "store down is 500 not 401", header: "Bearer " + other, wantErr: "token verification unavailable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rej := &rejections{}
			fails := &memFailures{n: map[string]int64{}}
			a := New(Config{Verifier: verifier, Audit: rej, Failures: fails, FailureLimit: 3})
			req := events.APIGatewayCustomAuthorizerRequestTypeRequest{
				Type: "REQUEST", MethodArn: arn, Resource: "/tools/{name}", Path: "/tools/get_issue",
				PathParameters: map[string]string{"name": "get_issue"},
				Headers:        map[string]string{"authorization": tt.header, "User-Agent": "ua/1"},
				RequestContext: events.APIGatewayCustomAuthorizerRequestTypeRequestContext{
					RequestID: "req-1", Identity: events.APIGatewayCustomAuthorizerRequestTypeRequestIdentity{SourceIP: "198.51.100.7"},
				},
			}
			resp, err := a.Handle(context.Background(), req)
			switch {
			case tt.wantErr != "":
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
			case tt.wantDenied:
				if err != nil {
					t.Fatalf("err = %v, want a Deny", err)
				}
				if !Denied(resp) || resp.PolicyDocument.Statement[0].Resource[0] != "arn:aws:execute-api:us-east-1:123456789012:api1/prod/*/*" {
					t.Errorf("answer %+v, want the whole-API Deny", resp)
				}
			default:
				if err != nil {
					t.Fatal(err)
				}
				st := resp.PolicyDocument.Statement
				if len(st) != 1 || st[0].Effect != "Allow" || st[0].Resource[0] != "arn:aws:execute-api:us-east-1:123456789012:api1/prod/*/*" {
					t.Errorf("policy = %+v", resp.PolicyDocument)
				}
				if Denied(resp) {
					t.Errorf("an Allow reads as Denied: %+v", resp)
				}
				if !maps.Equal(resp.Context, tt.wantContext) {
					t.Errorf("context = %v, want %v", resp.Context, tt.wantContext)
				}
				if resp.PrincipalID != tt.wantContext["user_id"] {
					t.Errorf("principalId = %q", resp.PrincipalID)
				}
			}
			if tt.wantAudit == "" {
				if len(rej.errs) != 0 {
					t.Fatalf("unexpected audit: %v", rej.errs)
				}
			} else {
				if len(rej.errs) != 1 || rej.errs[0].Code != tt.wantAudit {
					t.Fatalf("audits = %v, want one %s", rej.errs, tt.wantAudit)
				}
				r := rej.reqs[0]
				if r.Tool != "get_issue" || r.SourceIP != "198.51.100.7" || r.RequestID != "req-1" || r.Transport != "rest" || r.UserAgent != "ua/1" {
					t.Errorf("audited request = %+v", r)
				}
				gotTok, gotClient := "", ""
				if r.Principal != nil {
					gotTok, gotClient = r.Principal.TokenID, r.Principal.ClientID
				}
				if gotTok != tt.wantTokenID {
					t.Errorf("audited token id = %q, want %q", gotTok, tt.wantTokenID)
				}
				// A revoked OAuth token's refusal still names its client.
				if wantClient := map[bool]string{true: "https://chatgpt.example/client.json"}[tt.wantTokenID != ""]; gotClient != wantClient {
					t.Errorf("audited client id = %q, want %q", gotClient, wantClient)
				}
			}
			if got := fails.n["198.51.100.7"]; got != tt.wantFailures {
				t.Errorf("failures = %d, want %d", got, tt.wantFailures)
			}
		})
	}
}

// TestOthersFailuresNeverRefuseAValidToken: one address that many people share (a
// hosted client's egress) presents 25 bad tokens in a window whose limit is 20, then
// a good one. Every bad token gets its own Deny after a lookup (401 invalid_token,
// which tells its client to sign in again), never a refusal for volume, and the good
// token is allowed: the counter marks the address, it refuses nobody.
func TestOthersFailuresNeverRefuseAValidToken(t *testing.T) {
	good, _, _ := auth.Mint()
	p := auth.Principal{WorkspaceID: "ws1", UserID: "u1", TokenID: "tok_1", Scopes: []string{"issues:read"}, ExpiresAt: time.Now().Add(time.Hour)}
	lookups := 0
	verifier := verifierFunc(func(_ context.Context, s string) (auth.Principal, error) {
		lookups++
		if s == good {
			return p, nil
		}
		return auth.Principal{}, apperr.New(apperr.InvalidToken, auth.PublicMessage)
	})
	rej := &rejections{}
	fails := &memFailures{n: map[string]int64{}}
	var logs strings.Builder
	a := New(Config{Verifier: verifier, Audit: rej, Failures: fails, FailureLimit: 20,
		Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	call := func(secret string) (events.APIGatewayCustomAuthorizerResponse, error) {
		return a.Handle(context.Background(), events.APIGatewayCustomAuthorizerRequestTypeRequest{
			MethodArn: "arn:aws:execute-api:us-east-1:123456789012:api1/prod/POST/mcp", Resource: "/mcp", Path: "/mcp",
			Headers:        map[string]string{"Authorization": "Bearer " + secret},
			RequestContext: events.APIGatewayCustomAuthorizerRequestTypeRequestContext{Identity: events.APIGatewayCustomAuthorizerRequestTypeRequestIdentity{SourceIP: "160.79.104.10"}},
		})
	}
	for i := range 25 {
		bad, _, _ := auth.Mint()
		resp, err := call(bad)
		if err != nil || !Denied(resp) {
			t.Fatalf("bad token %d: %+v, %v; want its Deny", i+1, resp, err)
		}
	}
	resp, err := call(good)
	if err != nil || Denied(resp) || resp.PrincipalID != "u1" {
		t.Fatalf("good token after 25 failures from its address: %+v, %v; want an Allow", resp, err)
	}
	if lookups != 26 {
		t.Errorf("lookups = %d, want 26: every credential is verified", lookups)
	}
	if len(rej.errs) != 25 {
		t.Fatalf("%d refusals audited, want 25", len(rej.errs))
	}
	for i, e := range rej.errs {
		if e.Code != apperr.InvalidToken {
			t.Errorf("refusal %d audited %s, want invalid_token", i+1, e.Code)
		}
	}
	if got := fails.n["160.79.104.10"]; got != 25 {
		t.Errorf("failures counted = %d, want 25", got)
	}
	// The address is reported once, when it crosses the limit.
	if n := strings.Count(logs.String(), msgOverFailureLimit); n != 1 {
		t.Errorf("%d %q lines, want 1:\n%s", n, msgOverFailureLimit, logs.String())
	}
}

// TestDenied: Denied accepts only the exact answer Handle gives a refused token.
func TestDenied(t *testing.T) {
	const api = "arn:aws:execute-api:us-east-1:123456789012:api1/prod/*/*"
	deny := func(edit func(*events.APIGatewayCustomAuthorizerResponse)) events.APIGatewayCustomAuthorizerResponse {
		r := events.APIGatewayCustomAuthorizerResponse{PrincipalID: DeniedPrincipal, PolicyDocument: policy("Deny", api)}
		edit(&r)
		return r
	}
	tests := []struct {
		name string
		resp events.APIGatewayCustomAuthorizerResponse
		want bool
	}{
		{"the Deny", deny(func(*events.APIGatewayCustomAuthorizerResponse) {}), true},
		{"an Allow", deny(func(r *events.APIGatewayCustomAuthorizerResponse) { r.PolicyDocument = policy("Allow", api) }), false},
		{"a user as principal", deny(func(r *events.APIGatewayCustomAuthorizerResponse) { r.PrincipalID = "u1" }), false},
		{"with context", deny(func(r *events.APIGatewayCustomAuthorizerResponse) { r.Context = map[string]any{authzctx.UserID: "u1"} }), false},
		{"one route only", deny(func(r *events.APIGatewayCustomAuthorizerResponse) {
			r.PolicyDocument = policy("Deny", "arn:aws:execute-api:us-east-1:123456789012:api1/prod/POST/mcp")
		}), false},
		{"two statements", deny(func(r *events.APIGatewayCustomAuthorizerResponse) {
			r.PolicyDocument.Statement = append(r.PolicyDocument.Statement, policy("Allow", api).Statement...)
		}), false},
		{"no policy", events.APIGatewayCustomAuthorizerResponse{PrincipalID: DeniedPrincipal}, false},
	}
	for _, tt := range tests {
		if got := Denied(tt.resp); got != tt.want {
			t.Errorf("%s: Denied = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func FuzzAPIWildcard(f *testing.F) {
	f.Add("arn:aws:execute-api:us-east-1:123456789012:api1/prod/POST/mcp")
	f.Add("arn:aws:execute-api:us-east-1:1:a/b")
	f.Add("")
	f.Add("arn:::::/x/*/*")
	f.Fuzz(func(t *testing.T, arn string) {
		got, err := apiWildcard(arn)
		if err != nil {
			return
		}
		// Whatever the input, the policy covers one API and stage and nothing wider.
		prefix, ok := cutSuffix(got, "/*/*")
		if !ok || prefix == "" || len(prefix) > len(arn) || arn[:len(prefix)] != prefix {
			t.Fatalf("apiWildcard(%q) = %q", arn, got)
		}
	})
}

func cutSuffix(s, suffix string) (string, bool) {
	if len(s) < len(suffix) || s[len(s)-len(suffix):] != suffix {
		return s, false
	}
	return s[:len(s)-len(suffix)], true
}
