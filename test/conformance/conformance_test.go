package conformance_test

import (
	"encoding/json"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/test/clients/harness"
	"github.com/aacworkflow/aacmcp/test/conformance"
)

func TestMain(m *testing.M) { harness.Main(m) }

// applicable are the suite's server scenarios that test a server without the
// suite's own fixture tools, prompts or resources. Every check of each must
// succeed, except the ones named in known, each with the reason it cannot pass
// against aacmcp; a known check that starts passing fails the test too, so the
// list cannot go stale. (The suite's --expected-failures baseline does the same;
// keeping it here puts the reasons beside the code that checks them.)
var applicable = []struct {
	name  string
	known map[string]string // check id -> why it does not succeed here
}{
	{name: "server-initialize"},
	{name: "ping"},
	{name: "tools-list"},
	{name: "dns-rebinding-protection"},
	{name: "http-header-validation"},
	{name: "input-required-result-unsupported-methods"},
	{name: "server-stateless", known: map[string]string{
		"sep-2575-server-rejects-undeclared-capability":              "needs the suite's diagnostic tool test_missing_capability",
		"sep-2575-missing-capability-http-400":                       "needs the suite's diagnostic tool test_missing_capability",
		"sep-2575-http-server-no-independent-requests-on-stream":     "needs the suite's tool test_streaming_elicitation; aacmcp never answers with a stream",
		"sep-2575-server-no-log-without-loglevel":                    "needs the suite's tool test_logging_tool; aacmcp sends no log notifications",
		"sep-2575-server-sends-subscription-ack":                     subscriptionsReason,
		"sep-2575-server-tags-subscription-id":                       subscriptionsReason,
		"sep-2575-server-sends-prompts-list-changed-on-subscription": "skipped by the suite: no prompts capability",
		"sep-2575-server-sends-tools-list-changed-on-subscription":   "skipped by the suite: the tool list is fixed, so no tools listChanged",
	}},
	{name: "caching", known: map[string]string{
		"sep-2549-prompts-list-caching-hints":             "no prompts capability (prompts/list is -32601)",
		"sep-2549-resources-list-caching-hints":           "no resources capability (resources/list is -32601)",
		"sep-2549-resources-templates-list-caching-hints": "no resources capability (resources/templates/list is -32601)",
		"sep-2549-resources-read-caching-hints":           "skipped by the suite: no resources to read",
	}},
}

// subscriptionsReason: subscriptions/listen is a long-lived stream of
// notifications.
const subscriptionsReason = "subscriptions/listen needs a long-lived SSE stream: aacmcp answers every POST with one JSON document (API Gateway and Lambda cannot stream) and declares no listChanged"

const fixtureTool = "calls the suite's fixture tool "

