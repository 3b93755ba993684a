// Package gateway tests `aacmcp gateway` (shared/gateway) with the real functions
// in process behind it: the MCP and authorizer functions built as their main builds
// them, against the emulators. It lives under test/ because nothing under shared/
// imports a function's package, tests included.
package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/aacworkflow/aacmcp/functions/authorizer/authorizerfn"
	"github.com/aacworkflow/aacmcp/functions/mcp/mcpfn"
	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/catalog"
	"github.com/aacworkflow/aacmcp/shared/gateway"
	"github.com/aacworkflow/aacmcp/test/lambda/lambdatest"
	"github.com/aacworkflow/aacmcp/test/mcpgotest"
)

var env *lambdatest.Env

func TestMain(m *testing.M) { lambdatest.Main(m, &env) }

// counting counts invocations of a function and keeps the last event.
type counting struct {
	next gateway.Invoker
	n    atomic.Int64
	last atomic.Pointer[[]byte]
}

func (c *counting) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	c.n.Add(1)
	c.last.Store(&payload)
	return c.next.Invoke(ctx, payload)
}

// start wires the real functions in process behind the gateway on 127.0.0.1.
func start(t *testing.T) (url string, authz *counting) {
	t.Helper()
	return startWith(t, func(*gateway.Config) {}, false)
}

// startWith is start with the gateway's configuration adjusted and, with
// frontDoor, the CloudFront distribution in front: then url is the distribution's
// root, which is also the functions' public URL, as in the stack.
func startWith(t *testing.T, configure func(*gateway.Config), frontDoor bool) (url string, authz *counting) {
	t.Helper()
	return startClocked(t, nil, configure, frontDoor)
}

