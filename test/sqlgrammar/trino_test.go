// Package sqlgrammar checks the saved audit queries against a Trino grammar: they are
// deployed as Athena named queries (infra/savedqueries), and DuckDB, which runs them
// locally, accepts syntax Athena rejects.
package sqlgrammar

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aacworkflow/aacmcp/events/queries"
	"github.com/aacworkflow/aacmcp/test/emulator"
)

// parserVersion is the dt-sql-parser test/package.json pins.
const parserVersion = "4.5.1"

type statement struct {
	Name string `json:"name"`
	SQL  string `json:"sql"`
}

type verdict struct {
	Name   string   `json:"name"`
	Errors []string `json:"errors"`
}

// trinoErrors runs every statement through dt-sql-parser's TrinoSQL and returns its
// syntax errors by name. A missing Node.js or parser fails the test: a grammar check
// that silently did not run would pass any SQL.
func trinoErrors(t *testing.T, stmts []statement) map[string][]string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not on PATH: the Trino grammar check needs Node.js 20 or newer")
	}
	root, err := emulator.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	pkg, err := os.ReadFile(filepath.Join(root, "test", "node_modules", "dt-sql-parser", "package.json"))
	if err != nil {
		t.Fatalf("dt-sql-parser is not installed in test/node_modules: run `make deps` (or `npm ci --prefix test`): %v", err)
	}
	var meta struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(pkg, &meta); err != nil || meta.Version != parserVersion {
		t.Fatalf("dt-sql-parser %q installed, the lockfile pins %s: run `npm ci --prefix test` (%v)", meta.Version, parserVersion, err)
	}
	in, err := json.Marshal(stmts)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, filepath.Join(root, "test", "sqlgrammar", "trino.mjs"))
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node trino.mjs: %v\n%s", err, stderr.String())
	}
	var verdicts []verdict
	if err := json.Unmarshal(out, &verdicts); err != nil || len(verdicts) != len(stmts) {
		t.Fatalf("trino.mjs printed %s (%v)", out, err)
	}
	got := map[string][]string{}
	for _, v := range verdicts {
		got[v.Name] = v.Errors
	}
	return got
}

func TestSavedQueriesParseAsTrino(t *testing.T) {
	saved := queries.All()
	if len(saved) == 0 {
		t.Fatal("no saved queries")
	}
	var stmts []statement
	for _, q := range saved {
		stmts = append(stmts, statement{"saved/" + q.Name, q.SQL})
	}
	// Controls: the grammar must reject what DuckDB accepts and Athena does not, or
	// the saved queries' passing would prove nothing.
	rejected := map[string]string{
		"control/cast shorthand": "SELECT hour::INTEGER FROM audit_log",
		"control/qualify":        "SELECT tool FROM audit_log QUALIFY row_number() OVER (PARTITION BY tool ORDER BY tool) = 1",
		"control/exclude":        "SELECT * EXCLUDE (tool) FROM audit_log",
		"control/ilike":          "SELECT tool FROM audit_log WHERE tool ILIKE 'x'",
		"control/typo":           "SELEC tool FROM audit_log",
	}
	for name, sql := range rejected {
		stmts = append(stmts, statement{name, sql})
	}
	got := trinoErrors(t, stmts)
	for _, q := range saved {
		if errs := got["saved/"+q.Name]; len(errs) > 0 {
			t.Errorf("%s.sql is not valid Trino (Athena would reject it):\n  %s", q.Name, strings.Join(errs, "\n  "))
		}
	}
	for name, sql := range rejected {
		if len(got[name]) == 0 {
			t.Errorf("the Trino grammar accepted %q", sql)
		}
	}
}
