// Package e2e drives the built aacmcp binary the way a user does: `aacmcp serve --dev`
// in its own process, admin commands through the CLI, and every MCP call through the
// official TypeScript SDK client (client.mjs, run by Node.js). Afterwards the audit
// files are read back and must hold exactly one record per call the script made, with
// the outcome and reason it expected.
package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/audit/file"
	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/catalog"
	"github.com/aacworkflow/aacmcp/test/emulator"
	"github.com/aacworkflow/aacmcp/test/harness"
)

func TestMain(m *testing.M) { harness.Main(m) }

// runner runs one aacmcp admin command and returns its stdout; it fails the test
// when the command fails.
type runner func(args ...string) []byte

// cliRunner runs the binary with extra arguments (the backend) and environment.
// devOnDynalite is the world of the gateway tests: the built binary, the AWS
// environment and backend flags of a dynalite of the test's own, a data folder, and
// the CLI on them, with workspace demo and its admin dev.
func devOnDynalite(t *testing.T) (bin string, awsEnv, backend []string, data string, cli runner) {
	t.Helper()
	bin = harness.Binary(t)
	ddb := emulator.StartT(t, emulator.Dynalite)
	awsEnv = harness.AWSEnv()
	backend = []string{"--backend", "dynamodb", "--table", "main", "--tokens-table", "tokens", "--endpoint-url", ddb.Endpoint}
	data = t.TempDir()
	cli = cliRunner(t, bin, awsEnv, append(backend, "--data", data)...)
	cli("init")
	cli("workspace", "create", "--id", "demo", "--key", "AAC")
	cli("member", "add", "--workspace", "demo", "--user", "dev", "--role", "admin")
	return bin, awsEnv, backend, data, cli
}

func cliRunner(t *testing.T, bin string, env []string, extra ...string) runner {
	return func(args ...string) []byte {
		t.Helper()
		out, err := harness.CLI(bin, env, append(args, extra...)...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
}

// startServe starts the server on a port the kernel picks and reads the URL and the
// two dev tokens from its banner.
func startServe(t *testing.T, bin, data string) *harness.Server {
	t.Helper()
	s, err := harness.Serve(bin, data, "--dev")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Kill(30 * time.Second) })
	return s
}

// stop sends SIGTERM and requires a clean exit (graceful shutdown).
func stop(t *testing.T, s *harness.Server) {
	t.Helper()
	switch err := s.Terminate(20 * time.Second); {
	case errors.Is(err, harness.ErrTimeout):
		t.Errorf("serve did not stop within 20s of SIGTERM")
	case err != nil:
		t.Errorf("serve did not exit cleanly on SIGTERM: %v\nstderr: %s", err, s.Stderr())
	}
}

type createdToken struct {
	Token   string `json:"token"`
	TokenID string `json:"token_id"`
}

