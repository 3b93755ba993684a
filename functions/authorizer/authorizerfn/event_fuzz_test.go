package authorizerfn

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/authzctx"
)

// FuzzHandleEvent feeds arbitrary authorizer events (method ARN, route, headers in
// either map and any case, source IP) to Handle with a verifier that knows one
// secret. Whatever arrives: no panic; an Allow only for that secret, with a policy
// for the whole stage and the principal as context, and no audit record; every
// refusal is after exactly one audit record either the Deny of a refused token
// (a credential was presented) or ErrUnauthorized (none was); the methodArn error
// (500, API Gateway's fault) writes none; no answer carries the presented secret.
func FuzzHandleEvent(f *testing.F) {
	good, _, err := auth.Mint()
	if err != nil {
		f.Fatal(err)
	}
	arn := "arn:aws:execute-api:us-east-1:123456789012:api1/prod/POST/mcp"
	f.Add(arn, "/mcp", "/mcp", "Authorization", "Bearer "+good, "203.0.113.9", false)
	f.Add(arn, "/tools/{name}", "/tools/get_issue", "authorization", "bearer "+good, "203.0.113.9", true)
	f.Add(arn, "/tools/{name}", "/tools/a%2Fb", "AUTHORIZATION", "Bearer "+good[:len(good)-1], "", false)
	f.Add("arn:aws:execute-api:x", "/mcp", "/mcp", "Authorization", "Basic abc", "::1", false)
	f.Add("not-an-arn", "", "", "", "", "", true)
	f.Add(arn, "/mcp", "/mcp", "Authorization", "Bearer aac_"+strings.Repeat("0", 38), "10.0.0.1", false)
	f.Fuzz(func(t *testing.T, methodArn, resource, path, hname, hvalue, ip string, multi bool) {
		verifier := verifierFunc(func(_ context.Context, s string) (auth.Principal, error) {
			if s == good {
				return auth.Principal{WorkspaceID: "acme", UserID: "ada", TokenID: "tok_1", Scopes: []string{"issues:read"}}, nil
			}
			return auth.Principal{}, apperr.New(apperr.InvalidToken, auth.PublicMessage)
		})
		rej := &rejections{}
		a := New(Config{Verifier: verifier, Audit: rej, Failures: &memFailures{n: map[string]int64{}}, FailureLimit: 3})
		req := events.APIGatewayCustomAuthorizerRequestTypeRequest{MethodArn: methodArn, Resource: resource, Path: path}
		req.RequestContext.Identity.SourceIP = ip
		if multi {
			req.MultiValueHeaders = map[string][]string{hname: {hvalue}}
		} else {
			req.Headers = map[string]string{hname: hvalue}
		}
		resp, err := a.Handle(context.Background(), req)
		audited := len(rej.errs)
		presented := strings.EqualFold(hname, "Authorization") && strings.Trim(hvalue, " \t") != ""
		if err == nil && !Denied(resp) {
			if !presented || !strings.Contains(hvalue, good) {
				t.Fatalf("Allow for header %q: %q", hname, hvalue)
			}
			if audited != 0 {
				t.Fatalf("an Allow wrote %d audit records (the MCP function audits the call)", audited)
			}
			st := resp.PolicyDocument.Statement
			if len(st) != 1 || st[0].Effect != "Allow" || len(st[0].Resource) != 1 || !strings.HasSuffix(st[0].Resource[0], "/*/*") {
				t.Fatalf("policy %+v is not one Allow for the whole stage", resp.PolicyDocument)
			}
			if resp.Context[authzctx.WorkspaceID] != "acme" || resp.Context[authzctx.TokenID] != "tok_1" {
				t.Fatalf("context %v", resp.Context)
			}
			return
		}
		if b, _ := json.Marshal(resp); len(good) > 0 && strings.Contains(string(b), good) {
			t.Fatalf("the answer carries the secret: %s", b)
		}
		switch {
		case err == nil: // Denied
			if !presented {
				t.Fatalf("a Deny with no credential presented (header %q: %q)", hname, hvalue)
			}
			if audited != 1 {
				t.Fatalf("a Deny wrote %d audit records, want 1", audited)
			}
		case errors.Is(err, ErrUnauthorized):
			if presented {
				t.Fatalf("Unauthorized for a presented credential %q (want its Deny)", hvalue)
			}
			if audited != 1 {
				t.Fatalf("a refusal wrote %d audit records, want 1", audited)
			}
		default:
			if audited != 0 {
				t.Fatalf("error %v (not a token decision) wrote %d audit records", err, audited)
			}
			if len(good) > 0 && strings.Contains(err.Error(), good) {
				t.Fatalf("the error carries the secret: %v", err)
			}
		}
	})
}
