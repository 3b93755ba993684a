package e2e

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestDiscoveryThroughStagedGateway is issue 13 items 1 to 3 with a real client:
// `aacmcp gateway` with the authorizer, MCP and authorization server functions in
// process, and the MCP TypeScript SDK's own discovery and challenge parsing.
//   - On the stage URL (`--stage prod`, the default execute-api URL) the SDK finds
//     the resource metadata from the 401 challenge but not the authorization server
//     metadata: that is what `cdk deploy` says in its OAuthDiscovery output. The
//     403 step-up challenge arrives remapped, so the SDK cannot read it.
//   - Through the CloudFront distribution in front of that stage (`--stage prod
//     --front-door`: origin path /prod, so the stage is the root of the
//     distribution's URL) it finds both, and reads the 403 challenge.
//   - At the root of a custom domain, behind the same front door, likewise.
func TestDiscoveryThroughStagedGateway(t *testing.T) {
	bin, awsEnv, backend, data, cli := devOnDynalite(t)
	var tok createdToken
	if err := json.Unmarshal(cli("token", "create", "--workspace", "demo", "--user", "dev", "--scopes", "issues:read", "--name", "viewer", "--json"), &tok); err != nil {
		t.Fatal(err)
	}
	secrets := map[string]string{"VIEWER": tok.Token}

	for _, tt := range []struct {
		name              string
		stage, frontDoor  bool
		wantStagedURL     bool // the client's URL has the stage in its path
		wantReadableChall bool
	}{
		{"stage URL, bare API Gateway", true, false, true, false},
		{"distribution in front of the stage", true, true, false, true},
		{"custom domain, front door", false, true, false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{}, backend...)
			args = append(args, "--data", data, "--dev")
			env := []string{"AACMCP_E2E_STEP_UP=0", "AACMCP_E2E_STAGED=0"}
			if tt.frontDoor {
				args = append(args, "--front-door")
			}
			if tt.stage {
				args = append(args, "--stage", "prod")
			}
			if tt.wantReadableChall {
				env[0] = "AACMCP_E2E_STEP_UP=1"
			}
			if tt.wantStagedURL {
				env[1] = "AACMCP_E2E_STAGED=1"
			}
			mcpURL := startGateway(t, bin, awsEnv, args...)
			if staged := strings.HasSuffix(mcpURL, "/prod/mcp"); staged != tt.wantStagedURL {
				t.Fatalf("the gateway serves %s; stage in the path: %v, want %v", mcpURL, staged, tt.wantStagedURL)
			}
			runNode(t, "discovery.mjs", mcpURL, secrets, env)
		})
	}
}
