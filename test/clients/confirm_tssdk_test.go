package clients_test

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/confirm"
	"github.com/aacworkflow/aacmcp/test/clients/harness"
	base "github.com/aacworkflow/aacmcp/test/harness"
)

var (
	serveURLLine = regexp.MustCompile(`^aacmcp serving (http://127\.0\.0\.1:\d+)/mcp$`)
	auditLine    = regexp.MustCompile(`(?m)^AUDIT (\S+) (\S+)$`)
)

// confirmServer is an `aacmcp serve` of this test's own: the workspace policy and
// the restart with a moved confirmation clock must not reach the package's shared
// server.
type confirmServer struct {
	bin, data string
	proc      *base.Proc
	mcpURL    string
}

func startConfirmServe(t *testing.T, bin, data string, env []string, extra ...string) *confirmServer {
	t.Helper()
	s := &confirmServer{bin: bin, data: data}
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--data", data}, extra...)
	p, err := base.StartProc(bin, env, args, func(line string) bool {
		if m := serveURLLine.FindStringSubmatch(line); m != nil {
			s.mcpURL = m[1] + "/mcp"
		}
		// --dev seeds the workspace before it prints the URL.
		return s.mcpURL != ""
	}, 60*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	s.proc = p
	t.Cleanup(func() { _ = p.Terminate(15 * time.Second) })
	return s
}

func (s *confirmServer) cli(t *testing.T, args ...string) []byte {
	t.Helper()
	out, err := base.CLI(s.bin, nil, append(args, "--data", s.data)...)
	if err != nil {
		t.Fatalf("aacmcp %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func (s *confirmServer) token(t *testing.T, user, name string) string {
	t.Helper()
	out := s.cli(t, "token", "create", "--workspace", harness.DevWorkspace, "--user", user,
		"--scopes", "issues:read,issues:write", "--ttl", "1h", "--name", name, "--json")
	var tok struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal(out, &tok); err != nil || tok.Token == "" {
		t.Fatalf("token create printed %s (%v)", out, err)
	}
	return tok.Token
}

// TestTypeScriptSDKv2Confirmation runs tssdk_confirm.mjs: the official TypeScript
// SDK v2 client at 2026-07-28 confirming deletes through MRTR against `aacmcp
// serve` with the workspace on elicit, then on require, then, after a restart
// whose confirmation clock runs past the lifetime, the expired case. Last, the
// audit log must end every issue the script names in the outcome it names.
func TestTypeScriptSDKv2Confirmation(t *testing.T) {
	node := harness.Node(t)
	dir := filepath.Join(harness.TestDir(t), "clients")
	bin := harness.Binary(t)
	data := t.TempDir()

	s := startConfirmServe(t, bin, data, nil, "--dev")
	s.cli(t, "workspace", "set", "--workspace", harness.DevWorkspace, "--destructive-confirmation", "elicit")
	s.cli(t, "member", "add", "--workspace", harness.DevWorkspace, "--user", "eve", "--role", "admin")
	env := append(harness.CleanEnv(),
		"AACMCP_TOKEN="+s.token(t, harness.DevUser, "confirm-dev"),
		"AACMCP_TOKEN2="+s.token(t, harness.DevUser, "confirm-dev-2"),
		"AACMCP_OTHER_TOKEN="+s.token(t, "eve", "confirm-eve"),
		"AACMCP_STATE_FILE="+filepath.Join(t.TempDir(), "state.json"),
	)
	wantAudit := map[string]string{} // issue id -> outcome the last delete_issue record has
	run := func(phase string, want int) {
		t.Helper()
		out, err := harness.Run(t, dir, append(env, "AACMCP_URL="+s.mcpURL, "AACMCP_PHASE="+phase), 2*time.Minute, node, "tssdk_confirm.mjs")
		m := nodeSummary.FindSubmatch(out)
		if err != nil || m == nil || string(m[2]) != "0" {
			t.Fatalf("node tssdk_confirm.mjs (%s): %v\n%s\nserver log:\n%s", phase, err, out, base.Tail(s.proc.Stderr(), 40))
		}
		if string(m[1]) != strconv.Itoa(want) {
			t.Fatalf("phase %s ran %s tests, want %d:\n%s", phase, m[1], want, out)
		}
		for _, a := range auditLine.FindAllSubmatch(out, -1) {
			wantAudit[string(a[2])] = string(a[1])
		}
		t.Logf("%s:\n%s", phase, out)
	}

	run("elicit", 9)
	s.cli(t, "workspace", "set", "--workspace", harness.DevWorkspace, "--destructive-confirmation", "require")
	run("require", 3)

	// Restart as if more than a lifetime had passed since the state was sealed.
	if err := s.proc.Terminate(15 * time.Second); err != nil {
		t.Fatal(err)
	}
	s = startConfirmServe(t, bin, data, []string{confirm.EnvTestClockOffset + "=" + (confirm.Lifetime + time.Minute).String()})
	run("expired", 1)
	if err := s.proc.Terminate(15 * time.Second); err != nil {
		t.Fatal(err)
	}

	if len(wantAudit) < 8 {
		t.Fatalf("the script named %d issues for the audit check: %v", len(wantAudit), wantAudit)
	}
	checkLastDeletes(t, s, wantAudit)
}

// checkLastDeletes fails unless each issue's latest delete_issue record has the
// outcome want names for it: "success", or the reason of a denial.
func checkLastDeletes(t *testing.T, s *confirmServer, want map[string]string) {
	t.Helper()
	last := lastDeleteRecords(t, s)
	for id, w := range want {
		got, ok := last[id]
		switch {
		case !ok:
			t.Errorf("issue %s: no delete_issue audit record", id)
		case w == "success" && got.Outcome != "success":
			t.Errorf("issue %s: last delete_issue record %+v, want success", id, got)
		case w != "success" && (got.Outcome != "denied" || got.Reason != w):
			t.Errorf("issue %s: last delete_issue record %+v, want denied %s", id, got, w)
		}
	}
}

type auditOutcome struct {
	Outcome, Reason string
}

// lastDeleteRecords returns, per resource, the latest delete_issue record of the
// audit log, read with `aacmcp audit query` (the JSON lines and the Parquet files
// a restart compacts them into).
func lastDeleteRecords(t *testing.T, s *confirmServer) map[string]auditOutcome {
	t.Helper()
	out := s.cli(t, "audit", "query", "--json", "--sql",
		"SELECT resource_id, outcome, reason FROM audit_log WHERE tool = 'delete_issue' ORDER BY timestamp, event_id")
	var rows []struct {
		ResourceID string `json:"resource_id"`
		Outcome    string `json:"outcome"`
		Reason     string `json:"reason"`
	}
	if err := json.Unmarshal(out, &rows); err != nil {
		t.Fatalf("audit query printed %s: %v", out, err)
	}
	last := map[string]auditOutcome{}
	for _, r := range rows {
		last[r.ResourceID] = auditOutcome{r.Outcome, r.Reason}
	}
	return last
}