// notApplicable says, for every other server scenario of the pinned suite, why it
// does not apply to aacmcp. docs/clients.md repeats this list.
var notApplicable = map[string]string{
	"server-session-lifecycle":             "sessions (2025-era Mcp-Session-Id): aacmcp is stateless and issues none, and the suite skips the scenario",
	"logging-set-level":                    "no logging capability: a stateless server has no session to send log notifications to",
	"completion-complete":                  "no completions capability (aacmcp has no prompts or resource templates to complete)",
	"tools-call-simple-text":               fixtureTool + "test_simple_text, which aacmcp does not have",
	"tools-call-image":                     fixtureTool + "test_image_content",
	"tools-call-audio":                     fixtureTool + "test_audio_content",
	"tools-call-embedded-resource":         fixtureTool + "test_embedded_resource",
	"tools-call-mixed-content":             fixtureTool + "test_multiple_content_types",
	"tools-call-with-logging":              fixtureTool + "test_tool_with_logging (and needs log notifications)",
	"tools-call-error":                     fixtureTool + "test_error_handling",
	"tools-call-with-progress":             fixtureTool + "test_tool_with_progress (and needs progress notifications)",
	"tools-call-sampling":                  fixtureTool + "test_sampling; aacmcp never asks the client for sampling",
	"tools-call-elicitation":               fixtureTool + "test_elicitation (a server-to-client request; aacmcp asks through input_required instead)",
	"json-schema-2020-12":                  "inspects the suite's fixture tool json_schema_2020_12_tool",
	"elicitation-sep1034-defaults":         fixtureTool + "test_elicitation_sep1034_defaults",
	"elicitation-sep1330-enums":            fixtureTool + "test_elicitation_sep1330_enums",
	"server-sse-polling":                   "needs SSE responses and the fixture tool test_reconnection; aacmcp answers every POST with JSON (API Gateway and Lambda cannot stream)",
	"server-sse-multiple-streams":          "needs SSE streams (GET /mcp); aacmcp is stateless and answers GET /mcp with 405",
	"resources-list":                       "no resources capability",
	"resources-read-text":                  "no resources capability",
	"resources-read-binary":                "no resources capability",
	"resources-templates-read":             "no resources capability",
	"resources-subscribe":                  "no resources capability",
	"resources-unsubscribe":                "no resources capability",
	"sep-2164-resource-not-found":          "no resources capability: resources/read is -32601, not the -32602 the scenario expects of a server with resources",
	"prompts-list":                         "no prompts capability",
	"prompts-get-simple":                   "no prompts capability",
	"prompts-get-with-args":                "no prompts capability",
	"prompts-get-embedded-resource":        "no prompts capability",
	"prompts-get-with-image":               "no prompts capability",
	"http-custom-header-server-validation": "needs a tool with x-mcp-header annotations; aacmcp's tools declare none",
	// The MRTR scenarios drive the suite's own test_input_required_result_* tools;
	// aacmcp's input_required (human confirmation of a delete) is proven by
	// test/clients instead (TestTypeScriptSDKv2Confirmation and the Go clients).
	"input-required-result-basic-elicitation":       fixtureTool + "test_input_required_result_elicitation",
	"input-required-result-basic-sampling":          fixtureTool + "test_input_required_result_sampling; aacmcp never asks for sampling",
	"input-required-result-basic-list-roots":        fixtureTool + "test_input_required_result_list_roots; aacmcp never asks for roots",
	"input-required-result-request-state":           fixtureTool + "test_input_required_result_request_state",
	"input-required-result-multiple-input-requests": fixtureTool + "test_input_required_result_multiple_inputs",
	"input-required-result-multi-round":             fixtureTool + "test_input_required_result_multi_round",
	"input-required-result-missing-input-response":  fixtureTool + "test_input_required_result_elicitation",
	"input-required-result-non-tool-request":        "asks prompts/get for input; aacmcp has no prompts",
	"input-required-result-result-type":             fixtureTool + "test_input_required_result_elicitation",
	"input-required-result-tampered-state":          fixtureTool + "test_input_required_result_tampered_state (aacmcp's own tampering cases are in test/clients)",
	"input-required-result-capability-check":        fixtureTool + "test_input_required_result_capabilities",
	"input-required-result-ignore-extra-params":     fixtureTool + "test_input_required_result_elicitation",
	"input-required-result-validate-input":          fixtureTool + "test_input_required_result_elicitation (against aacmcp it passes only because the unknown tool is an error)",
	"sep-2640-skills-directory":                     skillsReason,
	"sep-2640-skills-enumeration":                   skillsReason,
	"sep-2640-skills-manifest":                      skillsReason,
	"tasks-lifecycle":                               tasksReason,
	"tasks-capability-negotiation":                  tasksReason,
	"tasks-wire-fields":                             tasksReason,
	"tasks-request-state-removal":                   tasksReason,
	"tasks-mrtr-input":                              tasksReason,
	"tasks-request-headers":                         tasksReason,
	"tasks-dispatch-and-envelope":                   tasksReason,
	"tasks-status-notifications":                    tasksReason,
	"tasks-required-task-error":                     tasksReason,
	"tasks-mrtr-composition":                        tasksReason,
}

const (
	skillsReason = "the skills extension (SEP-2640), which aacmcp does not offer"
	tasksReason  = "the tasks extension, which aacmcp does not offer (every call completes in one request, as a Lambda must)"
)

// suiteCLI is the entry point of @modelcontextprotocol/conformance 0.2, which
// test/package.json installs under the alias conformance-next.
func suiteCLI(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(harness.TestDir(t), "node_modules", "conformance-next")
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		t.Fatalf("conformance-next (@modelcontextprotocol/conformance 0.2) is not installed: run `npm ci --prefix test` (%v)", err)
	}
	var pkg struct {
		Name    string            `json:"name"`
		Version string            `json:"version"`
		Bin     map[string]string `json:"bin"`
	}
	if err := json.Unmarshal(b, &pkg); err != nil || pkg.Bin["conformance"] == "" {
		t.Fatalf("conformance-next package.json has no bin: %v", err)
	}
	if pkg.Name != "@modelcontextprotocol/conformance" || !strings.HasPrefix(pkg.Version, "0.2.") {
		t.Fatalf("conformance-next is %s@%s, want @modelcontextprotocol/conformance 0.2.x", pkg.Name, pkg.Version)
	}
	return filepath.Join(dir, pkg.Bin["conformance"])
}

