// Package apigw_test feeds every sample API Gateway REST proxy event in this folder
// through the real MCP function handler, at the lambda.Handler level (JSON in, JSON
// out), against dynalite and kinesalite, and compares the response and the audit
// records with the golden files next to each event. Regenerate with -update.
package apigw_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/aacworkflow/aacmcp/functions/mcp/mcpfn"
	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/test/lambda/lambdatest"
)

var env *lambdatest.Env

var fixedNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestMain(m *testing.M) { lambdatest.Main(m, &env) }

// golden is what a golden file holds for one event.
type golden struct {
	StatusCode int               `json:"statusCode"`
	Headers    map[string]string `json:"headers"`
	// Body is the parsed JSON body (or the raw text when it is not JSON).
	Body  any            `json:"body"`
	Audit []audit.Record `json:"audit"`
}

// headersOfInterest are compared; others (Date, ...) vary or do not matter.
var headersOfInterest = []string{"Content-Type", "Www-Authenticate", "X-Request-Id", "Allow", "Retry-After", "Cache-Control"}

func TestSampleEvents(t *testing.T) {
	ctx := context.Background()
	if err := env.Fresh(ctx); err != nil {
		t.Fatal(err)
	}
	cfg, err := env.Config()
	if err != nil {
		t.Fatal(err)
	}
	capture := &lambdatest.Capture{Next: env.Sink()}
	var emf bytes.Buffer
	fn, err := mcpfn.Build(ctx, cfg, mcpfn.Deps{
		// A fixed HMAC key keeps args_hmac identical on every run.
		HMACKey: []byte("apigw-golden-digest-key-32-bytes"),
		DB:      env.DB,
		Audit:   capture,
		Stdout:  &emf,
		Logger:  slog.New(slog.NewJSONHandler(io.Discard, nil)),
		// A fixed clock keeps dates (usage days, the dashboard's default range)
		// identical on every run.
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
	var all []audit.Record
	for _, f := range files {
		// Events run in file order on one seeded store: later events see the
		// effects of earlier ones (the delete, then its repeat).
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
		g := golden{StatusCode: resp.StatusCode, Headers: map[string]string{}, Audit: capture.Take()}
		for _, k := range headersOfInterest {
			if v := resp.MultiValueHeaders[k]; len(v) > 0 {
				g.Headers[k] = strings.Join(v, ", ")
			}
		}
		// Behind the adapter every answer must stay one plain JSON document: API
		// Gateway cannot carry a stream.
		if ct := g.Headers["Content-Type"]; ct != "" && !strings.HasPrefix(ct, "application/json") {
			t.Errorf("%s: Content-Type %q, want application/json (no SSE on Lambda)", name, ct)
		}
		if resp.IsBase64Encoded {
			t.Errorf("%s: body is base64", name)
		}
		if err := json.Unmarshal([]byte(resp.Body), &g.Body); err != nil {
			g.Body = resp.Body
		}
		for _, r := range g.Audit {
			if err := r.Validate(); err != nil {
				t.Errorf("%s: audit record invalid: %v", name, err)
			}
		}
		all = append(all, g.Audit...)
		t.Run(name, func(t *testing.T) {
			lambdatest.Golden(t, strings.TrimSuffix(f, ".json")+".golden.json", g)
		})
	}

	// Every record of the run is on the stream, once.
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	onStream, err := env.WaitStream(wctx, func(rs []audit.Record) bool { return len(rs) >= len(all) })
	if err != nil {
		t.Fatalf("reading the stream: %v (have %d of %d)", err, len(onStream), len(all))
	}
	ids := make([]string, 0, len(onStream))
	for _, r := range onStream {
		ids = append(ids, r.EventID)
	}
	for _, r := range all {
		if !slices.Contains(ids, r.EventID) {
			t.Errorf("record %s (%s %s) not on the stream", r.EventID, r.Tool, r.Outcome)
		}
	}
	// One EMF line per audited call.
	lines := strings.Count(emf.String(), "\n")
	if lines != len(all) {
		t.Errorf("%d EMF lines for %d audited calls", lines, len(all))
	}
}
