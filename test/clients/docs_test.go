package clients_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aacworkflow/aacmcp/test/clients/harness"
)

// TestDocsShowTheScripts keeps docs/clients.md honest: the shell scripts the tests
// run appear in it verbatim, in a fenced block of their own.
func TestDocsShowTheScripts(t *testing.T) {
	root := harness.RepoRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "clients.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, script := range []string{curlScript, inspectorScript} {
		b, err := os.ReadFile(filepath.Join(root, "test", "clients", script))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(doc), "```sh\n"+string(b)+"```\n") {
			t.Errorf("docs/clients.md does not show test/clients/%s verbatim in a ```sh block", script)
		}
	}
	for _, want := range []string{
		"claude mcp add --transport http aacmcp http://127.0.0.1:8080/mcp",
		`"mcp-remote", "http://127.0.0.1:8080/mcp", "--header", "Authorization:${AACMCP_AUTH}"`,
		`error="insufficient_scope"`,
	} {
		if !strings.Contains(string(doc), want) {
			t.Errorf("docs/clients.md lacks %q", want)
		}
	}
}