func runSuite(t *testing.T, args ...string) []byte {
	t.Helper()
	out, err := runSuiteErr(t, args...)
	if err != nil {
		t.Fatalf("conformance %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// runSuiteErr runs the suite and returns its output and exit error: a scenario
// with a known failure exits 1, and the checks decide.
func runSuiteErr(t *testing.T, args ...string) ([]byte, error) {
	t.Helper()
	return harness.Run(t, harness.TestDir(t), harness.CleanEnv(), 2*time.Minute, harness.Node22(t), append([]string{suiteCLI(t)}, args...)...)
}

func applicableNames() []string {
	var names []string
	for _, a := range applicable {
		names = append(names, a.name)
	}
	return names
}

// TestScenarioInventory keeps the two lists above honest: every server scenario
// the pinned suite has is either run or explained, so a suite upgrade that adds one
// fails here until someone decides.
func TestScenarioInventory(t *testing.T) {
	out := runSuite(t, "list")
	_, server, ok := strings.Cut(string(out), "Server scenarios")
	if !ok {
		t.Fatalf("conformance list printed no server scenarios:\n%s", out)
	}
	server, _, _ = strings.Cut(server, "Client scenarios")
	var listed []string
	for _, m := range regexp.MustCompile(`(?m)^\s*-\s+(\S+)`).FindAllStringSubmatch(server, -1) {
		listed = append(listed, m[1])
	}
	if len(listed) == 0 {
		t.Fatalf("no server scenario parsed from:\n%s", out)
	}
	for _, s := range listed {
		if !slices.Contains(applicableNames(), s) && notApplicable[s] == "" {
			t.Errorf("server scenario %q is neither run nor explained", s)
		}
	}
	for _, s := range applicableNames() {
		if !slices.Contains(listed, s) {
			t.Errorf("scenario %q is no longer in the suite", s)
		}
	}
	var skipped []string
	for s := range notApplicable {
		if !slices.Contains(listed, s) {
			t.Errorf("explained scenario %q is no longer in the suite", s)
		}
		skipped = append(skipped, s)
	}
	sort.Strings(skipped)
	t.Logf("@modelcontextprotocol/conformance: run %s", strings.Join(applicableNames(), ", "))
	for _, s := range skipped {
		t.Logf("not applicable: %-30s %s", s, notApplicable[s])
	}
}

type check struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	Status       string `json:"status"`
	ErrorMessage string `json:"errorMessage"`
}

// TestServerScenarios runs every applicable scenario against `aacmcp serve --dev`
// through the auth proxy, and requires every check to succeed.
func TestServerScenarios(t *testing.T) {
	srv := harness.Serve(t)
	target, err := url.Parse(srv.Base)
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := conformance.StartAuthProxy(target, srv.Full)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Close() })

	for _, sc := range applicable {
		t.Run(sc.name, func(t *testing.T) {
			outDir := t.TempDir()
			out, runErr := runSuiteErr(t, "server", "--url", proxy.URL+"/mcp", "--scenario", sc.name, "-o", outDir)
			checks := readChecks(t, outDir)
			if len(checks) == 0 {
				t.Fatalf("scenario %s recorded no checks (%v):\n%s", sc.name, runErr, out)
			}
			failed := map[string]bool{}
			for _, c := range checks {
				t.Logf("%-8s %s (%s) %s", c.Status, c.ID, c.Name, c.ErrorMessage)
				if c.Status == "SUCCESS" || c.Status == "INFO" {
					continue
				}
				failed[c.ID] = true
				if sc.known[c.ID] == "" {
					t.Errorf("check %s: %s %s", c.ID, c.Status, c.ErrorMessage)
				}
			}
			for id, why := range sc.known {
				if !failed[id] {
					t.Errorf("known failure %s (%s) did not fail: remove it from the list", id, why)
				}
			}
			if runErr != nil && len(sc.known) == 0 {
				t.Errorf("the suite exited with %v", runErr)
			}
			if t.Failed() {
				t.Logf("suite output:\n%s\nproxy log:\n%s\nserver log:\n%s", out, proxy.Log(), srv.Logs())
			}
		})
	}
}

// readChecks collects the checks.json files the suite wrote under dir.
func readChecks(t *testing.T, dir string) []check {
	t.Helper()
	var all []check
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "checks.json" {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var cs []check
		if err := json.Unmarshal(b, &cs); err != nil {
			return err
		}
		all = append(all, cs...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return all
}

// TestDocsListTheScenarios requires docs/clients.md to name every scenario that
// runs and every one that does not (by name, or by its family such as
// `prompts-*`).
func TestDocsListTheScenarios(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(harness.RepoRoot(t), "docs", "clients.md"))
	if err != nil {
		t.Fatal(err)
	}
	named := func(s string) bool {
		if strings.Contains(string(doc), "`"+s+"`") {
			return true
		}
		for i := range len(s) {
			if s[i] == '-' && strings.Contains(string(doc), "`"+s[:i]+"-*`") {
				return true
			}
		}
		return false
	}
	for _, s := range applicableNames() {
		if !named(s) {
			t.Errorf("docs/clients.md does not name the scenario %s", s)
		}
	}
	for s := range notApplicable {
		if !named(s) {
			t.Errorf("docs/clients.md does not say why %s does not apply", s)
		}
	}
}

// TestAuthenticationStaysOn shows that the proxy is the only thing that lets the
// suite in: the same request without it is refused with the bearer challenge.
func TestAuthenticationStaysOn(t *testing.T) {
	srv := harness.Serve(t)
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"conformance","version":"0"}}}`
	req, err := http.NewRequest(http.MethodPost, srv.MCPURL, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("initialize without a token: HTTP %d, want 401", resp.StatusCode)
	}
	if ch := resp.Header.Get("WWW-Authenticate"); !strings.HasPrefix(ch, "Bearer ") || !strings.Contains(ch, `resource_metadata="`+srv.Base+`/.well-known/oauth-protected-resource/mcp"`) {
		t.Errorf("WWW-Authenticate %q: want a Bearer challenge with the resource metadata URL", ch)
	}
}
