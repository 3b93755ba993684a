package e2e

import (
	"encoding/json"
	"testing"

	"github.com/aacworkflow/aacmcp/test/emulator"
	"github.com/aacworkflow/aacmcp/test/harness"
)

// TestDiscoveryThroughStagedGateway is issue 13 items 1 to 3 with a real client:
// `aacmcp gateway --stage prod` with the authorizer, MCP and authorization server
// functions in process, and the MCP TypeScript SDK's own discovery and challenge
// parsing. On the stage URL the SDK finds the resource metadata (from the 401
// challenge) and the authorization server metadata (its OpenID-style fallback under
// the stage). The 403 step-up challenge is readable through the front door, and,
// as in production, not on the bare API Gateway URL.
func TestDiscoveryThroughStagedGateway(t *testing.T) {
	bin := harness.Binary(t)
	ddb := emulator.StartT(t, emulator.Dynalite)
	awsEnv := harness.AWSEnv()
	backend := []string{"--backend", "dynamodb", "--table", "main", "--tokens-table", "tokens", "--endpoint-url", ddb.Endpoint}
	data := t.TempDir()
	cli := cliRunner(t, bin, awsEnv, append(backend, "--data", data)...)
	cli("init")
	cli("workspace", "create", "--id", "demo", "--key", "AAC")
	cli("member", "add", "--workspace", "demo", "--user", "dev", "--role", "admin")
	var tok createdToken
	if err := json.Unmarshal(cli("token", "create", "--workspace", "demo", "--user", "dev", "--scopes", "issues:read", "--name", "viewer", "--json"), &tok); err != nil {
		t.Fatal(err)
	}
	secrets := map[string]string{"VIEWER": tok.Token}

	for _, tt := range []struct {
		name      string
		frontDoor bool
	}{
		{"front door", true},
		{"bare API Gateway", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{}, backend...)
			args = append(args, "--data", data, "--stage", "prod", "--dev")
			stepUp := "0"
			if tt.frontDoor {
				args, stepUp = append(args, "--front-door"), "1"
			}
			mcpURL := startGateway(t, bin, awsEnv, args...)
			runScript(t, "discovery.mjs", mcpURL, secrets, []string{"AACMCP_E2E_STEP_UP=" + stepUp})
		})
	}
}
