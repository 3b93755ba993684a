package cli

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/store"
)

// TestAdminCommandsWhileServing: serve keeps members and issues in memory, and an
// admin command run beside it changes what the very next call sees.
func TestAdminCommandsWhileServing(t *testing.T) {
	data := t.TempDir()
	s := startServe(t, data, "--dev")
	full, _ := devTokensOf(t, s.stdout.String())
	d := []string{"--workspace", devWorkspace, "--user", devUser, "--data", data}

	for range 2 { // the second call is answered from memory
		if status, body := callREST(t, s.base, full, "create_issue", `{"title":"before"}`); status != http.StatusOK {
			t.Fatalf("create_issue as admin: %d %v", status, body)
		}
	}
	mustRun(t, append([]string{"member", "add", "--role", "viewer"}, d...)...)
	if status, body := callREST(t, s.base, full, "create_issue", `{"title":"after"}`); status != http.StatusForbidden || body["code"] != "permission_denied" {
		t.Errorf("create_issue after the role became viewer: %d %v", status, body)
	}
	if status, body := callREST(t, s.base, full, "get_issue", `{"issue_id":"AAC-1"}`); status != http.StatusOK {
		t.Errorf("get_issue as viewer: %d %v", status, body)
	}
	mustRun(t, append([]string{"member", "remove"}, d...)...)
	if status, body := callREST(t, s.base, full, "get_issue", `{"issue_id":"AAC-1"}`); status != http.StatusForbidden || body["code"] != "permission_denied" {
		t.Errorf("get_issue after removal: %d %v", status, body)
	}
}

// TestServeWaitsForAdminCommand: a server does not take the folder from an admin
// command that is writing it without one (it would not hear of those writes); it
// starts once the command is done.
func TestServeWaitsForAdminCommand(t *testing.T) {
	data := t.TempDir()
	release, err := announceWrites(context.Background(), data)
	if err != nil {
		t.Fatal(err)
	}
	ready := make(chan string, 1)
	done := make(chan int, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer func() {
		cancel()
		<-done
	}()
	var stderr syncBuffer
	go func() {
		done <- Run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--data", data},
			Env{Stdout: &syncBuffer{}, Stderr: &stderr, Getenv: func(string) string { return "" },
				Ready: func(base string) { ready <- base }})
	}()
	select {
	case <-ready:
		t.Fatal("serve started while an admin command held the folder")
	case code := <-done:
		t.Fatalf("serve exited %d instead of waiting: %s", code, stderr.String())
	case <-time.After(500 * time.Millisecond):
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ready:
	case code := <-done:
		t.Fatalf("serve exited %d: %s", code, stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not start after the admin command finished")
	}
}

// TestSessionOutlivesItsServer: the server an admin command announced itself to
// stops, and another starts and reads the database, before the command commits.
// Releasing the session tells the new server, which then drops its copy.
func TestSessionOutlivesItsServer(t *testing.T) {
	data := t.TempDir()
	ctx := context.Background()
	first := startServe(t, data, "--dev")
	release, err := announceWrites(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	if code := first.stop(t); code != ExitOK {
		t.Fatalf("first serve exited %d", code)
	}
	second := startServe(t, data, "--dev")
	full, _ := devTokensOf(t, second.stdout.String())
	titleOf := func() any {
		t.Helper()
		status, body := callREST(t, second.base, full, "get_issue", `{"issue_id":"AAC-1"}`)
		if status != http.StatusOK {
			t.Fatalf("get_issue: %d %v", status, body)
		}
		return body["title"]
	}
	before := titleOf() // now in the second server's memory

	// The command's write, committed after the second server read the issue.
	st, err := openSQLite(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	changed := "changed by a command that began before this server"
	if _, _, err := st.UpdateIssue(ctx, devWorkspace, "AAC-1", store.IssuePatch{Title: &changed}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if got := titleOf(); got != before {
		t.Fatalf("title %v before the release; the copy was not in use, so this test shows nothing", got)
	}
	if err := release(); err != nil {
		t.Fatalf("release: %v", err)
	}
	if got := titleOf(); got != changed {
		t.Errorf("title after the release = %v, want %q", got, changed)
	}
}

// TestWritersSocketRefusesStrangers: only the hello opens a session; the server
// stays up and keeps serving from memory.
func TestWritersSocketRefusesStrangers(t *testing.T) {
	data := t.TempDir()
	s := startServe(t, data)
	path := filepath.Join(data, writersSocket)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 || fi.Mode()&os.ModeSocket == 0 {
		t.Errorf("%s: mode %v, want a socket with 0600", writersSocket, fi.Mode())
	}
	sess, err := openSession(data)
	if err != nil {
		t.Fatalf("a well-formed session was refused: %v", err)
	}
	if err := sess.release(context.Background(), data)(); err != nil {
		t.Fatal(err)
	}
	if !serverAnswers(data) {
		t.Fatal("serverAnswers = false while serving")
	}
	if strings.Contains(s.stderr.String(), "refused a connection") {
		t.Errorf("a probe or a session was logged as refused:\n%s", s.stderr)
	}

	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("GET / HTTP/1.1\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(c); len(b) != 0 {
		t.Errorf("a stranger got an answer: %q", b)
	}
	c.Close()
	if !strings.Contains(s.stderr.String(), "refused a connection on the writers socket") {
		t.Errorf("the stranger was not logged:\n%s", s.stderr)
	}
	if _, err := openSession(data); err != nil {
		t.Fatalf("a session after the stranger: %v", err)
	}
	if s.stop(t) != ExitOK {
		t.Fatal("serve failed")
	}
}

// TestSocketPathForDeepFolders: a data folder whose socket path would overflow
// sun_path still gets a working socket.
func TestSocketPathForDeepFolders(t *testing.T) {
	deep := filepath.Join(t.TempDir(), strings.Repeat("d", 60), strings.Repeat("e", 60))
	if len(filepath.Join(deep, writersSocket)) <= maxSocketPath {
		t.Fatalf("the test's path is not deep enough")
	}
	s := startServe(t, deep)
	if !serverAnswers(deep) {
		t.Fatal("no server answers on the deep folder's socket")
	}
	mustRun(t, "workspace", "create", "--id", "w", "--key", "W", "--data", deep)
	if s.stop(t) != ExitOK {
		t.Fatalf("serve failed: %s", s.stderr)
	}
}
