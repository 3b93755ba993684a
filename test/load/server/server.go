// Package server runs the built aacmcp binary for the reliability and security
// tests: it builds cmd/aacmcp once per test binary, seeds a data folder directly
// through the SQLite store (several workspaces, roles, agents and tokens), starts
// `aacmcp serve` on a loopback port the kernel picks, and stops it either politely
// (SIGTERM) or the hard way (SIGKILL, for crash tests). Everything the process wrote
// on stdout and stderr is kept, so that tests can grep it.
package server

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
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

var (
	buildMu  sync.Mutex
	binPath  string
	binDir   string
	buildErr error
)

// Main runs the package's tests and removes the built binary afterwards. Call it
// from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	buildMu.Lock()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	buildMu.Unlock()
	os.Exit(code)
}

// Binary builds cmd/aacmcp (once per test binary) and returns its path.
func Binary(t testing.TB) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	if binPath == "" && buildErr == nil {
		buildErr = build()
	}
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func build() error {
	root, err := emulator.RepoRoot()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "aacmcp-load-bin-")
	if err != nil {
		return err
	}
	out := filepath.Join(dir, "aacmcp")
	args := []string{"build", "-o", out}
	if raceEnabled {
		// A race in the server would otherwise go unseen: only this test process
		// would be instrumented.
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, "./cmd/aacmcp")...)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		_ = os.RemoveAll(dir)
		return fmt.Errorf("go build ./cmd/aacmcp: %v\n%s", err, b)
	}
	binDir, binPath = dir, out
	return nil
}

// Proc is a running `aacmcp serve`.
type Proc struct {
	// Base is the server's base URL, such as http://127.0.0.1:40123.
	Base string

	cmd    *exec.Cmd
	stdout *syncBuffer
	stderr *syncBuffer
	exited chan struct{}
	err    error // the process's exit status, valid once exited is closed
}

var servingLine = regexp.MustCompile(`^aacmcp serving (http://127\.0\.0\.1:\d+)/mcp$`)

// Start runs `aacmcp serve --addr 127.0.0.1:0 --data dataDir extra...` and returns
// once /healthz answers. The process is killed at the end of the test if it is still
// running.
func Start(t testing.TB, dataDir string, extra ...string) *Proc {
	t.Helper()
	bin := Binary(t)
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--data", dataDir}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Env = cleanEnv()
	p := &Proc{cmd: cmd, stdout: &syncBuffer{}, stderr: &syncBuffer{}, exited: make(chan struct{})}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start aacmcp serve: %v", err)
	}
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			p.stdout.Write([]byte(line + "\n"))
			if m := servingLine.FindStringSubmatch(line); m != nil && !sent {
				urls <- m[1]
				sent = true
			}
		}
		_, _ = io.Copy(p.stdout, out)
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() { p.Kill(t) })

	select {
	case p.Base = <-urls:
	case <-p.exited:
		t.Fatalf("aacmcp serve exited before serving: %v\nstdout:\n%s\nstderr:\n%s", p.err, p.stdout, p.stderr)
	case <-time.After(60 * time.Second):
		p.Kill(t)
		t.Fatalf("aacmcp serve did not print its URL within 60s\nstdout:\n%s\nstderr:\n%s", p.stdout, p.stderr)
	}
	if err := waitHealthy(p.Base); err != nil {
		t.Fatalf("aacmcp serve is not healthy: %v\nstderr:\n%s", err, p.stderr)
	}
	return p
}

func waitHealthy(base string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/healthz", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Kill sends SIGKILL (no chance to flush or close anything) and waits for the
// process to be gone. It is a no-op on a process that has exited.
func (p *Proc) Kill(t testing.TB) {
	t.Helper()
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		t.Errorf("aacmcp serve (pid %d) did not die after SIGKILL", p.cmd.Process.Pid)
	}
	p.checkRaces(t)
}

// checkRaces fails the test when the race detector reported in the server.
func (p *Proc) checkRaces(t testing.TB) {
	t.Helper()
	if s := p.stderr.String(); strings.Contains(s, "WARNING: DATA RACE") {
		t.Errorf("the race detector reported in aacmcp serve:\n%s", tail(s[strings.Index(s, "WARNING: DATA RACE"):], 8000))
	}
}

// Stop sends SIGTERM and waits for a clean exit (status 0).
func (p *Proc) Stop(t testing.TB) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(60 * time.Second):
		p.Kill(t)
		t.Fatalf("aacmcp serve did not stop within 60s of SIGTERM")
	}
	p.checkRaces(t)
	if p.err != nil {
		t.Fatalf("aacmcp serve exited with %v\nstderr (tail):\n%s", p.err, tail(p.stderr.String(), 4000))
	}
}

// Stdout and Stderr return what the process has written so far.
func (p *Proc) Stdout() string { return p.stdout.String() }
func (p *Proc) Stderr() string { return p.stderr.String() }

// Exited reports whether the process has ended.
func (p *Proc) Exited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// ExitErr is the process's exit status; only meaningful once Exited is true.
func (p *Proc) ExitErr() error {
	if !p.Exited() {
		return errors.New("still running")
	}
	return p.err
}

// cleanEnv is the test's environment without AACMCP_* variables, which would change
// the server's defaults behind the test's back.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AACMCP_") && !strings.HasPrefix(kv, "LOG_LEVEL=") {
			env = append(env, kv)
		}
	}
	return env
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
