// Package server runs the built aacmcp binary for the reliability and security
// tests: it builds cmd/aacmcp once per test binary, seeds a data folder directly
// through the SQLite store (several workspaces, roles, agents and tokens), starts
// `aacmcp serve` on a loopback port the kernel picks, and stops it either politely
// (SIGTERM) or the hard way (SIGKILL, for crash tests). Everything the process wrote
// on stdout and stderr is kept, so that tests can grep it.
package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/test/harness"
)

// Main runs the package's tests and removes the built binary afterwards. Call it
// from TestMain.
func Main(m *testing.M) { harness.Main(m) }

// Binary builds cmd/aacmcp (once per test binary, with -race when the test binary
// has it) and returns its path.
func Binary(t testing.TB) string {
	t.Helper()
	return harness.RaceBinary(t)
}

// Proc is a running `aacmcp serve`.
type Proc struct {
	// Base is the server's base URL, such as http://127.0.0.1:40123.
	Base string

	*harness.Proc
}

// Start runs `aacmcp serve --addr 127.0.0.1:0 --data dataDir extra...` and returns
// once /healthz answers. The process is killed at the end of the test if it is still
// running.
func Start(t testing.TB, dataDir string, extra ...string) *Proc {
	t.Helper()
	srv, err := harness.Serve(Binary(t), dataDir, extra...)
	if err != nil {
		t.Fatal(err)
	}
	p := &Proc{Base: srv.Base, Proc: srv.Proc}
	t.Cleanup(func() { p.Kill(t) })
	if err := waitHealthy(p.Base); err != nil {
		t.Fatalf("aacmcp serve is not healthy: %v\nstderr:\n%s", err, p.Stderr())
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
	if p.Exited() {
		return
	}
	if err := p.Proc.Kill(30 * time.Second); err != nil {
		t.Errorf("aacmcp serve (pid %d) did not die after SIGKILL", p.Pid())
	}
	p.checkRaces(t)
}

// checkRaces fails the test when the race detector reported in the server.
func (p *Proc) checkRaces(t testing.TB) {
	t.Helper()
	if r := p.Races(); r != "" {
		t.Errorf("the race detector reported in aacmcp serve:\n%s", r)
	}
}

// Stop sends SIGTERM and waits for a clean exit (status 0).
func (p *Proc) Stop(t testing.TB) {
	t.Helper()
	err := p.Terminate(60 * time.Second)
	if errors.Is(err, harness.ErrTimeout) {
		p.checkRaces(t)
		t.Fatalf("aacmcp serve did not stop within 60s of SIGTERM")
	}
	p.checkRaces(t)
	if err != nil {
		t.Fatalf("aacmcp serve exited with %v\nstderr (tail):\n%s", err, harness.Tail(p.Stderr(), 4000))
	}
}
