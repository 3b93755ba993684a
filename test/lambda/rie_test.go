// Package lambda_test runs the real function binaries, built the way they are
// deployed (bootstrap, linux, CGO off, lambda.norpc, trimmed and stripped), under the
// AWS Lambda Runtime Interface Emulator on loopback, with dynalite and kinesalite
// behind them, and drives MCP traffic through their invoke URLs by way of the local
// API Gateway.
package lambda_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/aacworkflow/aacmcp/functions/mcp/mcpfn"
	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/catalog"
	"github.com/aacworkflow/aacmcp/shared/gateway"
	"github.com/aacworkflow/aacmcp/shared/store"
	"github.com/aacworkflow/aacmcp/test/emulator"
	"github.com/aacworkflow/aacmcp/test/harness"
	"github.com/aacworkflow/aacmcp/test/lambda/lambdatest"
)

// rieModule is the emulator's module path at the version go.mod pins.
const rieModule = "github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie"

var (
	env  *lambdatest.Env
	bins struct{ rie, mcp, authorizer, oauth string }
)

func TestMain(m *testing.M) {
	code, err := setup(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lambda e2e setup:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func setup(m *testing.M) (int, error) {
	dir, err := os.MkdirTemp("", "aacmcp-rie-")
	if err != nil {
		return 0, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	root, err := emulator.RepoRoot()
	if err != nil {
		return 0, err
	}
	// The three builds run in parallel; each is once per test binary.
	bins.rie = filepath.Join(dir, "aws-lambda-rie")
	bins.mcp = filepath.Join(dir, "mcp", "bootstrap")
	bins.authorizer = filepath.Join(dir, "authorizer", "bootstrap")
	bins.oauth = filepath.Join(dir, "oauth", "bootstrap")
	builds := []struct{ out, pkg string }{
		{bins.rie, rieModule},
		{bins.mcp, "./functions/mcp"},
		{bins.authorizer, "./functions/authorizer"},
		{bins.oauth, "./functions/oauth"},
	}
	errs := make([]error, len(builds))
	var wg sync.WaitGroup
	for i, b := range builds {
		wg.Go(func() { errs[i] = goBuild(root, b.out, b.pkg) })
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	e, stop, startErr := lambdatest.Start(ctx)
	cancel()
	wg.Wait()
	if startErr != nil {
		return 0, startErr
	}
	defer stop()
	for _, err := range errs {
		if err != nil {
			return 0, err
		}
	}
	env = e
	return m.Run(), nil
}

// goBuild builds a function exactly as `make build` does (for the host's
// architecture, so the emulator can run it).
func goBuild(root, out, pkg string) error {
	args := []string{"build", "-trimpath", "-ldflags", "-s -w", "-o", out}
	if pkg != rieModule {
		args = append(args, "-tags", "lambda.norpc")
	}
	cmd := exec.Command("go", append(args, pkg)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+runtime.GOARCH, "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
	}
	return nil
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

// runRIE runs bootstrap under the emulator bound to loopback and returns its invoke
// URL and its output (the function's stdout and stderr included).
func runRIE(t *testing.T, bootstrap string, environ []string) (string, *harness.Buffer) {
	t.Helper()
	port, apiPort := freePort(t), freePort(t)
	cmd := exec.Command(bins.rie,
		"--runtime-interface-emulator-address", fmt.Sprintf("127.0.0.1:%d", port),
		"--runtime-api-address", fmt.Sprintf("127.0.0.1:%d", apiPort),
		bootstrap)
	cmd.Env = append(environ, "AWS_LAMBDA_FUNCTION_TIMEOUT=30")
	out := &harness.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = c.Close()
			break
		}
		select {
		case <-done:
			t.Fatalf("emulator exited: %s", out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("emulator did not listen on %s: %s", addr, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return "http://" + addr + "/2015-03-31/functions/function/invocations", out
}

func TestFunctionsUnderRIE(t *testing.T) {
	ctx := context.Background()
	if err := env.Fresh(ctx); err != nil {
		t.Fatal(err)
	}
	mcpURL, mcpOut := runRIE(t, bins.mcp, env.Environ())
	authURL, authOut := runRIE(t, bins.authorizer, env.Environ())
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("mcp function output:\n%s", mcpOut.String())
			t.Logf("authorizer output:\n%s", authOut.String())
		}
	})

	// The local API Gateway in front of both emulators: bearer token -> authorizer
	// invoke URL -> REST proxy event -> MCP function invoke URL.
	gw := httptest.NewServer(gateway.New(gateway.Config{
		Authorizer: gateway.InvokeURL(authURL, nil),
		Function:   gateway.InvokeURL(mcpURL, nil),
		Audit:      discard{},
		Tools:      catalog.New(catalog.Deps{}),
		Logger:     slog.New(slog.NewJSONHandler(io.Discard, nil)),
	}))
	t.Cleanup(gw.Close)

	c, err := client.NewStreamableHttpClient(gw.URL+"/mcp",
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + lambdatest.SecretAdmin}))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = "2025-11-25"
	init.Params.ClientInfo = mcp.Implementation{Name: "rie-test", Version: "1.0"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil || len(tools.Tools) != 11 {
		t.Fatalf("tools/list: %d tools, %v", len(tools.Tools), err)
	}

	callTool := func(name string, args map[string]any) (string, bool) {
		t.Helper()
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = name, args
		res, err := c.CallTool(ctx, req)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var b strings.Builder
		for _, ct := range res.Content {
			if tc, ok := ct.(mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String(), res.IsError
	}
	out, isErr := callTool("create_issue", map[string]any{"title": "Created under the RIE", "labels": []string{"rie"}})
	if isErr {
		t.Fatalf("create_issue: %s", out)
	}
	var created struct{ ID, Key string }
	if err := json.Unmarshal([]byte(out), &created); err != nil || created.ID == "" {
		t.Fatalf("create_issue result %q: %v", out, err)
	}
	// The issue is in the emulated DynamoDB.
	iss, err := env.Store.GetIssue(ctx, lambdatest.Workspace, created.ID)
	if err != nil || iss.Title != "Created under the RIE" || iss.Key != created.Key {
		t.Fatalf("issue in DynamoDB: %+v, %v", iss, err)
	}

	out, isErr = callTool("delete_issue", map[string]any{"issue_id": created.ID})
	if !isErr || !strings.Contains(out, string(apperr.DestructiveFlagMissing)) {
		t.Fatalf("delete without confirm: isError=%v %s", isErr, out)
	}
	if _, err := env.Store.GetIssue(ctx, lambdatest.Workspace, created.ID); err != nil {
		t.Fatalf("issue gone after a refused delete: %v", err)
	}
	out, isErr = callTool("delete_issue", map[string]any{"issue_id": created.ID, "confirm": true})
	if isErr {
		t.Fatalf("delete with confirm: %s", out)
	}
	if _, err := env.Store.GetIssue(ctx, lambdatest.Workspace, created.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("issue still readable after delete: %v", err)
	}

	// A revoked token is refused by the authorizer binary, which audits it: its Deny
	// is the ACCESS_DENIED gateway response, whose challenge says invalid_token.
	req, _ := http.NewRequest(http.MethodPost, gw.URL+"/tools/get_issue", strings.NewReader(`{"issue_id":"AAC-1"}`))
	req.Header.Set("Authorization", "Bearer "+lambdatest.SecretRevoked)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	wantChallenge := `Bearer resource_metadata="` + gw.URL + `/.well-known/oauth-protected-resource/mcp", error="invalid_token"`
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != wantChallenge {
		t.Fatalf("revoked token: %d %q, want 401 %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), wantChallenge)
	}

	// The audit records of every call are on the emulated Kinesis stream.
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	var mine []audit.Record
	_, err = env.WaitStream(wctx, func(rs []audit.Record) bool {
		mine = mine[:0]
		for _, r := range rs {
			if r.ResourceID == created.ID || (r.TokenID == lambdatest.TokenRevoked && r.Tool == "get_issue") {
				mine = append(mine, r)
			}
		}
		return len(mine) >= 4
	})
	if err != nil {
		t.Fatalf("audit records on the stream: %v (%d found: %+v)", err, len(mine), mine)
	}
	want := map[string]bool{
		"create_issue/success/":                        false,
		"delete_issue/denied/destructive_flag_missing": false,
		"delete_issue/success/":                        false,
		"get_issue/denied/invalid_token":               false,
	}
	for _, r := range mine {
		want[r.Tool+"/"+r.Outcome+"/"+r.Reason] = true
	}
	for k, seen := range want {
		if !seen {
			t.Errorf("no audit record %s on the stream: %+v", k, mine)
		}
	}
	// Each function printed its metrics as EMF lines, no API call needed.
	for name, o := range map[string]*harness.Buffer{"mcp": mcpOut, "authorizer": authOut} {
		if !strings.Contains(o.String(), `"CloudWatchMetrics"`) {
			t.Errorf("%s wrote no EMF line", name)
		}
	}
}

// TestMissingConfigurationFailsInit runs the bootstrap without its table: it must
// stop during init with a log line naming the variable, not serve and fail later.
func TestMissingConfigurationFailsInit(t *testing.T) {
	closed := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	oauthEnv := []string{
		"AACMCP_OIDC_ISSUER=https://cognito-idp.us-east-1.amazonaws.com/us-east-1_golden",
		"AACMCP_OIDC_CLIENT_ID=golden",
		"AACMCP_OIDC_CLIENT_SECRET_ARN=arn:aws:secretsmanager:us-east-1:123456789012:secret:oidc-AbCdEf",
		// Nothing listens here: the secret cannot be read, so init must stop.
		"AWS_ENDPOINT_URL_SECRETS_MANAGER=" + closed,
	}
	for _, tc := range []struct {
		bin, missing string
		extra        []string
		want         string // what the log line must name; "" is missing
	}{
		{bin: bins.mcp, missing: "AACMCP_TABLE"},
		// Without the opt-in the audit HMAC key's secret is required.
		{bin: bins.mcp, missing: mcpfn.EnvHMACKeyEphemeral, want: mcpfn.EnvHMACKeySecretARN},
		{bin: bins.authorizer, missing: "AACMCP_TOKENS_TABLE"},
		{bin: bins.oauth, missing: "AACMCP_TOKENS_TABLE", extra: oauthEnv},
		{bin: bins.oauth, missing: "AACMCP_OIDC_ISSUER", extra: oauthEnv},
		{bin: bins.oauth, missing: "AACMCP_OIDC_CLIENT_SECRET_ARN", extra: oauthEnv},
		// Everything set, but Secrets Manager cannot be reached: the upstream client
		// secret comes from there only, at init.
		{bin: bins.oauth, missing: "-", extra: oauthEnv, want: "upstream OIDC client secret"},
	} {
		var environ []string
		for _, kv := range append(env.Environ(), tc.extra...) {
			if !strings.HasPrefix(kv, tc.missing+"=") {
				environ = append(environ, kv)
			}
		}
		if tc.want == "" {
			tc.want = tc.missing
		}
		cmd := exec.Command(tc.bin)
		cmd.Env = environ
		out, err := cmd.CombinedOutput()
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() == 0 {
			t.Fatalf("%s without %s: err %v, output %s", tc.bin, tc.missing, err, out)
		}
		if !strings.Contains(string(out), tc.want) || !strings.Contains(string(out), `"level":"ERROR"`) {
			t.Errorf("%s: init failure does not name %s in a JSON log line: %s", tc.bin, tc.want, out)
		}
	}
}

// discard is the gateway's sink for header-less requests, which this test does not
// make.
type discard struct{}

func (discard) Write(context.Context, audit.Record) error { return nil }
