// Package e2e drives the built aacmcp binary the way a user does: `aacmcp serve --dev`
// in its own process, admin commands through the CLI, and every MCP call through the
// official TypeScript SDK client (client.mjs, run by Node.js). Afterwards the audit
// files are read back and must hold exactly one record per call the script made, with
// the outcome and reason it expected.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/audit/file"
	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/catalog"
	"github.com/aacworkflow/aacmcp/test/emulator"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
	binDir    string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// aacmcpBinary builds cmd/aacmcp once per test binary.
func aacmcpBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		root, err := emulator.RepoRoot()
		if err != nil {
			buildErr = err
			return
		}
		binDir, err = os.MkdirTemp("", "aacmcp-e2e-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(binDir, "aacmcp")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/aacmcp")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/aacmcp: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// runner runs one aacmcp admin command and returns its stdout; it fails the test
// when the command fails.
type runner func(args ...string) []byte

// cliRunner runs the binary with extra arguments (the backend) and environment.
func cliRunner(t *testing.T, bin string, env []string, extra ...string) runner {
	return func(args ...string) []byte {
		t.Helper()
		cmd := exec.Command(bin, append(args, extra...)...)
		cmd.Env = append(cleanEnv(), env...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("aacmcp %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out, stderr.String())
		}
		return out
	}
}

// cleanEnv is the test's environment without AACMCP_* variables, which would change
// the commands' defaults.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AACMCP_") {
			env = append(env, kv)
		}
	}
	return env
}

// devServer is a running `aacmcp serve --dev`.
type devServer struct {
	cmd      *exec.Cmd
	mcpURL   string
	full     string
	readOnly string
	stderr   *lockedBuffer
	exited   chan error
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var (
	servingLine = regexp.MustCompile(`^aacmcp serving (http://127\.0\.0\.1:\d+/mcp)$`)
	tokenLine   = regexp.MustCompile(`^  (full-scope|read-only) token: +(aac_[0-9A-Za-z]+)$`)
)

// startServe starts the server on a port the kernel picks and reads the URL and the
// two dev tokens from its banner.
func startServe(t *testing.T, bin, data string) *devServer {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--dev", "--addr", "127.0.0.1:0", "--data", data)
	cmd.Env = cleanEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	s := &devServer{cmd: cmd, stderr: &lockedBuffer{}, exited: make(chan error, 1)}
	cmd.Stderr = s.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-s.exited
		}
	})

	banner := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		done := false
		for sc.Scan() {
			line := sc.Text()
			if m := servingLine.FindStringSubmatch(line); m != nil {
				s.mcpURL = m[1]
			}
			if m := tokenLine.FindStringSubmatch(line); m != nil {
				if m[1] == "full-scope" {
					s.full = m[2]
				} else {
					s.readOnly = m[2]
				}
			}
			if !done && s.mcpURL != "" && s.full != "" && s.readOnly != "" {
				done = true
				close(banner)
			}
		}
		if !done {
			close(banner)
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case <-banner:
	case <-time.After(60 * time.Second):
		t.Fatalf("no banner within 60s\nstderr: %s", s.stderr)
	}
	if s.mcpURL == "" || s.full == "" || s.readOnly == "" {
		t.Fatalf("the banner lacks the URL or a token\nstderr: %s", s.stderr)
	}
	return s
}

// stop sends SIGTERM and requires a clean exit (graceful shutdown).
func (s *devServer) stop(t *testing.T) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-s.exited:
		if err != nil {
			t.Errorf("serve did not exit cleanly on SIGTERM: %v\nstderr: %s", err, s.stderr)
		}
	case <-time.After(20 * time.Second):
		t.Errorf("serve did not stop within 20s of SIGTERM")
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
	cmd.Env = append(cleanEnv(),
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
	if len(exp) < 100 {
		t.Fatalf("the script made only %d audited calls; it should make hundreds", len(exp))
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
		if len(r.ArgsSHA256) != 64 {
			t.Errorf("args_sha256 %q is not a SHA-256: %+v", r.ArgsSHA256, r)
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
	bin := aacmcpBinary(t)
	data := t.TempDir()
	srv := startServe(t, bin, data)
	secrets := map[string]string{"FULL": srv.full, "READONLY": srv.readOnly}
	ids := principals(t, cliRunner(t, bin, nil, "--data", data), secrets)

	exp := runScript(t, "client.mjs", srv.mcpURL, secrets, nil)
	srv.stop(t)

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
