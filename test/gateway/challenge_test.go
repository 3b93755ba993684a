package gateway

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/aacworkflow/aacmcp/shared/gateway"
	"github.com/aacworkflow/aacmcp/test/lambda/lambdatest"
)

// bearerParam reads one auth-param of a Bearer challenge (RFC 6750 section 3).
var bearerParam = regexp.MustCompile(`([a-z_]+)="([^"]*)"`)

// stepUpChallenge does what mcp-remote and the TypeScript SDK client do with a
// refused tool call: read WWW-Authenticate (and nothing else) for the 403
// insufficient_scope challenge, whose scope says what to ask for and whose
// resource_metadata says where to start discovery. ok is false when there is
// nothing a client could step up from.
func stepUpChallenge(resp *http.Response) (params map[string]string, ok bool) {
	if resp.StatusCode != http.StatusForbidden {
		return nil, false
	}
	ch := resp.Header.Get("WWW-Authenticate")
	scheme, rest, _ := strings.Cut(ch, " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return nil, false
	}
	params = map[string]string{}
	for _, m := range bearerParam.FindAllStringSubmatch(rest, -1) {
		params[m[1]] = m[2]
	}
	return params, params["error"] == "insufficient_scope" && params["scope"] != "" && params["resource_metadata"] != ""
}

// callCreateIssue is a read-only token's tools/call of a write tool on /mcp, the
// request that must be answered with the step-up challenge.
func callCreateIssue(t *testing.T, mcpURL string) *http.Response {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"create_issue","arguments":{"title":"x"}}}`
	req, _ := http.NewRequest(http.MethodPost, mcpURL, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+lambdatest.SecretViewer)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp
}

// TestStepUpChallengeReachesClient is issue 13 item 2: through the stand-in of the
// deployed API (stage URL, headers remapped as API Gateway REST does), a client
// sees the 403 challenge only through the front door (CloudFront with the
// origin-response function, serving the stage at its root); on the bare
// execute-api URL it arrives renamed, as in production, and the client has nothing
// to step up from.
func TestStepUpChallengeReachesClient(t *testing.T) {
	stage := func(c *gateway.Config) { c.Stage, c.StageInPath = "prod", true }
	t.Run("front door", func(t *testing.T) {
		url, _ := startWith(t, stage, true)
		resp := callCreateIssue(t, url+"/mcp")
		params, ok := stepUpChallenge(resp)
		if !ok {
			t.Fatalf("the client sees no step-up challenge: status %d, WWW-Authenticate %q (X-Amzn-Remapped-WWW-Authenticate %q)",
				resp.StatusCode, resp.Header.Get("WWW-Authenticate"), resp.Header.Get("X-Amzn-Remapped-WWW-Authenticate"))
		}
		if params["scope"] != "issues:write" || params["resource_metadata"] != url+"/.well-known/oauth-protected-resource/mcp" {
			t.Errorf("challenge parameters %v", params)
		}
		if rm := resp.Header.Get("X-Amzn-Remapped-WWW-Authenticate"); rm != "" {
			t.Errorf("the remapped copy is still there: %q", rm)
		}
	})
	t.Run("bare execute-api URL", func(t *testing.T) {
		url, _ := startWith(t, stage, false)
		resp := callCreateIssue(t, url+"/prod/mcp")
		if _, ok := stepUpChallenge(resp); ok {
			t.Fatal("the stand-in delivers the function's challenge, which API Gateway REST does not")
		}
		if rm := resp.Header.Get("X-Amzn-Remapped-WWW-Authenticate"); !strings.Contains(rm, `error="insufficient_scope"`) {
			t.Errorf("X-Amzn-Remapped-WWW-Authenticate = %q, want the function's challenge", rm)
		}
	})
}

// TestStagePath: under a stage, paths outside it get the execute-api host's own
// 403, which no gateway response changes; the API answers inside it.
func TestStagePath(t *testing.T) {
	url, authz := startWith(t, func(c *gateway.Config) { c.Stage, c.StageInPath = "prod", true }, false)
	for _, tt := range []struct {
		path       string
		wantStatus int
		wantType   string
	}{
		{"/prod/healthz", 200, ""},
		{"/prod/.well-known/oauth-protected-resource/mcp", 200, ""},
		{"/healthz", 403, "MissingAuthenticationTokenException"},
		{"/.well-known/oauth-protected-resource/prod/mcp", 403, "MissingAuthenticationTokenException"},
		{"/.well-known/oauth-authorization-server/prod", 403, "MissingAuthenticationTokenException"},
		{"/production/healthz", 403, "MissingAuthenticationTokenException"},
		{"/prod", 403, "MissingAuthenticationTokenException"},
		{"/", 403, "MissingAuthenticationTokenException"},
	} {
		resp, err := http.Get(url + tt.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != tt.wantStatus || resp.Header.Get("X-Amzn-ErrorType") != tt.wantType {
			t.Errorf("GET %s: %d %q %s, want %d %q", tt.path, resp.StatusCode, resp.Header.Get("X-Amzn-ErrorType"), body, tt.wantStatus, tt.wantType)
		}
		if tt.wantStatus == 403 && string(body) != `{"message":"Missing Authentication Token"}` {
			t.Errorf("GET %s: body %s", tt.path, body)
		}
	}
	// A header-less call inside the stage: the gateway's own challenge names the
	// metadata under the stage.
	resp, err := http.Post(url+"/prod/mcp", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if ch := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != 401 || ch != `Bearer resource_metadata="`+url+`/prod/.well-known/oauth-protected-resource/mcp"` {
		t.Errorf("no token: %d %q", resp.StatusCode, ch)
	}
	if n := authz.n.Load(); n != 0 {
		t.Errorf("authorizer called %d times", n)
	}
}

// invokerFunc is an Invoker from a function.
type invokerFunc func(ctx context.Context, payload []byte) ([]byte, error)

func (f invokerFunc) Invoke(ctx context.Context, p []byte) ([]byte, error) { return f(ctx, p) }

// TestDeniedTokenChallenge: an authorizer Deny gets the stack's ACCESS_DENIED
// gateway response, a 401 whose challenge says error="invalid_token" (the token was
// presented), and the function is not called.
func TestDeniedTokenChallenge(t *testing.T) {
	deny := invokerFunc(func(context.Context, []byte) ([]byte, error) {
		return []byte(`{"principalId":"x","policyDocument":{"Version":"2012-10-17","Statement":[{"Action":["execute-api:Invoke"],"Effect":"Deny","Resource":["*"]}]}}`), nil
	})
	called := false
	fn := invokerFunc(func(context.Context, []byte) ([]byte, error) { called = true; return nil, errors.New("not reached") })
	srv := httptest.NewServer(gateway.New(gateway.Config{Authorizer: deny, Function: fn, Stage: "prod", StageInPath: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/prod/mcp", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer aac_whatever")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	want := `Bearer resource_metadata="` + srv.URL + `/prod/.well-known/oauth-protected-resource/mcp", error="invalid_token"`
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != want || called {
		t.Errorf("%d %q (function called: %v), want 401 %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), called, want)
	}
}
