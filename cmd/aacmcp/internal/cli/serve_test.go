package cli

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/audit/file"
	"github.com/aacworkflow/aacmcp/shared/autopilot"
)

// server is one in-process `aacmcp serve`.
type server struct {
	base   string
	stdout *syncBuffer
	stderr *syncBuffer
	cancel context.CancelFunc
	done   chan int
}

// startServe runs `aacmcp serve --addr 127.0.0.1:0 --data data args...` in process and
// waits until it listens. The server is stopped when the test ends if stop was not
// called.
func startServe(t *testing.T, data string, args ...string) *server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &server{stdout: &syncBuffer{}, stderr: &syncBuffer{}, cancel: cancel, done: make(chan int, 1)}
	ready := make(chan string, 1)
	env := Env{Stdout: s.stdout, Stderr: s.stderr, Getenv: func(string) string { return "" },
		Ready: func(base string) { ready <- base }}
	go func() {
		s.done <- Run(ctx, append([]string{"serve", "--addr", "127.0.0.1:0", "--data", data}, args...), env)
	}()
	select {
	case s.base = <-ready:
	case code := <-s.done:
		cancel()
		t.Fatalf("serve exited with %d before listening\nstdout: %s\nstderr: %s", code, s.stdout, s.stderr)
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatalf("serve did not listen within 30s\nstderr: %s", s.stderr)
	}
	t.Cleanup(func() { s.stop(t) })
	return s
}

// stop cancels the server's context (what SIGINT does) and returns its exit code.
func (s *server) stop(t *testing.T) int {
	t.Helper()
	s.cancel()
	select {
	case code := <-s.done:
		s.done <- code // later calls (Cleanup) see the same code
		return code
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop within 30s of cancellation")
		return -1
	}
}

var tokenLine = regexp.MustCompile(`(?m)^  (full-scope|read-only) token: +(aac_[0-9A-Za-z]+)$`)

// devTokensOf reads the two tokens from the banner.
func devTokensOf(t *testing.T, banner string) (full, readOnly string) {
	t.Helper()
	for _, m := range tokenLine.FindAllStringSubmatch(banner, -1) {
		if m[1] == "full-scope" {
			full = m[2]
		} else {
			readOnly = m[2]
		}
	}
	if full == "" || readOnly == "" {
		t.Fatalf("banner lacks the dev tokens:\n%s", banner)
	}
	return full, readOnly
}

// callREST posts args to /tools/{tool} with the token and returns status and body.
func callREST(t *testing.T, base, token, tool, args string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/tools/"+tool, strings.NewReader(args))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var body map[string]any
	if err := json.Unmarshal(b, &body); err != nil {
		t.Fatalf("POST /tools/%s: %d, body is not a JSON object: %s", tool, res.StatusCode, b)
	}
	return res.StatusCode, body
}

func TestServeDev(t *testing.T) {
	data := t.TempDir()
	s := startServe(t, data, "--dev")
	banner := s.stdout.String()
	full, readOnly := devTokensOf(t, banner)
	for _, want := range []string{
		"aacmcp serving " + s.base + "/mcp",
		`claude mcp add --transport http aacmcp ` + s.base + `/mcp --header "Authorization: Bearer ` + full + `"`,
		"npx @modelcontextprotocol/inspector --cli " + s.base + "/mcp",
		"cached for 60s",
	} {
		if !strings.Contains(banner, want) {
			t.Errorf("banner lacks %q:\n%s", want, banner)
		}
	}

	res, err := http.Get(s.base + "/healthz")
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("GET /healthz: %v %v", res, err)
	}
	res.Body.Close()

	status, body := callREST(t, s.base, full, "list_issues", `{}`)
	if status != http.StatusOK {
		t.Fatalf("list_issues: %d %v", status, body)
	}
	seeded := len(body["issues"].([]any))
	if seeded < 3 {
		t.Errorf("the dev seed has %d issues, want a few", seeded)
	}
	status, body = callREST(t, s.base, readOnly, "create_issue", `{"title":"x"}`)
	if status != http.StatusForbidden || body["code"] != "insufficient_scope" {
		t.Errorf("create_issue with the read-only token: %d %v", status, body)
	}
	status, body = callREST(t, s.base, full, "get_issue", `{"issue_id":"AAC-1"}`)
	if status != http.StatusOK || body["key"] != "AAC-1" || body["created_by"] != devUser {
		t.Errorf("get_issue AAC-1: %d %v", status, body)
	}
	if code := s.stop(t); code != ExitOK {
		t.Fatalf("serve exited %d after cancellation\nstderr: %s", code, s.stderr)
	}

	// A restart mints new tokens, revokes the old ones and does not seed again. The
	// first server stopped cleanly, so it sealed its usage counters: nothing to replay.
	s2 := startServe(t, data, "--dev")
	if !strings.Contains(s2.stderr.String(), `usage counters match the audit log" records_replayed=0 `) {
		t.Errorf("the restart after a clean stop replayed audit records:\n%s", s2.stderr)
	}
	full2, readOnly2 := devTokensOf(t, s2.stdout.String())
	if full2 == full || readOnly2 == readOnly {
		t.Fatal("a restart printed the same tokens")
	}
	for _, old := range []string{full, readOnly} {
		if status, body := callREST(t, s2.base, old, "list_issues", `{}`); status != http.StatusUnauthorized || body["code"] != "invalid_token" {
			t.Errorf("previous dev token after restart: %d %v", status, body)
		}
	}
	status, body = callREST(t, s2.base, full2, "list_issues", `{}`)
	if status != http.StatusOK || len(body["issues"].([]any)) != seeded {
		t.Errorf("after restart: %d, %v issues, want %d (no second seed)", status, body["issues"], seeded)
	}
	if code := s2.stop(t); code != ExitOK {
		t.Fatalf("second serve exited %d", code)
	}

	// Every tool call of both runs, and the two rejected tokens, were audited.
	recs, bad, err := file.ReadAll(data)
	if err != nil || len(bad) != 0 {
		t.Fatalf("read audit: %v %v", err, bad)
	}
	if len(recs) != 6 {
		t.Errorf("%d audit records, want 6", len(recs))
	}
	if _, err := os.Stat(filepath.Join(data, outboxFile)); err != nil {
		t.Errorf("no autopilot outbox without a webhook: %v", err)
	}
}

