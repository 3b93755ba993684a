package flow

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	clients "github.com/aacworkflow/aacmcp/test/clients/harness"
	"github.com/aacworkflow/aacmcp/test/harness"
)

// Chromium is Debian's browser, which `make deps` installs and playwright-core
// drives; playwright never downloads one of its own.
const Chromium = "/usr/bin/chromium"

// Redirect is a loopback listener for an OAuth redirect that the test makes and a
// child process serves (as its file descriptor 3): the redirect URI is known before
// the child starts (a client metadata document names it), and no other process can
// take the port in between.
type Redirect struct {
	// URL is http://127.0.0.1:PORT/callback.
	URL  string
	file *os.File
}

// NewRedirect listens on a port the kernel picks; the listener is closed at the
// end of the test.
func NewRedirect(t testing.TB) *Redirect {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f, err := ln.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	// The duplicate is what the child inherits; this process never accepts.
	_ = ln.Close()
	t.Cleanup(func() { _ = f.Close() })
	return &Redirect{URL: "http://" + ln.Addr().String() + "/callback", file: f}
}

// NodeScript runs `node <script>` in test/oauth with the clean environment plus
// env, the redirect listener (when not nil) as file descriptor 3
// (AACMCP_REDIRECT_FD=3, AACMCP_REDIRECT_URL), and the browser's path in
// AACMCP_CHROMIUM. It returns the combined output; a non-zero exit, or no exit
// within timeout (the whole process group is then killed: the browser too), is an
// error. A missing Node.js, npm package or browser fails the test.
func NodeScript(t testing.TB, script string, env []string, rd *Redirect, timeout time.Duration) ([]byte, error) {
	t.Helper()
	node := clients.Node(t)
	dir := filepath.Join(clients.TestDir(t), "oauth")
	for _, pkg := range []string{"@modelcontextprotocol/client", "playwright-core"} {
		if _, err := os.Stat(filepath.Join(clients.TestDir(t), "node_modules", pkg, "package.json")); err != nil {
			t.Fatalf("npm package %s is not installed in test/node_modules: run `make deps` (or `npm ci --prefix test`)", pkg)
		}
	}
	if _, err := os.Stat(Chromium); err != nil {
		t.Fatalf("%s is missing: run `make deps` (it runs apt-get install chromium), or install Debian's chromium yourself", Chromium)
	}
	cmd := exec.Command(node, script)
	cmd.Dir = dir
	cmd.Env = append(harness.CleanEnv(), env...)
	cmd.Env = append(cmd.Env, "AACMCP_CHROMIUM="+Chromium)
	if rd != nil {
		cmd.ExtraFiles = []*os.File{rd.file}
		cmd.Env = append(cmd.Env, "AACMCP_REDIRECT_FD=3", "AACMCP_REDIRECT_URL="+rd.URL)
	}
	return clients.RunCommand(cmd, timeout, "node "+script)
}
