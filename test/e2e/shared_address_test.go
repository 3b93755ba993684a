package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/test/harness"
)

// sharedAddressCalls makes 25 calls with distinct bad tokens from one address,
// as the people of one organisation behind a hosted client whose tokens expired
// would, then one with a good token: each bad one is its own 401 invalid_token
// (its client signs in again), never a refusal for volume, and the good one is
// answered.
func sharedAddressCalls(t *testing.T, mcpURL, good string) {
	t.Helper()
	post := func(authorization string) (int, string) { t.Helper(); return postToolsList(t, mcpURL, authorization) }
	for i := range 25 {
		bad, _, err := auth.Mint()
		if err != nil {
			t.Fatal(err)
		}
		if status, challenge := post("Bearer " + bad); status != http.StatusUnauthorized || !strings.Contains(challenge, `error="invalid_token"`) {
			t.Fatalf("bad token %d: %d %q, want 401 invalid_token", i+1, status, challenge)
		}
	}
	if status, _ := post("Bearer " + good); status != http.StatusOK {
		t.Errorf("good token after 25 bad ones from its address: %d, want 200", status)
	}
}

// postToolsList posts tools/list with an Authorization header ("" for none) and
// returns the status and the challenge.
func postToolsList(t *testing.T, mcpURL, authorization string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, mcpURL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate")
}

// TestSharedAddressThroughFrontDoor: through `aacmcp gateway --front-door` (the real
// authorizer with the stack's default failed-attempt limit, 20/m, and the
// distribution's web ACL at the stack's limits).
func TestSharedAddressThroughFrontDoor(t *testing.T) {
	bin, awsEnv, backend, data, cli := devOnDynalite(t)
	var tok createdToken
	if err := json.Unmarshal(cli("token", "create", "--workspace", "demo", "--user", "dev", "--scopes", "issues:read", "--name", "good", "--json"), &tok); err != nil {
		t.Fatal(err)
	}
	mcpURL := startGateway(t, bin, awsEnv, append(backend, "--data", data, "--front-door")...)
	sharedAddressCalls(t, mcpURL, tok.Token)
}

// TestSharedAddressOnServe: the same on `aacmcp serve`.
func TestSharedAddressOnServe(t *testing.T) {
	s := startServe(t, harness.Binary(t), t.TempDir())
	sharedAddressCalls(t, s.MCPURL, s.Full)
}
