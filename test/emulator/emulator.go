// Package emulator starts the API-compatible AWS emulators the integration tests run
// against: dynalite (DynamoDB) and kinesalite (Kinesis), both from the npm packages pinned
// in test/package-lock.json, bound to 127.0.0.1 on a port the kernel picks.
//
// Tests talk to them through the real AWS SDK for Go v2, so the code under test is the
// production code with only the endpoint changed. A missing npm install is a test
// failure with the command that fixes it, never a skip.
package emulator

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// Region and credentials the emulators accept; they check neither.
const (
	Region    = "us-east-1"
	AccessKey = "AKIDEMULATOR"
	SecretKey = "emulator-secret"
)

// Kind names an emulator.
type Kind string

const (
	Dynalite   Kind = "dynalite"
	Kinesalite Kind = "kinesalite"
	// S3rver is s3rver, an S3 API over a temporary folder. Path-style addressing
	// only (set UsePathStyle); it checks that the access key is its own (S3RVER).
	S3rver Kind = "s3rver"
)

// The CLIs of both packages bind every interface (kinesalite has no --host), so each is
// started from a short script that listens on 127.0.0.1 only, on port 0, and reports
// the port the kernel gave it: no port races between parallel test binaries.
var scripts = map[Kind]string{
	Dynalite: `const s = require('dynalite')({createTableMs: 0, deleteTableMs: 0, updateTableMs: 0});
s.listen(0, '127.0.0.1', () => console.log('LISTENING ' + s.address().port));`,
	Kinesalite: `const s = require('kinesalite')({createStreamMs: 0, deleteStreamMs: 0, updateStreamMs: 0, shardLimit: 100});
s.listen(0, '127.0.0.1', () => console.log('LISTENING ' + s.address().port));`,
	S3rver: `const fs = require('fs'), os = require('os'), path = require('path');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 's3rver-'));
process.on('exit', () => fs.rmSync(dir, {recursive: true, force: true}));
process.on('SIGTERM', () => process.exit(0));
new (require('s3rver'))({port: 0, address: '127.0.0.1', silent: true, directory: dir, vhostBuckets: false})
  .run().then(a => console.log('LISTENING ' + a.port));`,
}

// Server is a running emulator.
type Server struct {
	Kind     Kind
	Endpoint string // http://127.0.0.1:PORT

	cmd      *exec.Cmd
	done     chan struct{}
	stopOnce sync.Once
	logs     *tailBuffer
}

// Start launches an emulator of the given kind and waits until it listens.
func Start(ctx context.Context, kind Kind) (*Server, error) {
	script, ok := scripts[kind]
	if !ok {
		return nil, fmt.Errorf("emulator: unknown kind %q", kind)
	}
	modules, err := NodeModules()
	if err != nil {
		return nil, err
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, errors.New("emulator: node is not on PATH (install Node.js 20 or newer)")
	}
	cmd := exec.Command(node, "-e", script)
	cmd.Dir = filepath.Dir(modules)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	// Own process group, and killed with the test binary if that dies first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	logs := &tailBuffer{max: 8 << 10}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("emulator: start %s: %w", kind, err)
	}
	s := &Server{Kind: kind, cmd: cmd, done: make(chan struct{}), logs: logs}
	go func() { _ = cmd.Wait(); close(s.done) }()

	ports := make(chan int, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if p, ok := strings.CutPrefix(sc.Text(), "LISTENING "); ok {
				if n, err := strconv.Atoi(p); err == nil {
					ports <- n
				}
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	wait, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	select {
	case p := <-ports:
		s.Endpoint = fmt.Sprintf("http://127.0.0.1:%d", p)
		return s, nil
	case <-s.done:
		return nil, fmt.Errorf("emulator: %s exited before listening: %s", kind, logs.String())
	case <-wait.Done():
		s.Stop()
		return nil, fmt.Errorf("emulator: %s did not listen within 30s: %s", kind, logs.String())
	}
}

// StartT starts an emulator for one test and stops it when the test ends.
func StartT(t testing.TB, kind Kind) *Server {
	t.Helper()
	s, err := Start(context.Background(), kind)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// Stop kills the emulator (and anything it spawned) and waits for it to exit. Safe to
// call more than once; tests call it mid-test to simulate an outage.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		if s.cmd.Process != nil {
			_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		}
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
		}
	})
}

// Logs returns the tail of the emulator's stderr, for failure messages.
func (s *Server) Logs() string { return s.logs.String() }

// AWSConfig is an SDK configuration that reaches this emulator: static credentials,
// the emulator region, and the endpoint as BaseEndpoint.
func (s *Server) AWSConfig() aws.Config {
	key, secret := AccessKey, SecretKey
	if s.Kind == S3rver {
		key, secret = "S3RVER", "S3RVER"
	}
	return aws.Config{
		Region:       Region,
		Credentials:  credentials.NewStaticCredentialsProvider(key, secret, ""),
		BaseEndpoint: aws.String(s.Endpoint),
		// The SDK's default retryer stays: the code under test runs with its production
		// retry behaviour.
	}
}

// NodeModules returns the absolute path of test/node_modules, or an error that says
// how to install it.
func NodeModules() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, "test", "node_modules")
	for _, pkg := range []string{"dynalite", "kinesalite"} {
		if _, err := os.Stat(filepath.Join(dir, pkg, "package.json")); err != nil {
			return "", fmt.Errorf("emulator: %s is not installed in %s: run `make test` (or `npm ci --prefix test`)", pkg, dir)
		}
	}
	return dir, nil
}

// RepoRoot finds the module root by walking up from the working directory (go test
// runs each package in its own directory).
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.Contains(string(b), "module github.com/aacworkflow/aacmcp\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("emulator: repository root (go.mod of github.com/aacworkflow/aacmcp) not found above the working directory")
		}
		dir = parent
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
