package e2e

import (
	"encoding/json"
	"testing"
)

// TestDiscoveryThroughStagedGateway is issue 13 items 1 to 3 with a real client:
// `aacmcp gateway` with the authorizer, MCP and authorization server functions in
// process, and the MCP TypeScript SDK's own discovery and challenge parsing.
//   - On the stage URL (`--stage prod`, the default execute-api URL) the SDK finds
//     the resource metadata from the 401 challenge but not the authorization server
//     metadata: that is what `cdk deploy` says in its OAuthDiscovery output.
//   - At the root (a custom domain) it finds both.
//   - The 403 step-up challenge is readable through the front door and, as in
//     production, not on the bare API Gateway URL.
func TestDiscoveryThroughStagedGateway(t *testing.T) {
	bin, awsEnv, backend, data, cli := devOnDynalite(t)
	var tok createdToken
	if err := json.Unmarshal(cli("token", "create", "--workspace", "demo", "--user", "dev", "--scopes", "issues:read", "--name", "viewer", "--json"), &tok); err != nil {
		t.Fatal(err)
	}
	secrets := map[string]string{"VIEWER": tok.Token}

	for _, tt := range []struct {
		name              string
		staged, frontDoor bool
	}{
		{"stage URL, front door", true, true},
		{"stage URL, bare API Gateway", true, false},
		{"custom domain, front door", false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{}, backend...)
			args = append(args, "--data", data, "--dev")
			env := []string{"AACMCP_E2E_STEP_UP=0", "AACMCP_E2E_STAGED=0"}
			if tt.frontDoor {
				args, env[0] = append(args, "--front-door"), "AACMCP_E2E_STEP_UP=1"
			}
			if tt.staged {
				args, env[1] = append(args, "--stage", "prod"), "AACMCP_E2E_STAGED=1"
			}
			mcpURL := startGateway(t, bin, awsEnv, args...)
			runNode(t, "discovery.mjs", mcpURL, secrets, env)
		})
	}
}