// principals creates, through the CLI, every user and token the script needs besides
// the dev tokens FULL and READONLY, adds their secrets to secrets, and returns
// label -> token id.
func principals(t *testing.T, cli runner, secrets map[string]string) (ids map[string]string) {
	t.Helper()
	ids = map[string]string{}
	all := strings.Join(auth.AllScopes, ",")
	token := func(label, ws, user, scopes string) {
		var tok createdToken
		out := cli("token", "create", "--workspace", ws, "--user", user, "--scopes", scopes,
			"--ttl", "1h", "--name", "e2e-"+label, "--json")
		if err := json.Unmarshal(out, &tok); err != nil || tok.Token == "" || tok.TokenID == "" {
			t.Fatalf("token create --json printed %s (%v)", out, err)
		}
		secrets[label], ids[label] = tok.Token, tok.TokenID
	}

	users := []struct{ label, user, role string }{
		{"VIEWER", "vic", "viewer"},
		{"MEMBER", "mel", "member"},
		{"ADMIN", "ada", "admin"},
		{"AUTHOR", "aut", "member"},
		{"REMOVED", "rem", "member"},
	}
	for _, u := range users {
		cli("member", "add", "--workspace", "demo", "--user", u.user, "--role", u.role)
		token(u.label, "demo", u.user, all)
	}
	cli("member", "remove", "--workspace", "demo", "--user", "rem")
	for _, s := range auth.AllScopes {
		token("scope:"+s, "demo", "dev", s)
	}
	token("REVOKED", "demo", "dev", all)
	cli("token", "revoke", ids["REVOKED"])

	cli("workspace", "create", "--id", "other", "--key", "OTH", "--name", "Other tenant")
	cli("member", "add", "--workspace", "other", "--user", "olga", "--role", "admin")
	cli("agent", "add", "--workspace", "other", "--id", "triage-bot")
	token("OTHER", "other", "olga", all)

	var list []auth.TokenRecord
	if err := json.Unmarshal(cli("token", "list", "--workspace", "demo", "--json"), &list); err != nil {
		t.Fatal(err)
	}
	for _, r := range list {
		if r.RevokedAt != nil {
			continue
		}
		switch r.Name {
		case "dev-full":
			ids["FULL"] = r.TokenID
		case "dev-read-only":
			ids["READONLY"] = r.TokenID
		}
	}
	if ids["FULL"] == "" || ids["READONLY"] == "" {
		t.Fatalf("token list does not show the active dev tokens: %+v", list)
	}
	return ids
}

// expectation is one audit record the script expects.
type expectation struct {
	Token   string `json:"token"`
	Tool    string `json:"tool"`
	Outcome string `json:"outcome"`
	Reason  string `json:"reason"`
	Replay  *bool  `json:"replay"`
}

// runScript runs a client script with Node.js and returns what it expects the audit
// log to hold.
func runScript(t *testing.T, script, mcpURL string, secrets map[string]string, env []string) []expectation {
	t.Helper()
	exp := runNode(t, script, mcpURL, secrets, env)
	if len(exp) < 100 {
		t.Fatalf("the script made only %d audited calls; it should make hundreds", len(exp))
	}
	return exp
}

// runNode runs a client script and returns the expectations it wrote; every check in
// it must pass.
func runNode(t *testing.T, script, mcpURL string, secrets map[string]string, env []string) []expectation {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not on PATH: the end-to-end tests need Node.js 20 or newer")
	}
	if _, err := emulator.NodeModules(); err != nil {
		t.Fatal(err)
	}
	root, err := emulator.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := json.Marshal(secrets)
	if err != nil {
		t.Fatal(err)
	}
	expectFile := filepath.Join(t.TempDir(), "expect.json")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Dir = filepath.Join(root, "test", "e2e")
	cmd.Env = append(harness.CleanEnv(),
		"AACMCP_URL="+mcpURL,
		"AACMCP_E2E_TOKENS="+string(tokens),
		"AACMCP_E2E_EXPECT="+expectFile,
	)
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	summary := regexp.MustCompile(`(?m)^(\d+) passed, (\d+) failed$`).FindSubmatch(out)
	if err != nil || summary == nil || string(summary[2]) != "0" {
		t.Fatalf("node %s: %v\n%s", script, err, out)
	}
	t.Logf("node %s: %s", script, summary[0])
	b, err := os.ReadFile(expectFile)
	if err != nil {
		t.Fatal(err)
	}
	var exp []expectation
	if err := json.Unmarshal(b, &exp); err != nil {
		t.Fatal(err)
	}
	return exp
}

