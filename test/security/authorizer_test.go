package security

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strconv"
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

// TestAuthorizerFailureLimitPerIP runs the authorizer as the Lambda builds it, with
// its counters in a DynamoDB tokens table (dynalite): an address that keeps
// presenting bad tokens (each answered with its Deny) is refused without a lookup
// once past the limit — even with a good token, audited as rate_limited, and with
// "Unauthorized", not a Deny API Gateway would cache for that token — while
// another address is unaffected.
func TestAuthorizerFailureLimitPerIP(t *testing.T) {
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
	bad, _, err := auth.Mint()
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

	// The hour may turn between the attempts: then the counts start again and the
	// scenario is repeated once.
	for attempt := 1; ; attempt++ {
		hour := time.Now().UTC().Truncate(time.Hour)
		prober := "198.51.100." + strconv.Itoa(attempt)
		for i := range limit {
			if answer, reason := try(prober, bad); answer != "deny" || reason != "invalid_token" {
				t.Fatalf("bad token %d: %s, reason %q, want its Deny and invalid_token", i+1, answer, reason)
			}
		}
		answerOver, reasonOver := try(prober, bad)
		answerGood, reasonGood := try(prober, good)
		answerOther, _ := try("203.0.113.50", good)
		if !time.Now().UTC().Truncate(time.Hour).Equal(hour) && attempt == 1 {
			continue
		}
		// Past the limit nothing is decided about the token: "Unauthorized", never a
		// Deny, which API Gateway would cache for the good token's header.
		if answerOver != "unauthorized" || reasonOver != "rate_limited" {
			t.Errorf("bad token past the limit: %s, reason %q, want unauthorized and rate_limited", answerOver, reasonOver)
		}
		if answerGood != "unauthorized" || reasonGood != "rate_limited" {
			t.Errorf("good token from the limited address: %s, reason %q, want unauthorized and rate_limited", answerGood, reasonGood)
		}
		if answerOther != "allow" {
			t.Errorf("good token from another address: %s, want allow", answerOther)
		}
		return
	}
}
