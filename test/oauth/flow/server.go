package flow

import (
	"errors"
	"net/url"
	"os"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/test/harness"
)

// Main runs the package's tests, then stops what the harness started and removes
// the built binary. Call it from TestMain.
func Main(m *testing.M) { harness.Main(m) }

// Dev fixture of `serve --dev` (cmd/aacmcp/internal/cli/dev.go).
const (
	DevWorkspace = "demo"
	DevUser      = "dev"
)

// ServeOptions say how to start `aacmcp serve`.
type ServeOptions struct {
	// Dev adds --dev: the demo workspace and, with no upstream provider, the dev
	// sign-in page.
	Dev bool
	// Env is added to the clean environment (SSL_CERT_FILE, for one).
	Env []string
	// Flags are added after --addr and --data.
	Flags []string
	// Data is the data folder; empty: a new temporary one.
	Data string
	// Addr is the listen address; empty: 127.0.0.1:0.
	Addr string
}

// Server is a running `aacmcp serve`, built with -race when the test binary is.
type Server struct {
	// Base is http://127.0.0.1:PORT, the issuer of its authorization server;
	// MCPURL is Base + "/mcp", the protected resource.
	Base, MCPURL string
	// Data is the data folder, which a restart keeps.
	Data string

	bin  string
	opts ServeOptions
	proc *harness.Proc
}

var servingLine = regexp.MustCompile(`^aacmcp serving (http://127\.0\.0\.1:\d+)/mcp\b`)

// Serve starts the server and returns once its banner named the URL; the test's
// cleanup stops it and fails the test when the race detector reported in it.
func Serve(t testing.TB, o ServeOptions) *Server {
	t.Helper()
	if o.Data == "" {
		o.Data = t.TempDir()
	}
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	s := &Server{Data: o.Data, bin: harness.RaceBinary(t), opts: o}
	s.start(t)
	return s
}

func (s *Server) start(t testing.TB) {
	t.Helper()
	args := []string{"serve", "--addr", s.opts.Addr, "--data", s.opts.Data}
	if s.opts.Dev {
		args = append(args, "--dev")
	}
	args = append(args, s.opts.Flags...)
	var base string
	p, err := harness.StartProc(s.bin, s.opts.Env, args, func(line string) bool {
		if m := servingLine.FindStringSubmatch(line); m != nil {
			base = m[1]
			return true
		}
		return false
	}, 90*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	s.proc, s.Base, s.MCPURL = p, base, base+"/mcp"
	t.Cleanup(func() { s.stop(t) })
}

// Restart stops the server (SIGTERM) and starts it again on the same address with
// the same data, environment and flags: a process whose caches are empty, so that
// what it answers comes from the store alone.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.stop(t)
	u, err := url.Parse(s.Base)
	if err != nil {
		t.Fatal(err)
	}
	s.opts.Addr = u.Host
	s.start(t)
}

func (s *Server) stop(t testing.TB) {
	t.Helper()
	if s.proc.Exited() {
		return
	}
	err := s.proc.Terminate(30 * time.Second)
	if r := s.proc.Races(); r != "" {
		t.Errorf("the race detector reported in aacmcp serve:\n%s", r)
	}
	switch {
	case errors.Is(err, harness.ErrTimeout):
		t.Errorf("aacmcp serve did not stop within 30s of SIGTERM")
	case err != nil:
		t.Errorf("aacmcp serve exited with %v\nstderr (tail):\n%s", err, harness.Tail(s.proc.Stderr(), 4000))
	}
}

// Logs is the tail of what the server wrote on stderr, for failure messages.
func (s *Server) Logs() string { return harness.Tail(s.proc.Stderr(), 6000) }

// Stdout is what the server printed on stdout (its banner).
func (s *Server) Stdout() string { return s.proc.Stdout() }

// CLI runs an admin command against the server's data folder and returns its
// stdout; a failure fails the test.
func (s *Server) CLI(t testing.TB, args ...string) []byte {
	t.Helper()
	out, err := harness.CLI(s.bin, s.opts.Env, append(slices.Clone(args), "--data", s.opts.Data)...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// WriteSecret writes secret to a file only the owner can read and returns its
// path, for flags such as --oidc-client-secret-file.
func WriteSecret(t testing.TB, name, secret string) string {
	t.Helper()
	path := t.TempDir() + "/" + name
	if err := os.WriteFile(path, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
