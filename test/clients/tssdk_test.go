package clients_test

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/test/clients/harness"
)

// catalogJSON is the catalog as tssdk.mjs expects it in AACMCP_TOOLS.
func catalogJSON(t *testing.T) string {
	t.Helper()
	type annotations struct {
		ReadOnly    bool `json:"readOnlyHint"`
		Destructive bool `json:"destructiveHint"`
		Idempotent  bool `json:"idempotentHint"`
		OpenWorld   bool `json:"openWorldHint"`
	}
	type tool struct {
		Name        string      `json:"name"`
		Annotations annotations `json:"annotations"`
		Scopes      []string    `json:"scopes"`
	}
	var out []tool
	for _, c := range catalogTools() {
		out = append(out, tool{c.Name, annotations{c.Annotations.ReadOnly, c.Annotations.Destructive, c.Annotations.Idempotent, c.Annotations.OpenWorld}, c.Scopes})
	}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var nodeSummary = regexp.MustCompile(`(?m)^(\d+) passed, (\d+) failed$`)

// TestTypeScriptSDKClient runs tssdk.mjs (the official TypeScript SDK client: the
// scenario, the 403 challenge, and the SDK's scope step-up) against every target.
func TestTypeScriptSDKClient(t *testing.T) {
	node := harness.Node(t)
	harness.TestDir(t)
	tools := catalogJSON(t)
	for _, tg := range targets(t) {
		t.Run(tg.name, func(t *testing.T) {
			env := append(harness.CleanEnv(),
				"AACMCP_URL="+tg.mcpURL,
				"AACMCP_TOKEN="+tg.full,
				"AACMCP_READ_TOKEN="+tg.scoped(t, "issues:read"),
				"AACMCP_STEPUP_TOKEN="+tg.scoped(t, "issues:read", "issues:write"),
				"AACMCP_TOOLS="+tools,
			)
			dir := filepath.Join(harness.TestDir(t), "clients")
			out, err := harness.Run(t, dir, env, 2*time.Minute, node, "tssdk.mjs")
			m := nodeSummary.FindSubmatch(out)
			if err != nil || m == nil || string(m[2]) != "0" {
				t.Fatalf("node tssdk.mjs: %v\n%s", err, out)
			}
			if string(m[1]) != "3" {
				t.Fatalf("tssdk.mjs ran %s tests, want 3:\n%s", m[1], out)
			}
			t.Logf("%s", out)
		})
	}
}
