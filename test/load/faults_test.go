package load

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	kinesisapi "github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/aacworkflow/aacmcp/functions/mcp/mcpfn"
	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/audit/kinesis"
	gt "github.com/aacworkflow/aacmcp/shared/guard/guardtest"
	"github.com/aacworkflow/aacmcp/shared/lambdaenv"
	"github.com/aacworkflow/aacmcp/shared/store"
	"github.com/aacworkflow/aacmcp/shared/store/dynamo"
	"github.com/aacworkflow/aacmcp/test/emulator"
	"github.com/aacworkflow/aacmcp/test/harness"
)

// fault is what the injecting round tripper does to a request.
type fault int32

const (
	faultNone     fault = iota
	faultThrottle       // 400 ThrottlingException, which the SDK retries
	faultServer         // 500 InternalServerError
	faultHang           // no answer until the request's context ends
)

// faultyTransport injects faults in front of a real endpoint and counts requests.
type faultyTransport struct {
	next     http.RoundTripper
	mode     atomic.Int32
	failNext atomic.Int32 // when > 0: throttle this many requests, then pass
	requests atomic.Int64
	injected atomic.Int64
}

func (f *faultyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	f.requests.Add(1)
	mode := fault(f.mode.Load())
	if f.failNext.Add(-1) >= 0 {
		mode = faultThrottle
	}
	switch mode {
	case faultThrottle:
		f.injected.Add(1)
		return awsError(r, http.StatusBadRequest, "ThrottlingException", "Rate of requests exceeds the allowed throughput."), nil
	case faultServer:
		f.injected.Add(1)
		return awsError(r, http.StatusInternalServerError, "InternalServerError", "Internal server error"), nil
	case faultHang:
		f.injected.Add(1)
		<-r.Context().Done()
		return nil, r.Context().Err()
	}
	return f.next.RoundTrip(r)
}

func awsError(r *http.Request, status int, code, msg string) *http.Response {
	body := fmt.Sprintf(`{"__type":"com.amazonaws.dynamodb.v20120810#%s","message":"%s"}`, code, msg)
	h := http.Header{}
	h.Set("Content-Type", "application/x-amz-json-1.0")
	h.Set("X-Amzn-ErrorType", code)
	h.Set("X-Amzn-RequestId", "injected")
	return &http.Response{StatusCode: status, Status: http.StatusText(status), Header: h, Body: io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)), Request: r, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}
}

// awsEnv is the MCP Lambda's code wired to dynalite through a fault injector, with
// audit records collected in memory (or sent to Kinesis).
type awsEnv struct {
	ft    *faultyTransport
	fn    *mcpfn.Function
	sink  *gt.MemorySink
	issue store.Issue
}

const (
	faultWS   = "acme"
	faultUser = "ada"
	mainTable = "aacmcp-main"
	tokTable  = "aacmcp-tokens"
)

