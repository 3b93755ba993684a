// Package makerun stops `make run` the way a person does, with Ctrl-C, and requires the
// clean stop to look clean: no "make: *** ... Error 1" after the server's own "stopped".
package makerun_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/test/emulator"
	"github.com/aacworkflow/aacmcp/test/harness"
)

func TestMain(m *testing.M) { harness.Main(m) }

var serving = regexp.MustCompile(`(?m)^aacmcp serving http://127\.0\.0\.1:\d+/mcp$`)

// TestCtrlCOnMakeRunEndsCleanly runs `make run` in a process group of its own and sends
// SIGINT to the whole group, which is what a terminal does on Ctrl-C: make, the recipe's
// command and the server all receive it.
func TestCtrlCOnMakeRunEndsCleanly(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	root, err := emulator.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	cmd := exec.Command("make", "--no-print-directory", "-C", root, "run",
		"ADDR=127.0.0.1:0", "DATA="+filepath.Join(tmp, "data"), "CLI="+filepath.Join(tmp, "aacmcp"))
	cmd.Env = harness.CleanEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out harness.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	})

	// The recipe builds the binary first; on a cold build cache that is DuckDB's compile.
	deadline := time.Now().Add(5 * time.Minute)
	for !serving.MatchString(out.String()) {
		select {
		case <-exited:
			t.Fatalf("make run ended before serving: %v\n%s", waitErr, harness.Tail(out.String(), 4000))
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("make run did not serve within 5 minutes\n%s", harness.Tail(out.String(), 4000))
		}
	}

	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		err = waitErr
	case <-time.After(60 * time.Second):
		t.Fatalf("make run did not stop within 60s of Ctrl-C\n%s", harness.Tail(out.String(), 4000))
	}
	got := out.String()
	// GNU make dies of the SIGINT it received itself once its recipe has ended, and says
	// nothing more when the recipe exited 0; a recipe that exited 1 adds "Error 1".
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.Sys().(syscall.WaitStatus).Signal() == os.Interrupt) {
		t.Errorf("make run ended with %v, want success or make's own SIGINT\n%s", err, harness.Tail(got, 4000))
	}
	if strings.Contains(got, "make: ***") {
		t.Errorf("Ctrl-C on make run printed a make error:\n%s", harness.Tail(got, 4000))
	}
	if !strings.Contains(got, "msg=stopped") {
		t.Errorf("the server did not report a clean shutdown:\n%s", harness.Tail(got, 4000))
	}
}

// TestServeExitsZeroOnSIGINT holds the server's half of a clean Ctrl-C: a built
// `aacmcp serve` that gets SIGINT shuts down and exits 0.
func TestServeExitsZeroOnSIGINT(t *testing.T) {
	s, err := harness.Serve(harness.Binary(t), t.TempDir(), "--dev")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Kill(30 * time.Second) })
	if err := syscall.Kill(s.Pid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !s.Exited() {
		if time.Now().After(deadline) {
			t.Fatalf("serve did not exit within 30s of SIGINT\n%s", harness.Tail(s.Stderr(), 4000))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := s.ExitErr(); err != nil {
		t.Errorf("serve exited with %v after SIGINT, want 0\n%s", err, harness.Tail(s.Stderr(), 4000))
	}
}
