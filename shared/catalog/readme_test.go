package catalog

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateReadme = flag.Bool("update-readme", false, "rewrite the generated sections of README.md and docs/architecture.md")

// TestReadmeInSync keeps the generated tables in step with the catalog and apperr: the
// README's tool table and docs/architecture.md's error-code table (section 7). Regenerate
// with: go test ./shared/catalog -run TestReadmeInSync -update-readme
func TestReadmeInSync(t *testing.T) {
	for _, doc := range []struct {
		path     string
		sections []struct{ name, body string }
	}{
		{"README.md", []struct{ name, body string }{{"tools", New(Deps{}).MarkdownTable()}}},
		{"docs/architecture.md", []struct{ name, body string }{{"error-codes", ErrorCodesMarkdown()}}},
	} {
		syncGenerated(t, filepath.Join("..", "..", doc.path), doc.sections)
	}
}

func syncGenerated(t *testing.T, path string, sections []struct{ name, body string }) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	for _, s := range sections {
		begin, end := "<!-- generated:"+s.name+" begin -->\n", "<!-- generated:"+s.name+" end -->"
		i, j := strings.Index(readme, begin), strings.Index(readme, end)
		if i < 0 || j < i {
			t.Fatalf("%s lacks the markers %q ... %q", path, strings.TrimSpace(begin), end)
		}
		got := readme[i+len(begin) : j]
		if got != s.body {
			if *updateReadme {
				readme = readme[:i+len(begin)] + s.body + readme[j:]
				continue
			}
			t.Errorf("%s section %q is stale; run: go test ./shared/catalog -run TestReadmeInSync -update-readme\n--- %s\n%s--- catalog\n%s", path, s.name, path, got, s.body)
		}
	}
	if *updateReadme {
		if err := os.WriteFile(path, []byte(readme), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// The generated table must say what the spec's table says; a generator that printed
// nothing, or the wrong column, would otherwise keep the README "in sync".
func TestMarkdownTableRows(t *testing.T) {
	table := New(Deps{}).MarkdownTable()
	for _, row := range []string{
		"| `list_issues` | yes | no | yes | no | `issues:read` | - | - |",
		"| `delete_issue` | no | yes | yes | no | `issues:write` | required | - |",
		"| `trigger_autopilot` | no | no | no | yes | `autopilot:run` | - | accepted |",
		"| `create_issue` | no | no | no | no | `issues:write` | - | accepted |",
	} {
		if !strings.Contains(table, row+"\n") {
			t.Errorf("table lacks row %s\n%s", row, table)
		}
	}
	if n, want := strings.Count(table, "\n"), 2+len(New(Deps{}).Tools()); n != want {
		t.Errorf("table has %d lines, want %d: header, rule and one row per tool", n, want)
	}
}
