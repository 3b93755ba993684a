package cli

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/store"
	"github.com/aacworkflow/aacmcp/shared/store/sqlite"
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

// sessionCounter stands for the server's store: it counts the sessions begun and
// those still open.
type sessionCounter struct{ begun, open atomic.Int32 }

func (c *sessionCounter) BeginExternalWrites() func() {
	c.begun.Add(1)
	c.open.Add(1)
	var once sync.Once
	return func() { once.Do(func() { c.open.Add(-1) }) }
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// TestReleaseAfterItsServerStopped: the server a command announced itself to stops
// and the next one starts before the command releases its session. The kernel knows
// at once that the first server closed the session; release must know it too, every
// time, and tell the next server, not only once some goroutine noticed.
func TestReleaseAfterItsServerStopped(t *testing.T) {
	ctx := context.Background()
	for i := range 100 {
		data := t.TempDir()
		first, err := listenWriters(data, &sessionCounter{}, quietLog())
		if err != nil {
			t.Fatal(err)
		}
		sess, err := openSession(data)
		if err != nil {
			t.Fatal(err)
		}
		if err := first.Close(); err != nil {
			t.Fatal(err)
		}
		unlock, err := lockDataDir(ctx, data) // the next server holds the folder
		if err != nil {
			t.Fatal(err)
		}
		next := &sessionCounter{}
		second, err := listenWriters(data, next, quietLog())
		if err != nil {
			t.Fatal(err)
		}
		if err := sess.release(ctx, data)(); err != nil {
			t.Fatal(err)
		}
		got := next.begun.Load()
		second.Close()
		unlock()
		if got != 1 {
			t.Fatalf("iteration %d: the next server was told of %d sessions, want 1 (release missed that the first one had stopped)", i, got)
		}
	}
}

// TestReleaseWhileServing: a session released while its server still runs ends
// there; no second session is opened.
func TestReleaseWhileServing(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	unlock, err := lockDataDir(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	counter := &sessionCounter{}
	w, err := listenWriters(data, counter, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i := range 20 {
		release, err := announceWrites(ctx, data)
		if err != nil {
			t.Fatal(err)
		}
		if err := release(); err != nil {
			t.Fatal(err)
		}
		if got := counter.begun.Load(); got != int32(i+1) {
			t.Fatalf("after %d commands the server was told of %d sessions", i+1, got)
		}
	}
}

// TestStoppedServerLeavesItsCopy: once a server stops honouring sessions (its
// writers socket is closed), whatever still runs in it, such as a request that
// outlived the shutdown grace, must read the database: a command whose session
// was cut keeps writing.
func TestStoppedServerLeavesItsCopy(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	st, err := openSQLite(ctx, data, sqlite.WithReadCache(), sqlite.WithLogger(quietLog()))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.CreateWorkspace(ctx, store.Workspace{ID: "w", Key: "W", Name: "w"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.UpdateMember(ctx, store.Member{WorkspaceID: "w", UserID: "u", Role: store.RoleAdmin}); err != nil {
		t.Fatal(err)
	}
	roleOf := func() store.Role {
		t.Helper()
		m, err := st.GetMember(ctx, "w", "u")
		if err != nil {
			t.Fatal(err)
		}
		return m.Role
	}
	unlock, err := lockDataDir(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	w, err := listenWriters(data, st, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	release, err := announceWrites(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil { // the server stops...
		t.Fatal(err)
	}
	unlock()
	roleOf() // ...but a late request still reads

	cmd, err := openSQLite(ctx, data, sqlite.WithLogger(quietLog()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cmd.UpdateMember(ctx, store.Member{WorkspaceID: "w", UserID: "u", Role: store.RoleViewer}); err != nil {
		t.Fatal(err)
	}
	cmd.Close()
	if err := release(); err != nil {
		t.Fatal(err)
	}
	if got := roleOf(); got != store.RoleViewer {
		t.Errorf("role after the command returned = %q, want viewer", got)
	}
}

// flakyListener fails its first Accept the way a process out of descriptors does.
type flakyListener struct {
	net.Listener
	failed atomic.Bool
}

func (l *flakyListener) Accept() (net.Conn, error) {
	if !l.failed.Swap(true) {
		return nil, &net.OpError{Op: "accept", Net: "unix", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	return l.Listener.Accept()
}

// TestWritersSurviveAcceptErrors: a transient accept error (EMFILE under load) must
// not stop the server from taking sessions, or every admin command would fail
// until a restart.
func TestWritersSurviveAcceptErrors(t *testing.T) {
	data := t.TempDir()
	ln, err := net.Listen("unix", filepath.Join(data, writersSocket))
	if err != nil {
		t.Fatal(err)
	}
	counter := &sessionCounter{}
	w := serveWriters(&flakyListener{Listener: ln}, counter, quietLog())
	defer w.Close()
	sess, err := openSession(data)
	if err != nil {
		t.Fatalf("no session after an accept error: %v", err)
	}
	if err := sess.release(context.Background(), data)(); err != nil {
		t.Fatal(err)
	}
	if got := counter.begun.Load(); got != 1 {
		t.Errorf("sessions begun = %d, want 1", got)
	}
}

// TestWritersSocketRemovedOnClose: a stopped server leaves no socket behind, deep
// folders (reached through /proc/self/fd) included.
func TestWritersSocketRemovedOnClose(t *testing.T) {
	for name, dir := range map[string]string{
		"shallow": t.TempDir(),
		"deep":    filepath.Join(t.TempDir(), strings.Repeat("d", 60), strings.Repeat("e", 60)),
	} {
		t.Run(name, func(t *testing.T) {
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			w, err := listenWriters(dir, &sessionCounter{}, quietLog())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(dir, writersSocket)); err != nil {
				t.Fatalf("no socket while listening: %v", err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(dir, writersSocket)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("socket after Close: %v, want it removed", err)
			}
		})
	}
}

// TestWritersHelloIsBounded: a stranger's endless line is neither buffered nor
// logged whole.
func TestWritersHelloIsBounded(t *testing.T) {
	data := t.TempDir()
	var logs syncBuffer
	w, err := listenWriters(data, &sessionCounter{}, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	c, err := net.Dial("unix", filepath.Join(data, writersSocket))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go func() {
		_, _ = c.Write(bytes.Repeat([]byte("x"), 1<<20)) // fails once the server hangs up
		_ = c.(*net.UnixConn).CloseWrite()
	}()
	if b, _ := io.ReadAll(c); len(b) != 0 {
		t.Errorf("a stranger got an answer: %q", b)
	}
	if !strings.Contains(logs.String(), "refused a connection") {
		t.Fatalf("the stranger was not logged: %.200s", logs.String())
	}
	if n := len(logs.String()); n > 1024 {
		t.Errorf("the refusal logged %d bytes of the stranger's line", n)
	}
}
