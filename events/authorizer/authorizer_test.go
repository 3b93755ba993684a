// Package authorizer_test feeds every sample REQUEST authorizer event in this folder
// through the real authorizer handler, at the lambda.Handler level, against the
// tokens table in dynalite and the audit stream in kinesalite, and compares the
// answer and the audit records with the golden files. Regenerate with -update.
package authorizer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aacworkflow/aacmcp/functions/authorizer/authorizerfn"
	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/authzctx"
	"github.com/aacworkflow/aacmcp/test/lambda/lambdatest"
)

var env *lambdatest.Env

func TestMain(m *testing.M) { lambdatest.Main(m, &env) }

type golden struct {
	// Error is the function error API Gateway sees ("Unauthorized" = its
	// UNAUTHORIZED gateway response, 401 without an error code). A refused token
	// is a Deny Response instead (ACCESS_DENIED, 401 error="invalid_token").
	Error    string          `json:"error,omitempty"`
	Response json.RawMessage `json:"response,omitempty"`
	Audit    []audit.Record  `json:"audit"`
}

func TestSampleEvents(t *testing.T) {
	ctx := context.Background()
	cfg, err := env.Config()
	if err != nil {
		t.Fatal(err)
	}
	capture := &lambdatest.Capture{Next: env.Sink()}
	var emf bytes.Buffer
	a, err := authorizerfn.Build(cfg, authorizerfn.Deps{
		DB: env.DB, Audit: capture, Stdout: &emf,
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	h := lambda.NewHandler(a.Handle)
	// *-frontdoor-* events came through the CloudFront front door, where the stack
	// sets AACMCP_TRUST_VIEWER_ADDRESS: API Gateway's source IP is an edge server,
	// and the request is attributed to CloudFront-Viewer-Address, here the same
	// client as the other samples (so the failure counter below counts it too).
	front := cfg
	front.TrustViewerAddress = true
	af, err := authorizerfn.Build(front, authorizerfn.Deps{
		DB: env.DB, Audit: capture, Stdout: &emf,
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	hFront := lambda.NewHandler(af.Handle)

	files, err := lambdatest.SampleFiles(".")
	if err != nil || len(files) == 0 {
		t.Fatalf("no sample events: %v", err)
	}
	rejected := 0
	windowBefore := time.Now().UTC().Truncate(cfg.AuthFailLimit.Window).Unix()
	before := failures(t, windowBefore)
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		payload, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var g golden
		handler := h
		if strings.Contains(name, "-frontdoor") {
			handler = hFront
		}
		out, err := handler.Invoke(ctx, payload)
		if err != nil {
			g.Error = err.Error()
		} else {
			g.Response = out
		}
		g.Audit = capture.Take()
		if len(g.Audit) > 0 {
			rejected++
		}
		t.Run(name, func(t *testing.T) {
			if strings.Contains(name, "-valid") {
				// valid*: an Allow for the whole API, no record, and the token's
				// expiry for the function to hold a cached answer to.
				if g.Error != "" || len(g.Audit) != 0 {
					t.Errorf("valid token refused: %s, %d records", g.Error, len(g.Audit))
				}
				var resp struct {
					Context map[string]any `json:"context"`
				}
				if err := json.Unmarshal(g.Response, &resp); err != nil {
					t.Fatal(err)
				}
				exp, ok := resp.Context[authzctx.ExpiresAt].(string)
				if sec, err := strconv.ParseInt(exp, 10, 64); !ok || err != nil || sec <= time.Now().Unix() {
					t.Errorf("context expires_at = %v, want the token's expiry in Unix seconds", resp.Context[authzctx.ExpiresAt])
				}
			} else if strings.Contains(name, "-missing-header") {
				// No credential: nothing was judged, so no Deny (RFC 6750 section 3.1).
				if g.Error != "Unauthorized" || len(g.Audit) != 1 || g.Audit[0].Reason != "invalid_token" {
					t.Errorf("want Unauthorized and one invalid_token record, got %q and %+v", g.Error, g.Audit)
				}
			} else {
				// A credential the authorizer looked at and refused: its Deny.
				var resp events.APIGatewayCustomAuthorizerResponse
				if g.Error != "" || json.Unmarshal(g.Response, &resp) != nil || !authorizerfn.Denied(resp) {
					t.Errorf("want the Deny of a refused token, got error %q, answer %s", g.Error, g.Response)
				}
				if len(g.Audit) != 1 || g.Audit[0].Reason != "invalid_token" {
					t.Errorf("want one invalid_token record, got %+v", g.Audit)
				}
			}
			if strings.Contains(name, "-frontdoor") {
				for _, r := range g.Audit {
					if r.SourceIP != "198.51.100.11" {
						t.Errorf("audited source %q, want the viewer CloudFront names, not its edge server", r.SourceIP)
					}
				}
			}
			lambdatest.Golden(t, strings.TrimSuffix(f, ".json")+".golden.json", g)
		})
	}

	// Each rejection was counted for the source address in the tokens table.
	window := time.Now().UTC().Truncate(cfg.AuthFailLimit.Window).Unix()
	after := failures(t, window)
	switch {
	case after == 0:
		t.Errorf("no failure counter for the source address")
	case window == windowBefore && after-before != int64(rejected):
		// (A window boundary between the calls splits the count legitimately.)
		t.Errorf("failure counter grew by %d, want %d", after-before, rejected)
	}
	if got := strings.Count(emf.String(), "\n"); got != rejected {
		t.Errorf("%d EMF lines for %d rejections", got, rejected)
	}
}

// failures reads the failed-attempt counter of the sample events' source address.
func failures(t *testing.T, window int64) int64 {
	t.Helper()
	out, err := env.DB.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(env.TokensTable),
		Key: map[string]types.AttributeValue{
			"PK": &types.AttributeValueMemberS{Value: fmt.Sprintf("FAIL#198.51.100.11#%d", window)},
			"SK": &types.AttributeValueMemberS{Value: "COUNT"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	n, ok := out.Item["failures"].(*types.AttributeValueMemberN)
	if !ok {
		return 0
	}
	v, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
