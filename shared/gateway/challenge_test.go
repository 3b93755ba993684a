package gateway_test

import (
	"io"
	"net/http"
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
// must still see the 403 challenge.
func TestStepUpChallengeReachesClient(t *testing.T) {
	url, _ := startWith(t, func(c *gateway.Config) { c.Stage, c.StageInPath = "prod", true },
		func(h http.Handler) http.Handler { return h })
	resp := callCreateIssue(t, url+"/prod/mcp")
	params, ok := stepUpChallenge(resp)
	if !ok {
		t.Fatalf("the client sees no step-up challenge: status %d, WWW-Authenticate %q (X-Amzn-Remapped-WWW-Authenticate %q)",
			resp.StatusCode, resp.Header.Get("WWW-Authenticate"), resp.Header.Get("X-Amzn-Remapped-WWW-Authenticate"))
	}
	if params["scope"] != "issues:write" || params["resource_metadata"] != url+"/prod/.well-known/oauth-protected-resource/mcp" {
		t.Errorf("challenge parameters %v", params)
	}
}
