package security

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/aacworkflow/aacmcp/functions/authorizer/authorizerfn"
	"github.com/aacworkflow/aacmcp/shared/auth"
	gt "github.com/aacworkflow/aacmcp/shared/guard/guardtest"
	"github.com/aacworkflow/aacmcp/shared/lambdaenv"
	"github.com/aacworkflow/aacmcp/shared/store/dynamo"
	"github.com/aacworkflow/aacmcp/test/emulator"
)

// TestAuthorizerSharedAddress runs the authorizer as the Lambda builds it, with its
// counters in a DynamoDB tokens table (dynalite), from one address that many people
// share (a hosted client's egress): past the failed-attempt limit every bad token
// still gets its own Deny (401 invalid_token, so its client signs in again) and a
// good token from the same address is allowed. Volume is refused at the edge, with
// 429 (infra rateRules, shared/gateway's front door), not here.
func TestAuthorizerSharedAddress(t *testing.T) {
	const limit = 3
	ddb := emulator.StartT(t, emulator.Dynalite)
	ctx := context.Background()
	db := dynamodb.NewFromConfig(ddb.AWSConfig())
	var ttl *dynamo.TTLWarning
	if err := dynamo.CreateTables(ctx, db, "main", "tokens"); err != nil && !errors.As(err, &ttl) {
		t.Fatal(err)
	}
	good, _, err := auth.IssueToken(ctx, dynamo.New(db, "main", "tokens"), auth.TokenRequest{
		WorkspaceID: "acme", UserID: "ada", Name: "good", Scopes: []string{"issues:read"}, TTL: time.Hour,
	}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := lambdaenv.Load(func(k string) string {
		return map[string]string{
			lambdaenv.EnvTable: "main", lambdaenv.EnvTokensTable: "tokens", lambdaenv.EnvAuditStream: "audit",
			lambdaenv.EnvAuthFailLimit: "3/h",
		}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	sink := &gt.MemorySink{}
	a, err := authorizerfn.Build(cfg, authorizerfn.Deps{DB: db, Audit: sink, Stdout: io.Discard, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	// try returns how the authorizer answered: "allow", "deny" (a refused token's
	// Deny) or "unauthorized" (nothing decided about the token), and the reason of
	// the one record a refusal writes.
	try := func(ip, secret string) (answer, reason string) {
		t.Helper()
		before := len(sink.Records())
		resp, err := a.Handle(ctx, events.APIGatewayCustomAuthorizerRequestTypeRequest{
			MethodArn: "arn:aws:execute-api:us-east-1:123456789012:api1/prod/POST/mcp", Resource: "/mcp", Path: "/mcp",
			Headers:        map[string]string{"Authorization": "Bearer " + secret},
			RequestContext: events.APIGatewayCustomAuthorizerRequestTypeRequestContext{Identity: events.APIGatewayCustomAuthorizerRequestTypeRequestIdentity{SourceIP: ip}},
		})
		recs := sink.Records()[before:]
		switch {
		case err == nil && !authorizerfn.Denied(resp):
			if st := resp.PolicyDocument.Statement; len(st) != 1 || st[0].Effect != "Allow" {
				t.Fatalf("answer %+v is neither an Allow nor the Deny", resp)
			}
			if len(recs) != 0 {
				t.Errorf("an Allow wrote %d records", len(recs))
			}
			return "allow", ""
		case err == nil:
			answer = "deny"
		case errors.Is(err, authorizerfn.ErrUnauthorized):
			answer = "unauthorized"
		default:
			t.Fatalf("error %v, want a Deny or Unauthorized", err)
		}
		if len(recs) != 1 {
			t.Fatalf("a refusal wrote %d records, want 1", len(recs))
		}
		return answer, recs[0].Reason
	}

	shared := "160.79.104.10"
	for i := range limit + 22 {
		bad, _, err := auth.Mint()
		if err != nil {
			t.Fatal(err)
		}
		if answer, reason := try(shared, bad); answer != "deny" || reason != "invalid_token" {
			t.Fatalf("bad token %d: %s, reason %q, want its Deny and invalid_token", i+1, answer, reason)
		}
	}
	if answer, _ := try(shared, good); answer != "allow" {
		t.Errorf("good token from the address of 25 failures: %s, want allow", answer)
	}
	if answer, _ := try("203.0.113.50", good); answer != "allow" {
		t.Errorf("good token from another address: %s, want allow", answer)
	}
}
