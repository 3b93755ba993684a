package clients_test

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/test/clients/harness"
	base "github.com/aacworkflow/aacmcp/test/harness"
)

// TestTypeScriptSDKv2Approval runs tssdk_approve.mjs: the workspace policy
// approve against `aacmcp serve --dev`, with the official TypeScript SDK v2
// client (URL elicitation, and none), REST, and a person in headless Chromium
// on the approval page. Last, the audit log must end every issue the script
// names in the outcome it names.
func TestTypeScriptSDKv2Approval(t *testing.T) {
	node := harness.Node(t)
	dir := filepath.Join(harness.TestDir(t), "clients")
	bin := harness.Binary(t)
	data := t.TempDir()

	s := startConfirmServe(t, bin, data, nil, "--dev")
	s.cli(t, "workspace", "set", "--workspace", harness.DevWorkspace, "--destructive-confirmation", "approve")
	s.cli(t, "member", "add", "--workspace", harness.DevWorkspace, "--user", "eve", "--role", "admin")
	env := append(harness.CleanEnv(),
		"AACMCP_URL="+s.mcpURL,
		"AACMCP_TOKEN="+s.token(t, harness.DevUser, "approve-dev"),
		"AACMCP_OTHER_USER=eve",
	)
	if dir := os.Getenv("AACMCP_SCREENSHOTS"); dir != "" {
		// make screenshots: the pages the person sees, saved for the docs.
		env = append(env, "AACMCP_SCREENSHOTS="+dir)
	}
	out, err := harness.Run(t, dir, env, 3*time.Minute, node, "tssdk_approve.mjs")
	m := nodeSummary.FindSubmatch(out)
	if err != nil || m == nil || string(m[2]) != "0" {
		t.Fatalf("node tssdk_approve.mjs: %v\n%s\nserver log:\n%s", err, out, base.Tail(s.proc.Stderr(), 40))
	}
	if string(m[1]) != strconv.Itoa(8) {
		t.Fatalf("ran %s tests, want 8:\n%s", m[1], out)
	}
	t.Logf("%s", out)
	want := map[string]string{}
	for _, a := range auditLine.FindAllSubmatch(out, -1) {
		want[string(a[2])] = string(a[1])
	}
	if err := s.proc.Terminate(15 * time.Second); err != nil {
		t.Fatal(err)
	}
	if len(want) < 7 {
		t.Fatalf("the script named %d issues for the audit check: %v", len(want), want)
	}
	checkLastDeletes(t, s, want)
}
