package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/aacworkflow/aacmcp/shared/auth"
)

// TestRefusedTokenChallengeThroughGateway is issue 13 item 2 for the 401: through
// `aacmcp gateway --stage prod` (the real authorizer in process, the stack's gateway
// responses), a request without a token gets the bare challenge (RFC 6750 section
// 3.1: no error code), and one with a token the authorizer looked at and refused
// (revoked, unknown, malformed, another scheme) gets error="invalid_token" as well,
// both times: the second answer comes from the authorizer cache. The challenge is
// the gateway's own response, so no front door is needed for it.
func TestRefusedTokenChallengeThroughGateway(t *testing.T) {
	bin, awsEnv, backend, data, cli := devOnDynalite(t)
	mint := func(name string) createdToken {
		var tok createdToken
		if err := json.Unmarshal(cli("token", "create", "--workspace", "demo", "--user", "dev", "--scopes", "issues:read", "--name", name, "--json"), &tok); err != nil {
			t.Fatal(err)
		}
		return tok
	}
	valid, revoked := mint("valid"), mint("revoked")
	cli("token", "revoke", revoked.TokenID)
	unknown, _, err := auth.Mint()
	if err != nil {
		t.Fatal(err)
	}

	mcpURL := startGateway(t, bin, awsEnv, append(backend, "--data", data, "--stage", "prod")...)
	base := strings.TrimSuffix(mcpURL, "/mcp")
	bare := `Bearer resource_metadata="` + base + `/.well-known/oauth-protected-resource/mcp"`
	refused := bare + `, error="invalid_token"`

	post := func(t *testing.T, authorization string) (int, string) {
		t.Helper()
		return postToolsList(t, mcpURL, authorization)
	}

	for _, tt := range []struct {
		name, authorization, want string
	}{
		{"no token", "", bare},
		{"revoked token", "Bearer " + revoked.Token, refused},
		{"unknown token", "Bearer " + unknown, refused},
		{"malformed token", "Bearer nope", refused},
		{"another scheme", "Basic ZGV2OnB3", refused},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for i := range 2 {
				status, challenge := post(t, tt.authorization)
				if status != http.StatusUnauthorized || challenge != tt.want {
					t.Errorf("request %d: %d %q, want 401 %q", i+1, status, challenge, tt.want)
				}
			}
		})
	}
	// A valid token is never caught by the refusals above.
	if status, challenge := post(t, "Bearer "+valid.Token); status != http.StatusOK || challenge != "" {
		t.Errorf("valid token: %d %q, want 200 and no challenge", status, challenge)
	}
}
