package cli

import (
	"strings"
	"testing"

	"github.com/aacworkflow/aacmcp/test/emulator"
)

type listedWorkspace struct {
	ID                      string `json:"id"`
	Key                     string `json:"key"`
	Name                    string `json:"name"`
	CreatedAt               string `json:"created_at"`
	DestructiveConfirmation string `json:"destructive_confirmation"`
}

// workspaceSettingsFlow: list shows flag until set; set changes it, table and JSON
// agree; an unknown workspace and an unknown policy are refused.
func workspaceSettingsFlow(t *testing.T, with func(...string) []string) {
	t.Helper()
	mustRun(t, with("workspace", "create", "--id", "acme", "--key", "ACME")...)
	mustRun(t, with("workspace", "create", "--id", "beta", "--key", "BETA")...)
	out := mustRun(t, with("workspace", "set", "--workspace", "acme", "--destructive-confirmation", "require")...)
	if !strings.Contains(out, "require") {
		t.Errorf("set output %q", out)
	}
	table := mustRun(t, with("workspace", "list")...)
	lines := strings.Split(strings.TrimSpace(table), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "DESTRUCTIVE CONFIRMATION") {
		t.Fatalf("workspace list:\n%s", table)
	}
	if f := strings.Fields(lines[1]); f[0] != "acme" || f[3] != "require" {
		t.Errorf("acme row %q", lines[1])
	}
	if f := strings.Fields(lines[2]); f[0] != "beta" || f[3] != "flag" {
		t.Errorf("beta row %q", lines[2])
	}
	got := decodeJSON[[]listedWorkspace](t, mustRun(t, with("workspace", "list", "--json")...))
	if len(got) != 2 || got[0].ID != "acme" || got[0].DestructiveConfirmation != "require" || got[1].DestructiveConfirmation != "flag" {
		t.Errorf("workspace list --json = %+v", got)
	}
	for _, args := range [][]string{
		{"workspace", "set", "--workspace", "nope", "--destructive-confirmation", "elicit"},
		{"workspace", "set", "--workspace", "acme", "--destructive-confirmation", "always"},
		{"workspace", "set", "--workspace", "acme"},
	} {
		if r := run(t, nil, with(args...)...); r.code == ExitOK {
			t.Errorf("aacmcp %s succeeded: %s", strings.Join(args, " "), r.stdout)
		}
	}
}

func TestWorkspaceSettingsSQLite(t *testing.T) {
	data := t.TempDir()
	workspaceSettingsFlow(t, func(args ...string) []string { return append(args, "--data", data) })
}

func TestWorkspaceSettingsDynamoDB(t *testing.T) {
	awsEnv(t)
	db := emulator.StartT(t, emulator.Dynalite)
	be := []string{"--backend", "dynamodb", "--table", "main-t", "--tokens-table", "tokens-t", "--endpoint-url", db.Endpoint, "--data", t.TempDir()}
	with := func(args ...string) []string { return append(args, be...) }
	mustRun(t, with("init")...)
	workspaceSettingsFlow(t, with)
}
