package clients_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/aacworkflow/aacmcp/test/clients/harness"
)

// TestDocsConfirmTableCitesRealTests: every row of docs/clients.md's table of
// clients that can confirm through the server cites a test that exists, or says
// "Not verified here"; so the table cannot claim a proof nobody runs.
func TestDocsConfirmTableCitesRealTests(t *testing.T) {
	root := harness.RepoRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "clients.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(doc), "## Which clients can confirm a delete through the server")
	if !ok {
		t.Fatal("docs/clients.md has no section on which clients can confirm")
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	funcs := map[string]bool{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range regexp.MustCompile(`(?m)^func (Test\w+)\(t \*testing\.T\)`).FindAllSubmatch(b, -1) {
			funcs[string(m[1])] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	rows := 0
	for _, line := range strings.Split(sec, "\n") {
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| client ") {
			continue
		}
		rows++
		cited := regexp.MustCompile("`(Test\\w+)`").FindAllStringSubmatch(line, -1)
		if len(cited) == 0 && !strings.Contains(line, "Not verified here") {
			t.Errorf("row cites no test and does not say it is not verified: %s", line)
		}
		for _, c := range cited {
			if !funcs[c[1]] {
				t.Errorf("row cites %s, which no test file defines: %s", c[1], line)
			}
		}
	}
	if rows < 6 {
		t.Errorf("the table has %d rows", rows)
	}
}