// startClocked is startWith with one clock for the gateway (its authorizer cache)
// and both functions; nil is the real clock.
func startClocked(t *testing.T, now func() time.Time, configure func(*gateway.Config), frontDoor bool) (url string, authz *counting) {
	t.Helper()
	ctx := context.Background()
	if err := env.Fresh(ctx); err != nil {
		t.Fatal(err)
	}
	cfg, err := env.Config()
	if err != nil {
		t.Fatal(err)
	}
	var fd *httptest.Server
	if frontDoor {
		// Listening first: the distribution's URL is the functions' public URL.
		fd = httptest.NewUnstartedServer(nil)
		t.Cleanup(fd.Close)
		cfg.PublicURL = "http://" + fd.Listener.Addr().String()
	}
	quiet := slog.New(slog.NewJSONHandler(io.Discard, nil))
	sink := env.Sink()
	fn, err := mcpfn.Build(ctx, cfg, mcpfn.Deps{DB: env.DB, Audit: sink, Stdout: io.Discard, Logger: quiet, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	a, err := authorizerfn.Build(cfg, authorizerfn.Deps{DB: env.DB, Audit: sink, Stdout: io.Discard, Logger: quiet, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	authz = &counting{next: lambda.NewHandler(a.Handle)}
	gc := gateway.Config{
		Authorizer: authz,
		Function:   lambda.NewHandler(fn.Handle),
		Audit:      sink,
		Tools:      catalog.New(catalog.Deps{}),
		Logger:     quiet,
		Now:        now,
	}
	configure(&gc)
	gc.PublicURL = cfg.PublicURL
	srv := httptest.NewServer(gateway.New(gc))
	t.Cleanup(srv.Close)
	if fd == nil {
		return srv.URL, authz
	}
	origin, err := neturl.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	d := gateway.Distribution{Origin: origin, Logger: quiet}
	if gc.StageInPath {
		d.OriginPath = "/" + gc.Stage
	}
	fd.Config.Handler = gateway.FrontDoor(d)
	fd.Start()
	return fd.URL, authz
}

func mcpClient(t *testing.T, url, secret string) *client.Client {
	t.Helper()
	c, err := client.NewStreamableHttpClient(url+"/mcp",
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + secret}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = "2025-11-25"
	init.Params.ClientInfo = mcp.Implementation{Name: "gateway-test", Version: "1.0"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatalf("initialize through the gateway: %v", err)
	}
	return c
}

func TestMCPClientThroughGateway(t *testing.T) {
	url, authz := start(t)
	c := mcpClient(t, url, lambdatest.SecretAdmin)
	ctx := context.Background()

	tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if want := len(catalog.New(catalog.Deps{}).Tools()); len(tools.Tools) != want {
		t.Fatalf("tools/list gave %d tools, want the catalog's %d", len(tools.Tools), want)
	}

	read := mcpgotest.Call(t, c, "list_issues", map[string]any{"status": "open"})
	if read.IsError || !strings.Contains(mcpgotest.Text(read), lambdatest.IssueMain) {
		t.Fatalf("list_issues: %s", mcpgotest.Text(read))
	}
	created := mcpgotest.Call(t, c, "create_issue", map[string]any{"title": "Made through the gateway"})
	if created.IsError {
		t.Fatalf("create_issue: %s", mcpgotest.Text(created))
	}
	var issue struct{ ID, Key string }
	if err := json.Unmarshal([]byte(mcpgotest.Text(created)), &issue); err != nil || issue.ID == "" {
		t.Fatalf("create_issue result %q: %v", mcpgotest.Text(created), err)
	}
	denied := mcpgotest.Call(t, c, "delete_issue", map[string]any{"issue_id": issue.ID})
	if !denied.IsError || !strings.Contains(mcpgotest.Text(denied), `"code":"destructive_flag_missing"`) {
		t.Fatalf("delete without confirm: isError=%v %s", denied.IsError, mcpgotest.Text(denied))
	}
	deleted := mcpgotest.Call(t, c, "delete_issue", map[string]any{"issue_id": issue.ID, "confirm": true})
	if deleted.IsError || !strings.Contains(mcpgotest.Text(deleted), `"deleted":true`) {
		t.Fatalf("delete with confirm: %s", mcpgotest.Text(deleted))
	}
	if _, err := env.Store.GetIssue(ctx, lambdatest.Workspace, issue.ID); err == nil {
		t.Error("issue still in DynamoDB after the confirmed delete")
	}
	// Every call after the first was answered from the authorizer cache.
	if n := authz.n.Load(); n != 1 {
		t.Errorf("authorizer invoked %d times, want 1 (60 s result cache)", n)
	}

	want := []struct{ tool, outcome, reason, resource string }{
		{"list_issues", "success", "", ""},
		{"create_issue", "success", "", issue.ID},
		{"delete_issue", "denied", "destructive_flag_missing", issue.ID},
		{"delete_issue", "success", "", issue.ID},
	}
	recs := waitFor(t, func(r audit.Record) bool {
		return r.TokenID == lambdatest.TokenAdmin && r.Transport == "mcp" && r.UserAgent != "" && strings.Contains(r.Tool, "_")
	}, len(want))
	var got []audit.Record
	for _, r := range recs {
		if r.WorkspaceID == lambdatest.Workspace && slices.ContainsFunc(want, func(w struct{ tool, outcome, reason, resource string }) bool { return w.tool == r.Tool }) {
			got = append(got, r)
		}
	}
	if len(got) < len(want) {
		t.Fatalf("stream holds %d matching records, want %d", len(got), len(want))
	}
	got = got[len(got)-len(want):]
	for i, w := range want {
		r := got[i]
		if r.Tool != w.tool || r.Outcome != w.outcome || r.Reason != w.reason || (w.resource != "" && r.ResourceID != w.resource) {
			t.Errorf("record %d = %s/%s/%s/%s, want %+v", i, r.Tool, r.Outcome, r.Reason, r.ResourceID, w)
		}
		// (client_name is not asserted: a stateless server sees clientInfo only on
		// initialize, not on the calls that follow.)
		if r.UserID != lambdatest.AdminUser || r.ProtocolVersion != "2025-11-25" || r.SourceIP != "127.0.0.1" || r.RequestID == "" {
			t.Errorf("record %d principal/client: %+v", i, r)
		}
	}
}

func TestGatewayRefusals(t *testing.T) {
	url, authz := start(t)
	tests := []struct {
		name, method, path, auth, body string
		wantStatus                     int
		wantChallenge                  string // "" = no WWW-Authenticate
		wantRemapped                   string // "" = no X-Amzn-Remapped-WWW-Authenticate
		wantMessage                    string
		wantAuthorizerCalls            int64
	}{
		{name: "no header: 401 without the authorizer", method: "POST", path: "/tools/get_issue", body: `{"issue_id":"AAC-1"}`, wantStatus: 401, wantChallenge: `Bearer resource_metadata="` + url + `/.well-known/oauth-protected-resource/mcp"`},
		// A token the authorizer refused: its Deny is the ACCESS_DENIED response.
		{name: "revoked token: the authorizer denies it", method: "POST", path: "/mcp", auth: "Bearer " + lambdatest.SecretRevoked, body: `{}`, wantStatus: 401, wantChallenge: `Bearer resource_metadata="` + url + `/.well-known/oauth-protected-resource/mcp", error="invalid_token"`, wantAuthorizerCalls: 1},
		// Answered from the authorizer cache: the same challenge, no second record.
		{name: "revoked token again: the cached Deny", method: "POST", path: "/mcp", auth: "Bearer " + lambdatest.SecretRevoked, body: `{}`, wantStatus: 401, wantChallenge: `Bearer resource_metadata="` + url + `/.well-known/oauth-protected-resource/mcp", error="invalid_token"`},
		// The function's challenge arrives renamed, as from API Gateway REST.
		{name: "viewer lacks the scope", method: "POST", path: "/tools/create_issue", auth: "Bearer " + lambdatest.SecretViewer, body: `{"title":"x"}`, wantStatus: 403, wantRemapped: `Bearer error="insufficient_scope", scope="issues:write"`, wantAuthorizerCalls: 1},
		{name: "unknown route", method: "GET", path: "/nope", wantStatus: 403, wantMessage: "Missing Authentication Token"},
		{name: "health needs no token", method: "GET", path: "/healthz", wantStatus: 200},
		{name: "metadata needs no token", method: "GET", path: "/.well-known/oauth-protected-resource/mcp", wantStatus: 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := authz.n.Load()
			req, _ := http.NewRequest(tt.method, url+tt.path, strings.NewReader(tt.body))
			if tt.auth != "" {
				req.Header.Set("Authorization", tt.auth)
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.wantStatus, body)
			}
			ch := resp.Header.Get("WWW-Authenticate")
			if ch != tt.wantChallenge {
				t.Errorf("WWW-Authenticate = %q, want %q", ch, tt.wantChallenge)
			}
			rm := resp.Header.Get("X-Amzn-Remapped-WWW-Authenticate")
			if (tt.wantRemapped == "") != (rm == "") || !strings.HasPrefix(rm, tt.wantRemapped) {
				t.Errorf("X-Amzn-Remapped-WWW-Authenticate = %q, want prefix %q", rm, tt.wantRemapped)
			}
			for _, c := range []string{ch, rm} {
				if c != "" && !strings.Contains(c, `resource_metadata="`+url+`/.well-known/oauth-protected-resource/mcp"`) {
					t.Errorf("challenge %q lacks the metadata URL", c)
				}
			}
			if tt.wantMessage != "" && !bytes.Contains(body, []byte(tt.wantMessage)) {
				t.Errorf("body %s lacks %q", body, tt.wantMessage)
			}
			if got := authz.n.Load() - before; got != tt.wantAuthorizerCalls {
				t.Errorf("authorizer called %d times, want %d", got, tt.wantAuthorizerCalls)
			}
		})
	}

	// The header-less request was audited through the forwarder's conversion, the
	// bad token by the authorizer, the scope refusal by the function.
	recs := waitFor(t, func(r audit.Record) bool { return r.Reason == "invalid_token" || r.Reason == "insufficient_scope" }, 3)
	var noHeader, badToken, scope bool
	for _, r := range recs {
		switch {
		case r.Reason == "invalid_token" && r.Tool == "get_issue" && r.TokenID == "" && r.Transport == "rest":
			noHeader = true
		case r.Reason == "invalid_token" && r.TokenID == lambdatest.TokenRevoked && r.Transport == "mcp":
			badToken = true
		case r.Reason == "insufficient_scope" && r.Tool == "create_issue" && r.TokenID == lambdatest.TokenViewer:
			scope = true
		}
	}
	if !noHeader || !badToken || !scope {
		t.Errorf("records: header-less %v, bad token %v, scope %v in %+v", noHeader, badToken, scope, recs)
	}
}

// waitFor reads the stream until at least n records satisfy keep.
func waitFor(t *testing.T, keep func(audit.Record) bool, n int) []audit.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out []audit.Record
	_, err := env.WaitStream(ctx, func(rs []audit.Record) bool {
		out = out[:0]
		for _, r := range rs {
			if keep(r) {
				out = append(out, r)
			}
		}
		return len(out) >= n
	})
	if err != nil {
		t.Fatalf("stream: %v (have %d of %d)", err, len(out), n)
	}
	return out
}