func TestServeWithoutDevPrintsHowToGetAToken(t *testing.T) {
	s := startServe(t, t.TempDir())
	out := s.stdout.String()
	if !strings.Contains(out, "aacmcp token create") || strings.Contains(out, "aac_") {
		t.Errorf("banner without --dev:\n%s", out)
	}
}

func TestServeRateLimit(t *testing.T) {
	s := startServe(t, t.TempDir(), "--dev", "--rate-limit", "2/m")
	full, _ := devTokensOf(t, s.stdout.String())
	for i := 0; i < 2; i++ {
		if status, body := callREST(t, s.base, full, "list_issues", `{}`); status != http.StatusOK {
			t.Fatalf("call %d: %d %v", i, status, body)
		}
	}
	status, body := callREST(t, s.base, full, "list_issues", `{}`)
	if status != http.StatusTooManyRequests || body["code"] != "rate_limited" {
		t.Errorf("third call in the window: %d %v, want 429 rate_limited", status, body)
	}
}

func TestServeAutopilotWebhook(t *testing.T) {
	secret := []byte("0123456789abcdef-webhook-secret")
	var (
		mu   sync.Mutex
		got  []string
		sigs []bool
	)
	runner := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, string(b))
		sigs = append(sigs, autopilot.Verify(secret, b, r.Header.Get(autopilot.HeaderSignature), time.Now()) == nil)
		mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(runner.Close)
	secretFile := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secretFile, append(secret, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}

	data := t.TempDir()
	s := startServe(t, data, "--dev", "--autopilot-webhook", runner.URL, "--autopilot-secret-file", secretFile)
	full, _ := devTokensOf(t, s.stdout.String())
	status, body := callREST(t, s.base, full, "trigger_autopilot", `{"issue_id":"AAC-1","instructions":"go"}`)
	if status != http.StatusOK || body["status"] != "dispatched" {
		t.Fatalf("trigger_autopilot: %d %v", status, body)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || !sigs[0] || !strings.Contains(got[0], `"issue_key":"AAC-1"`) {
		t.Errorf("runner received %q (signature valid: %v)", got, sigs)
	}
	if _, err := os.Stat(filepath.Join(data, outboxFile)); !os.IsNotExist(err) {
		t.Errorf("an outbox was created although a webhook is set: %v", err)
	}
}

func TestServeShortWebhookSecret(t *testing.T) {
	f := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(f, []byte("short"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := run(t, nil, "serve", "--data", t.TempDir(), "--addr", "127.0.0.1:0",
		"--autopilot-webhook", "https://runner.example.com/jobs", "--autopilot-secret-file", f)
	if r.code != ExitUsage || !strings.Contains(r.stderr, "at least 16 bytes") {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestServeAddressInUse(t *testing.T) {
	l := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(l.Close)
	addr := strings.TrimPrefix(l.URL, "http://")
	r := run(t, nil, "serve", "--data", t.TempDir(), "--addr", addr)
	if r.code != ExitFailure || !strings.Contains(r.stderr, "listen on "+addr) {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestServeLocksTheDataFolder: a second server on the same folder is refused (it would
// take the first one's in-flight idempotency claims for a dead process's), and the
// folder is free again once the first stops.
func TestServeLocksTheDataFolder(t *testing.T) {
	data := t.TempDir()
	first := startServe(t, data)
	r := run(t, nil, "serve", "--data", data, "--addr", "127.0.0.1:0")
	if r.code != ExitFailure || !strings.Contains(r.stderr, "another aacmcp serve is using the data folder") {
		t.Errorf("second serve: exit %d, stderr %q", r.code, r.stderr)
	}
	if code := first.stop(t); code != ExitOK {
		t.Fatalf("first serve exited %d", code)
	}
	startServe(t, data) // the lock went with the first server
}