func newAWSEnv(t *testing.T, ddb *emulator.Server, sink audit.Sink) *awsEnv {
	t.Helper()
	ctx := context.Background()
	clean := dynamodb.NewFromConfig(ddb.AWSConfig())
	var ttl *dynamo.TTLWarning
	if err := dynamo.CreateTables(ctx, clean, mainTable, tokTable); err != nil && !errors.As(err, &ttl) {
		t.Fatalf("create tables: %v", err)
	}
	seed := dynamo.New(clean, mainTable, tokTable)
	now := time.Now().UTC()
	if _, err := seed.CreateWorkspace(ctx, store.Workspace{ID: faultWS, Key: "ACME", Name: "Acme", CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	if _, err := seed.UpdateMember(ctx, store.Member{WorkspaceID: faultWS, UserID: faultUser, Role: store.RoleAdmin, CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	is, err := seed.CreateIssue(ctx, faultWS, store.NewIssue{Title: "seed", Status: "open", Priority: "low", Labels: []string{}, CreatedBy: faultUser, CreatedAt: now})
	if err != nil {
		t.Fatal(err)
	}

	ft := &faultyTransport{next: http.DefaultTransport}
	faulty := dynamodb.NewFromConfig(ddb.AWSConfig(), func(o *dynamodb.Options) { o.HTTPClient = &http.Client{Transport: ft} })
	mem, _ := sink.(*gt.MemorySink)
	cfg, err := lambdaenv.Load(func(k string) string {
		return map[string]string{lambdaenv.EnvTable: mainTable, lambdaenv.EnvTokensTable: tokTable, lambdaenv.EnvAuditStream: "audit"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	fn, err := mcpfn.Build(ctx, cfg, mcpfn.Deps{DB: faulty, Audit: sink, Stdout: io.Discard, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return &awsEnv{ft: ft, fn: fn, sink: mem, issue: is}
}

// invoke sends one REST tool call as API Gateway would, inside a Lambda context
// that has remaining time left.
func (e *awsEnv) invoke(t *testing.T, tool, body, reqID string, remaining time.Duration) (events.APIGatewayProxyResponse, time.Time) {
	t.Helper()
	ev := events.APIGatewayProxyRequest{
		Resource: "/tools/{name}", Path: "/tools/" + tool, HTTPMethod: http.MethodPost, Body: body,
		Headers:        map[string]string{"Host": "abc.execute-api.us-east-1.amazonaws.com", "Content-Type": "application/json"},
		PathParameters: map[string]string{"name": tool},
		RequestContext: events.APIGatewayProxyRequestContext{
			RequestID: reqID, ExtendedRequestID: reqID, Stage: "prod", Path: "/prod/tools/" + tool, HTTPMethod: http.MethodPost,
			Identity: events.APIGatewayRequestIdentity{SourceIP: "203.0.113.7"},
			Authorizer: map[string]any{
				"workspace_id": faultWS, "user_id": faultUser, "token_id": "tok_fault",
				"scopes":     "issues:read issues:write comments:read comments:write dashboard:read agents:write autopilot:run",
				"expires_at": strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10),
			},
		},
	}
	dl := time.Now().Add(remaining)
	ctx, cancel := context.WithDeadline(context.Background(), dl)
	defer cancel()
	resp, err := e.fn.Handle(ctx, ev)
	if err != nil {
		t.Fatalf("Handle returned an error (API Gateway would answer 502): %v", err)
	}
	return resp, dl
}

// internalLeaks are texts of the SDK, the service or the deployment that must never
// reach a client.
var internalLeaks = []string{"Throttl", "dynamodb", "DynamoDB", "InternalServerError", "operation error", "api error", "exceeded", "deadline", "context", mainTable, tokTable, "injected", "127.0.0.1"}

// TestDynamoDBFaults injects throttling, 5xx, hangs and an outage between the MCP
// Lambda's code and DynamoDB (dynalite). Every call still answers before the
// Lambda's deadline with internal_error and the public message only, after bounded
// retries, and leaves exactly one audit record; a transient fault is ridden out.
func TestDynamoDBFaults(t *testing.T) {
	ddb := emulator.StartT(t, emulator.Dynalite)
	sink := &gt.MemorySink{}
	e := newAWSEnv(t, ddb, sink)
	get := `{"issue_id":"` + e.issue.ID + `"}`

	// Control: no fault.
	if resp, _ := e.invoke(t, "get_issue", get, "control", 5*time.Second); resp.StatusCode != http.StatusOK {
		t.Fatalf("control call: %d %s", resp.StatusCode, resp.Body)
	}

	injectedBefore := e.ft.injected.Load()
	for _, tc := range []struct {
		name      string
		mode      fault
		remaining time.Duration
	}{
		{"throttled", faultThrottle, 5 * time.Second},
		{"5xx", faultServer, 10 * time.Second},
		{"hung", faultHang, 2 * time.Second},
		{"throttled with little time left", faultThrottle, 1500 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.ft.mode.Store(int32(tc.mode))
			defer e.ft.mode.Store(int32(faultNone))
			for _, call := range []struct{ tool, body string }{
				{"get_issue", get},
				{"create_issue", `{"title":"during a fault"}`},
			} {
				before, reqs := len(sink.Records()), e.ft.requests.Load()
				resp, dl := e.invoke(t, call.tool, call.body, "fault-"+tc.name+"-"+call.tool, tc.remaining)
				if returned := time.Now(); !returned.Before(dl) {
					t.Errorf("%s: answered %v after the Lambda deadline: the runtime would have killed it", call.tool, returned.Sub(dl))
				}
				if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(resp.Body, `"code":"internal_error"`) {
					t.Errorf("%s: %d %s, want 500 internal_error", call.tool, resp.StatusCode, resp.Body)
				}
				for _, leak := range internalLeaks {
					if strings.Contains(resp.Body, leak) {
						t.Errorf("%s: the answer leaks %q: %s", call.tool, leak, resp.Body)
					}
				}
				recs := sink.Records()[before:]
				if len(recs) != 1 || recs[0].Reason != "internal_error" {
					t.Errorf("%s: audit %v, want one internal_error record", call.tool, recs)
				}
				attempts := e.ft.requests.Load() - reqs
				// The SDK retries (3 attempts per operation); a handful of operations per
				// call, never an unbounded loop.
				if tc.mode != faultHang && (attempts < 2 || attempts > 30) {
					t.Errorf("%s: %d requests reached DynamoDB, want bounded retries (2..30)", call.tool, attempts)
				}
			}
		})
	}

	t.Run("transient throttling is ridden out", func(t *testing.T) {
		e.ft.failNext.Store(2)
		before := len(sink.Records())
		resp, _ := e.invoke(t, "create_issue", `{"title":"after two throttles"}`, "transient", 10*time.Second)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("create_issue after two throttled requests: %d %s, want 200 (SDK retries)", resp.StatusCode, resp.Body)
		}
		if recs := sink.Records()[before:]; len(recs) != 1 || recs[0].Reason != "" {
			t.Errorf("audit %v, want one success", recs)
		}
	})

	t.Run("dynalite stopped", func(t *testing.T) {
		ddb.Stop()
		before := len(sink.Records())
		resp, dl := e.invoke(t, "get_issue", get, "outage", 5*time.Second)
		if !time.Now().Before(dl) {
			t.Errorf("answered after the deadline")
		}
		if resp.StatusCode != http.StatusInternalServerError || strings.Contains(resp.Body, "connect") || strings.Contains(resp.Body, "refused") {
			t.Errorf("%d %s, want 500 internal_error without the network error", resp.StatusCode, resp.Body)
		}
		if recs := sink.Records()[before:]; len(recs) != 1 || recs[0].Reason != "internal_error" {
			t.Errorf("audit %v, want one internal_error record", recs)
		}
	})
	t.Logf("DynamoDB faults injected: %d requests; %d requests in all", e.ft.injected.Load()-injectedBefore, e.ft.requests.Load())
}

// TestKinesisUnreachable: with the audit stream gone (kinesalite stopped), every
// call of a burst is still answered, and the fallback lines on stdout hold exactly
// one record per call, which the forwarder can put back on the stream.
func TestKinesisUnreachable(t *testing.T) {
	ddb := emulator.StartT(t, emulator.Dynalite)
	kin := emulator.StartT(t, emulator.Kinesalite)
	ctx := context.Background()
	kc := kinesisapi.NewFromConfig(kin.AWSConfig())
	if _, err := kc.CreateStream(ctx, &kinesisapi.CreateStreamInput{StreamName: strPtr("audit"), ShardCount: int32Ptr(1)}); err != nil {
		t.Fatal(err)
	}
	var out harness.Buffer
	sink := kinesis.New(kc, "audit", kinesis.WithFallback(&out), kinesis.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
		kinesis.WithTimeout(500*time.Millisecond), kinesis.WithAttemptTimeout(200*time.Millisecond))
	e := newAWSEnv(t, ddb, sink)
	kin.Stop()

	const calls = 40
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() {
			body := `{"issue_id":"` + e.issue.ID + `"}`
			tool := "get_issue"
			if i%4 == 0 {
				tool, body = "create_issue", fmt.Sprintf(`{"title":"during the outage %d"}`, i)
			}
			resp, _ := e.invoke(t, tool, body, fmt.Sprintf("kin-%d", i), 10*time.Second)
			if resp.StatusCode != http.StatusOK {
				t.Errorf("call %d: %d %s", i, resp.StatusCode, resp.Body)
			}
		})
	}
	wg.Wait()
	got := map[string]int{}
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	for sc.Scan() {
		if r, ok := kinesis.ParseFallbackLine(sc.Bytes()); ok {
			got[r.RequestID]++
		}
	}
	for i := range calls {
		if n := got[fmt.Sprintf("kin-%d", i)]; n != 1 {
			t.Errorf("call kin-%d: %d fallback records, want 1", i, n)
		}
	}
	if len(got) != calls {
		t.Errorf("%d distinct fallback records for %d calls", len(got), calls)
	}
	t.Logf("Kinesis unreachable: %d calls answered, %d fallback records", calls, len(got))
}

func strPtr(s string) *string { return &s }
func int32Ptr(n int32) *int32 { return &n }
