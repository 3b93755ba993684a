package conformance_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/test/clients/harness"
	base "github.com/aacworkflow/aacmcp/test/harness"
	"github.com/aacworkflow/aacmcp/test/oauth/flow"
)

// authServerScenarios are the authorization-server scenarios of the pinned 0.2
// suite (npm alias conformance-next). They must all pass against `serve --dev`.
var authServerScenarios = []string{"authorization-server-metadata-endpoint", "authorization-code-grant"}

// TestAuthorizationServerInventory: the pinned suite has exactly the
// authorization-server scenarios this package runs, so an upgrade that adds one
// fails here until someone runs it.
func TestAuthorizationServerInventory(t *testing.T) {
	out, err := harness.Run(t, harness.TestDir(t), harness.CleanEnv(), time.Minute, harness.Node22(t), suiteCLI(t), "list", "--authorization")
	if err != nil {
		t.Fatalf("conformance list --authorization: %v\n%s", err, out)
	}
	var listed []string
	for _, m := range regexp.MustCompile(`(?m)^\s*-\s+(\S+)`).FindAllStringSubmatch(string(out), -1) {
		listed = append(listed, m[1])
	}
	slices.Sort(listed)
	want := slices.Sorted(slices.Values(authServerScenarios))
	if !slices.Equal(listed, want) {
		t.Fatalf("authorization-server scenarios %v, want %v:\n%s", listed, want, out)
	}
}

// TestAuthorizationServerScenarios runs the suite's authorization-server scenarios
// against the authorization server of `aacmcp serve --dev`. The suite needs a
// client registered for its loopback redirect URI, which the test registers
// through dynamic registration as any client would; it prints the authorization
// URL and waits for the redirect, so the test plays the person: it signs in on the
// dev sign-in page, allows on the consent page, and delivers the redirect to the
// suite, which then redeems the code and checks the token response.
func TestAuthorizationServerScenarios(t *testing.T) {
	srv := harness.Serve(t)
	port := freePort(t)
	redirectURI := fmt.Sprintf("http://127.0.0.1:%d/callback", port)
	clientID := flow.RegisterPublicClient(t, srv.Base, "MCP conformance suite", redirectURI)

	outDir := t.TempDir()
	cmd := exec.Command(harness.Node22(t), suiteCLI(t), "authorization",
		"--url", srv.Base, "--client-id", clientID, "--resource", srv.MCPURL,
		"--port", fmt.Sprint(port), "-o", outDir)
	cmd.Dir = harness.TestDir(t)
	cmd.Env = harness.CleanEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	var out base.Buffer
	cmd.Stderr = &out
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	authURLs := make(chan string, 1)
	// The suite prints the authorization URL as soon as it has asked for its
	// callback listener, and says when the listener is up: the redirect is
	// delivered after that.
	listening := make(chan struct{})
	listeningLine := fmt.Sprintf("Callback server started: http://127.0.0.1:%d", port)
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			_, _ = out.Write([]byte(line + "\n"))
			switch {
			case strings.HasPrefix(line, srv.Base+"/oauth/authorize?"):
				select {
				case authURLs <- line:
				default:
				}
			case strings.TrimSpace(line) == listeningLine:
				select {
				case <-listening:
				default:
					close(listening)
				}
			}
		}
	}()
	done := make(chan error, 1)
	go func() {
		<-copied
		done <- cmd.Wait()
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	select {
	case authURL := <-authURLs:
		person, err := flow.NewPerson(srv.Base)
		if err != nil {
			t.Fatal(err)
		}
		// The suite asks for no scope: the person chooses one.
		back, _, err := person.Authorize(ctx, authURL, flow.Answer{User: harness.DevUser, Scopes: []string{"issues:read"}})
		if err != nil {
			t.Fatalf("sign-in and consent for the suite: %v\nsuite output:\n%s\nserver log:\n%s", err, &out, srv.Logs())
		}
		if !strings.HasPrefix(back.String(), redirectURI+"?") {
			t.Fatalf("the server redirected to %s, not to the suite's %s", back.Redacted(), redirectURI)
		}
		select {
		case <-listening:
		case <-ctx.Done():
			t.Fatalf("the suite never said its callback listener was up:\n%s", &out)
		}
		resp, err := http.Get(back.String())
		if err != nil {
			t.Fatalf("deliver the redirect to the suite: %v", err)
		}
		_ = resp.Body.Close()
	case err := <-done:
		t.Fatalf("the suite exited before it asked for an authorization: %v\n%s", err, &out)
	case <-ctx.Done():
		t.Fatalf("the suite printed no authorization URL:\n%s", &out)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("conformance authorization: %v", err)
		}
	case <-ctx.Done():
		t.Fatalf("the suite did not finish:\n%s", &out)
	}

	checks := readChecks(t, outDir)
	seen := map[string]bool{}
	for _, c := range checks {
		t.Logf("%-8s %s (%s) %s", c.Status, c.ID, c.Name, c.ErrorMessage)
		seen[c.ID] = true
		if c.Status != "SUCCESS" {
			t.Errorf("check %s: %s %s", c.ID, c.Status, c.ErrorMessage)
		}
	}
	for _, id := range []string{"authorization-server-metadata", "authorization-server-metadata-cimd", "authorization-code-grant"} {
		if !seen[id] {
			t.Errorf("the suite recorded no check %s", id)
		}
	}
	if t.Failed() {
		t.Logf("suite output:\n%s\nserver log:\n%s", &out, srv.Logs())
	}
}

// freePort is a loopback port nobody listens on now, for the suite's own redirect
// listener (its CLI takes a port, not a listener).
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
