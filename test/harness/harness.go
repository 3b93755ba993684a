// Package harness is the process plumbing the test packages that drive the built
// aacmcp binary share (test/e2e, test/clients, test/load): it builds cmd/aacmcp once
// per test binary, runs admin commands, starts `aacmcp serve` and `aacmcp gateway` on
// a loopback port the kernel picks and reads their banners, and stops them politely
// (SIGTERM) or the hard way (SIGKILL). What a test asserts stays in the test.
package harness

import (
	"bufio"
	"bytes"
	"context"
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

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/aacworkflow/aacmcp/test/emulator"
)

var (
	mu       sync.Mutex
	cleanups []func()
	builds   = map[bool]*build{}
)

type build struct {
	once sync.Once
	path string
	err  error
}

// Main runs the tests of a package and then runs, last registered first, every
// function given to AtExit (stopping processes, removing the built binary). Call it
// from TestMain.
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

// AtExit registers f to run once every test of the package has run (see Main).
func AtExit(f func()) {
	mu.Lock()
	defer mu.Unlock()
	cleanups = append(cleanups, f)
}

// Binary builds ./cmd/aacmcp once per test binary and returns its path.
func Binary(t testing.TB) string {
	t.Helper()
	return binary(t, false)
}

// RaceBinary is Binary built with -race when the test binary runs under the race
// detector: a race in the server would otherwise go unseen, as only the test process
// would be instrumented. See (*Proc).Races.
func RaceBinary(t testing.TB) string {
	t.Helper()
	return binary(t, raceEnabled)
}

func binary(t testing.TB, race bool) string {
	t.Helper()
	mu.Lock()
	b := builds[race]
	if b == nil {
		b = &build{}
		builds[race] = b
	}
	mu.Unlock()
	b.once.Do(func() { b.path, b.err = buildBinary(race) })
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

func buildBinary(race bool) (string, error) {
	root, err := emulator.RepoRoot()
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "aacmcp-test-bin-")
	if err != nil {
		return "", err
	}
	AtExit(func() { _ = os.RemoveAll(dir) })
	out := filepath.Join(dir, "aacmcp")
	args := []string{"build", "-o", out}
	if race {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, "./cmd/aacmcp")...)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/aacmcp: %v\n%s", err, b)
	}
	return out, nil
}

// CleanEnv is the test's environment without AACMCP_* and LOG_LEVEL variables,
// which would change the commands' defaults behind the test's back.
func CleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AACMCP_") && !strings.HasPrefix(kv, "LOG_LEVEL=") {
			env = append(env, kv)
		}
	}
	return env
}

// AWSEnv is the environment of a command that talks to the emulators: their static
// credentials, and nothing from the machine's AWS setup.
func AWSEnv() []string {
	return []string{
		"AWS_ACCESS_KEY_ID=" + emulator.AccessKey, "AWS_SECRET_ACCESS_KEY=" + emulator.SecretKey,
		"AWS_REGION=" + emulator.Region, "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null",
		"AWS_EC2_METADATA_DISABLED=true",
	}
}

// CreateStream creates a one-shard Kinesis stream and waits until it exists.
func CreateStream(ctx context.Context, kc *kinesis.Client, name string) error {
	if _, err := kc.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String(name), ShardCount: aws.Int32(1)}); err != nil {
		return fmt.Errorf("create stream: %w", err)
	}
	w := kinesis.NewStreamExistsWaiter(kc, func(o *kinesis.StreamExistsWaiterOptions) { o.MinDelay = 50 * time.Millisecond })
	if err := w.Wait(ctx, &kinesis.DescribeStreamInput{StreamName: aws.String(name)}, 30*time.Second); err != nil {
		return fmt.Errorf("wait for stream: %w", err)
	}
	return nil
}

