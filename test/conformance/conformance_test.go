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
// suite's own fixture tools, prompts or resources. They must all pass.
var applicable = []string{"server-initialize", "ping", "tools-list", "dns-rebinding-protection"}

// notApplicable says, for every other server scenario of the pinned suite, why it
// does not apply to aacmcp. docs/clients.md repeats this list.
var notApplicable = map[string]string{
	"logging-set-level":             "no logging capability: a stateless server has no session to send log notifications to",
	"completion-complete":           "no completions capability (aacmcp has no prompts or resource templates to complete)",
	"tools-call-simple-text":        "calls the suite's fixture tool test_simple_text, which aacmcp does not have",
	"tools-call-image":              "calls the suite's fixture tool test_image_content",
	"tools-call-audio":              "calls the suite's fixture tool test_audio_content",
	"tools-call-embedded-resource":  "calls the suite's fixture tool test_embedded_resource",
	"tools-call-mixed-content":      "calls the suite's fixture tool test_multiple_content_types",
	"tools-call-with-logging":       "calls the suite's fixture tool test_tool_with_logging (and needs log notifications)",
	"tools-call-error":              "calls the suite's fixture tool test_error_handling",
	"tools-call-with-progress":      "calls the suite's fixture tool test_tool_with_progress (and needs progress notifications)",
	"tools-call-sampling":           "calls the suite's fixture tool test_sampling; aacmcp never asks the client for sampling",
	"tools-call-elicitation":        "calls the suite's fixture tool test_elicitation; aacmcp never elicits",
	"json-schema-2020-12":           "inspects the suite's fixture tool json_schema_2020_12_tool",
	"elicitation-sep1034-defaults":  "calls the suite's fixture tool test_elicitation_sep1034_defaults",
	"elicitation-sep1330-enums":     "calls the suite's fixture tool test_elicitation_sep1330_enums",
	"server-sse-polling":            "needs SSE responses and the fixture tool test_reconnection; aacmcp answers every POST with JSON (API Gateway and Lambda cannot stream)",
	"server-sse-multiple-streams":   "needs SSE streams (GET /mcp); aacmcp is stateless and answers GET /mcp with 405",
	"resources-list":                "no resources capability",
	"resources-read-text":           "no resources capability",
	"resources-read-binary":         "no resources capability",
	"resources-templates-read":      "no resources capability",
	"resources-subscribe":           "no resources capability",
	"resources-unsubscribe":         "no resources capability",
	"prompts-list":                  "no prompts capability",
	"prompts-get-simple":            "no prompts capability",
	"prompts-get-with-args":         "no prompts capability",
	"prompts-get-embedded-resource": "no prompts capability",
	"prompts-get-with-image":        "no prompts capability",
}

// suiteCLI is the conformance suite's entry point (package.json "bin").
func suiteCLI(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(harness.TestDir(t), "node_modules", "@modelcontextprotocol", "conformance")
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		t.Fatalf("@modelcontextprotocol/conformance is not installed: run `npm ci --prefix test` (%v)", err)
	}
	var pkg struct {
		Version string            `json:"version"`
		Bin     map[string]string `json:"bin"`
	}
	if err := json.Unmarshal(b, &pkg); err != nil || pkg.Bin["conformance"] == "" {
		t.Fatalf("conformance package.json has no bin: %v", err)
	}
	return filepath.Join(dir, pkg.Bin["conformance"])
}

func runSuite(t *testing.T, args ...string) []byte {
	t.Helper()
	node := harness.Node22(t)
	out, err := harness.Run(t, harness.TestDir(t), harness.CleanEnv(), 2*time.Minute, node, append([]string{suiteCLI(t)}, args...)...)
	if err != nil {
		t.Fatalf("conformance %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
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
		if !slices.Contains(applicable, s) && notApplicable[s] == "" {
			t.Errorf("server scenario %q is neither run nor explained", s)
		}
	}
	for _, s := range applicable {
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
	t.Logf("@modelcontextprotocol/conformance: run %s", strings.Join(applicable, ", "))
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

	for _, scenario := range applicable {
		t.Run(scenario, func(t *testing.T) {
			outDir := t.TempDir()
			out := runSuite(t, "server", "--url", proxy.URL+"/mcp", "--scenario", scenario, "-o", outDir)
			checks := readChecks(t, outDir)
			if len(checks) == 0 {
				t.Fatalf("scenario %s recorded no checks:\n%s", scenario, out)
			}
			for _, c := range checks {
				t.Logf("%-8s %s (%s) %s", c.Status, c.ID, c.Name, c.ErrorMessage)
				if c.Status != "SUCCESS" {
					t.Errorf("check %s: %s %s", c.ID, c.Status, c.ErrorMessage)
				}
			}
			if t.Failed() {
				t.Logf("suite output:\n%s\nserver log:\n%s", out, srv.Logs())
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
	for _, s := range applicable {
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
