// Package oauth_test feeds every sample API Gateway REST proxy event in this folder
// through the real authorization server function (functions/oauth), at the
// lambda.Handler level (JSON in, JSON out), against dynalite and kinesalite, and
// compares the response and the audit records with the golden files next to each
// event. Regenerate with -update.
package oauth_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/aacworkflow/aacmcp/functions/oauth/oauthfn"
	"github.com/aacworkflow/aacmcp/test/lambda/lambdatest"
)

var env *lambdatest.Env

var fixedNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestMain(m *testing.M) { lambdatest.Main(m, &env) }

func TestSampleEvents(t *testing.T) {
	ctx := context.Background()
	if err := env.Fresh(ctx); err != nil {
		t.Fatal(err)
	}
	base, err := env.Config()
	if err != nil {
		t.Fatal(err)
	}
	capture := &lambdatest.Capture{Next: env.Sink()}
	// Dev stands in for the upstream provider, which none of these events reaches
	// (sign-in is driven end to end in test/e2e and test/oauth).
	fn, err := oauthfn.Build(ctx, oauthfn.Config{Config: base, Dev: true}, oauthfn.Deps{
		DB: env.DB, Audit: capture, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
		Now: func() time.Time { return fixedNow },
	})
	if err != nil {
		t.Fatal(err)
	}
	h := lambda.NewHandler(fn.Handle)
	files, err := lambdatest.SampleFiles(".")
	if err != nil || len(files) == 0 {
		t.Fatalf("no sample events: %v", err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		payload, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out, err := h.Invoke(ctx, payload)
		if err != nil {
			t.Fatalf("%s: handler error: %v", name, err)
		}
		var resp events.APIGatewayProxyResponse
		if err := json.Unmarshal(out, &resp); err != nil {
			t.Fatalf("%s: answer is not a proxy response: %v", name, err)
		}
		g := lambdatest.NewOAuthGolden(resp, capture.Take())
		for _, r := range g.Audit {
			if err := r.Validate(); err != nil {
				t.Errorf("%s: audit record invalid: %v", name, err)
			}
		}
		t.Run(name, func(t *testing.T) {
			lambdatest.Golden(t, strings.TrimSuffix(f, ".json")+".golden.json", g)
		})
	}
}

// TestRegistrationLimitOnDynamoDB: the registration rate limit counts in the main
// table under OAUTH# (the function's own counter): the 21st registration from one
// address within the hour is refused with 429, another address is not.
func TestRegistrationLimitOnDynamoDB(t *testing.T) {
	ctx := context.Background()
	if err := env.Fresh(ctx); err != nil {
		t.Fatal(err)
	}
	base, err := env.Config()
	if err != nil {
		t.Fatal(err)
	}
	fn, err := oauthfn.Build(ctx, oauthfn.Config{Config: base, Dev: true}, oauthfn.Deps{
		DB: env.DB, Audit: &lambdatest.Capture{Next: env.Sink()}, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	payload, err := os.ReadFile("03-register.json")
	if err != nil {
		t.Fatal(err)
	}
	register := func(ip string) int {
		var ev events.APIGatewayProxyRequest
		if err := json.Unmarshal(payload, &ev); err != nil {
			t.Fatal(err)
		}
		ev.RequestContext.Identity.SourceIP = ip
		ev.MultiValueHeaders["X-Forwarded-For"] = []string{ip}
		ev.Headers["X-Forwarded-For"] = ip
		resp, err := fn.Handle(ctx, ev)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode
	}
	for i := 1; i <= 20; i++ {
		if got := register("203.0.113.7"); got != 201 {
			t.Fatalf("registration %d: %d, want 201", i, got)
		}
	}
	if got := register("203.0.113.7"); got != 429 {
		t.Errorf("registration 21 from the same address: %d, want 429", got)
	}
	if got := register("203.0.113.8"); got != 201 {
		t.Errorf("first registration from another address: %d, want 201", got)
	}
}