// CLI runs `bin args...` with CleanEnv plus env and returns its stdout; a failure
// comes back as an error that holds stdout and stderr.
func CLI(bin string, env []string, args ...string) ([]byte, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(CleanEnv(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("aacmcp %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out, stderr.String())
	}
	return out, nil
}

// Proc is a running aacmcp process. Everything it writes on stdout and stderr is
// kept, so that tests can grep it.
type Proc struct {
	cmd    *exec.Cmd
	stdout Buffer
	stderr Buffer
	exited chan struct{}
	err    error // the process's exit status, valid once exited is closed
}

// StartProc runs `bin args...` with CleanEnv plus env and returns once ready has
// returned true for a line of its stdout (ready is not called after that). It fails
// when the process exits first or after timeout (the process is then killed).
func StartProc(bin string, env []string, args []string, ready func(line string) bool, timeout time.Duration) (*Proc, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(CleanEnv(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	p := &Proc{cmd: cmd, exited: make(chan struct{})}
	cmd.Stderr = &p.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start aacmcp %s: %w", args[0], err)
	}
	readyc := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		done := false
		for sc.Scan() {
			line := sc.Text()
			_, _ = p.stdout.Write([]byte(line + "\n"))
			if !done && ready(line) {
				done = true
				close(readyc)
			}
		}
		_, _ = io.Copy(&p.stdout, out)
		p.err = cmd.Wait()
		close(p.exited)
	}()
	select {
	case <-readyc:
		return p, nil
	case <-p.exited:
		return nil, fmt.Errorf("aacmcp %s exited before it was ready: %v\nstdout:\n%s\nstderr:\n%s", args[0], p.err, &p.stdout, &p.stderr)
	case <-time.After(timeout):
		_ = p.Kill(30 * time.Second)
		return nil, fmt.Errorf("aacmcp %s was not ready within %s\nstdout:\n%s\nstderr:\n%s", args[0], timeout, &p.stdout, &p.stderr)
	}
}

// Pid is the process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

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

// ErrTimeout is what Kill and Terminate return when the process outlives them.
var ErrTimeout = errors.New("the process did not exit in time")

// Kill sends SIGKILL (no chance to flush or close anything) and waits up to timeout
// for the process to be gone. It is a no-op on a process that has exited.
func (p *Proc) Kill(timeout time.Duration) error {
	if p.Exited() {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-p.exited:
		return nil
	case <-time.After(timeout):
		return ErrTimeout
	}
}

// Terminate sends SIGTERM and waits up to timeout for the process to exit; it
// returns the exit status. A process still running then is killed, and Terminate
// returns ErrTimeout.
func (p *Proc) Terminate(timeout time.Duration) error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return p.err
	case <-time.After(timeout):
		_ = p.Kill(30 * time.Second)
		return ErrTimeout
	}
}

// Races is the server's first race-detector report and what follows it (up to
// 8000 bytes), or "" when there is none.
func (p *Proc) Races() string {
	s := p.Stderr()
	i := strings.Index(s, "WARNING: DATA RACE")
	if i < 0 {
		return ""
	}
	return Tail(s[i:], 8000)
}

// Server is a running `aacmcp serve`.
type Server struct {
	*Proc
	// Base is http://127.0.0.1:PORT; MCPURL is Base + "/mcp".
	Base, MCPURL string
	// Full and ReadOnly are the dev tokens the banner of `serve --dev` printed.
	Full, ReadOnly string
}

var (
	servingLine = regexp.MustCompile(`^aacmcp serving (http://127\.0\.0\.1:\d+)/mcp$`)
	tokenLine   = regexp.MustCompile(`^  (full-scope|read-only) token: +(aac_[0-9A-Za-z]+)$`)
	gatewayLine = regexp.MustCompile(`^aacmcp gateway serving (http://127\.0\.0\.1:\d+(?:/[A-Za-z0-9_-]+)?)/mcp`)
)

// Serve runs `aacmcp serve --addr 127.0.0.1:0 --data data extra...` and reads the
// URL from its banner, and with --dev among extra the two dev tokens as well.
func Serve(bin, data string, extra ...string) (*Server, error) {
	s := &Server{}
	dev := false
	for _, a := range extra {
		dev = dev || a == "--dev"
	}
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--data", data}, extra...)
	p, err := StartProc(bin, nil, args, func(line string) bool {
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
		return s.Base != "" && (!dev || s.Full != "" && s.ReadOnly != "")
	}, 60*time.Second)
	if err != nil {
		return nil, err
	}
	s.Proc, s.MCPURL = p, s.Base+"/mcp"
	return s, nil
}

// Gateway runs `aacmcp gateway --addr 127.0.0.1:0 args...` with CleanEnv plus env
// and reads the URL from its banner.
func Gateway(bin string, env []string, args ...string) (*Server, error) {
	s := &Server{}
	p, err := StartProc(bin, env, append([]string{"gateway", "--addr", "127.0.0.1:0"}, args...), func(line string) bool {
		if m := gatewayLine.FindStringSubmatch(line); m != nil {
			s.Base = m[1]
			return true
		}
		return false
	}, 60*time.Second)
	if err != nil {
		return nil, err
	}
	s.Proc, s.MCPURL = p, s.Base+"/mcp"
	return s, nil
}

// Tail is the last n bytes of s, marked as cut when they are not all of it.
func Tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// Buffer is a bytes.Buffer that a process and a test may use at once.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