// checkAudit requires exactly one record per expected call (matched on token, tool,
// outcome, reason and, where the script knew it, idempotent_replay), and checks the
// catalog-derived fields of every record.
func checkAudit(t *testing.T, exp []expectation, recs []audit.Record, ids map[string]string, workspaceOf map[string]string) {
	t.Helper()
	labelOf := map[string]string{}
	for label, id := range ids {
		labelOf[id] = label
	}
	type key struct{ token, tool, outcome, reason, replay string }
	replayStr := func(b *bool) string {
		if b == nil {
			return "*"
		}
		return fmt.Sprint(*b)
	}
	want := map[key]int{}
	for _, e := range exp {
		want[key{e.Token, e.Tool, e.Outcome, e.Reason, replayStr(e.Replay)}]++
	}
	// Expectations that know the replay flag must match it; the others match any.
	knowsReplay := map[key]bool{}
	for k := range want {
		if k.replay != "*" {
			knowsReplay[key{k.token, k.tool, k.outcome, k.reason, ""}] = true
		}
	}
	got := map[key]int{}
	cat := catalog.New(catalog.Deps{})
	for _, r := range recs {
		label, ok := labelOf[r.TokenID]
		if !ok {
			t.Errorf("record of an unknown token %q: %+v", r.TokenID, r)
			continue
		}
		k := key{label, r.Tool, r.Outcome, r.Reason, "*"}
		if knowsReplay[key{label, r.Tool, r.Outcome, r.Reason, ""}] {
			k.replay = fmt.Sprint(r.IdempotentReplay)
		}
		got[k]++

		if r.Transport != audit.TransportMCP {
			t.Errorf("transport %q, want mcp: %+v", r.Transport, r)
		}
		if r.Reason == "invalid_token" {
			continue // refused before any workspace or tool was trusted
		}
		if ws := workspaceOf[label]; r.WorkspaceID != ws || r.UserID == "" {
			t.Errorf("record of %s: workspace %q user %q, want workspace %q", label, r.WorkspaceID, r.UserID, ws)
		}
		tool, known := cat.Lookup(r.Tool)
		if !known {
			if r.Reason != "unknown_tool" {
				t.Errorf("record for unknown tool %q with reason %q", r.Tool, r.Reason)
			}
			continue
		}
		if len(r.ArgsHMAC) != 64 {
			t.Errorf("args_hmac %q is not an HMAC-SHA256: %+v", r.ArgsHMAC, r)
		}
		if !slices.Equal(r.ScopesRequired, tool.Scopes) || r.ReadOnly != tool.Annotations.ReadOnly || r.Destructive != tool.Annotations.Destructive {
			t.Errorf("record disagrees with the catalog entry of %s: %+v", r.Tool, r)
		}
		if r.Outcome == "success" && r.Destructive && !r.ConfirmPresent {
			t.Errorf("a destructive call succeeded without confirm_present: %+v", r)
		}
	}

	var diffs []string
	for k, n := range want {
		if got[k] != n {
			diffs = append(diffs, fmt.Sprintf("%-10s %-22s %-8s %-25s replay=%-5s expected %3d, recorded %3d", k.token, k.tool, k.outcome, k.reason, k.replay, n, got[k]))
		}
	}
	for k, n := range got {
		if _, ok := want[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%-10s %-22s %-8s %-25s replay=%-5s expected   0, recorded %3d", k.token, k.tool, k.outcome, k.reason, k.replay, n))
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 0 {
		t.Errorf("audit records differ from the calls made (%d expected, %d recorded):\n%s", len(exp), len(recs), strings.Join(diffs, "\n"))
	}
}

// TestSDKClientAgainstServe is issue 2 item 11: the official TypeScript SDK client
// against `aacmcp serve --dev`, then the audit files.
func TestSDKClientAgainstServe(t *testing.T) {
	bin := harness.Binary(t)
	data := t.TempDir()
	srv := startServe(t, bin, data)
	secrets := map[string]string{"FULL": srv.Full, "READONLY": srv.ReadOnly}
	ids := principals(t, cliRunner(t, bin, nil, "--data", data), secrets)

	exp := runScript(t, "client.mjs", srv.MCPURL, secrets, nil)
	stop(t, srv)

	recs, bad, err := file.ReadAll(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Errorf("damaged audit line: %v", b)
	}
	checkAudit(t, exp, recs, ids, workspaces(ids))
	t.Logf("%d calls made, %d audit records checked", len(exp), len(recs))
}

// workspaces maps every token label to its workspace.
func workspaces(ids map[string]string) map[string]string {
	ws := map[string]string{}
	for label := range ids {
		ws[label] = "demo"
	}
	ws["OTHER"] = "other"
	return ws
}
