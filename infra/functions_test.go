package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestDiscoverFunctions(t *testing.T) {
	all := map[string]string{
		"mcp/main.go":        "package main\n",
		"authorizer/main.go": "// Command authorizer.\npackage main\n",
		"forwarder/main.go":  "package main\n",
		"oauth/main.go":      "package main\n",
		"digest/main.go":     "package main\n",
	}
	with := func(extra map[string]string, drop ...string) map[string]string {
		m := map[string]string{}
		for k, v := range all {
			if !slices.Contains(drop, k) {
				m[k] = v
			}
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	tests := []struct {
		name    string
		files   map[string]string
		want    []string
		wantErr string
	}{
		{"exactly the wired functions", all, wiredFunctions, ""},
		{"library folders and tests are not functions", with(map[string]string{
			"mcp/mcpfn/fn.go":        "package mcpfn\n",
			"shared/util.go":         "package shared\n",
			"helper/main_test.go":    "package main\n",
			"README.md":              "functions",
			"docs/notes/main.go.txt": "package main",
		}), wiredFunctions, ""},
		// The Lambda@Edge function is Node.js, deployed from its folder as it is.
		{"the Node.js edge function is not a Go function", with(map[string]string{"edge/index.mjs": "export async function handler() {}\n"}), wiredFunctions, ""},
		{"an unwired function fails", with(map[string]string{"billing/main.go": "package main\n"}), nil, "functions/billing"},
		{"a missing function fails", with(nil, "forwarder/main.go"), nil, "functions/forwarder is missing"},
		{"unparsable Go fails", with(map[string]string{"broken/main.go": "packag main"}), nil, "broken"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, tt.files)
			got, err := discoverFunctions(dir)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("discoverFunctions() = %v, want %v", got, tt.want)
			}
		})
	}
	if _, err := discoverFunctions(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("a missing functions/ directory must fail")
	}
}

func TestDistAssets(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"dist/mcp/bootstrap": "\x7fELF", "dist/forwarder/README": "no binary"})
	got, err := distAssets(root, []string{"mcp"})
	if err != nil || got["mcp"] != filepath.Join(root, "dist", "mcp") {
		t.Errorf("distAssets(mcp) = %v, %v", got, err)
	}
	_, err = distAssets(root, []string{"mcp", "forwarder", "authorizer"})
	if err == nil || !strings.Contains(err.Error(), "dist/forwarder/bootstrap") || !strings.Contains(err.Error(), "dist/authorizer/bootstrap") {
		t.Errorf("error = %v, want both missing binaries named", err)
	}
}

func TestRepoRoot(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Errorf("repoRoot() = %s without go.mod", root)
	}
	if filepath.Base(filepath.Join(root, "infra")) != "infra" || !strings.HasSuffix(mustGetwd(t), filepath.Join(root, "infra")) {
		t.Errorf("repoRoot() = %s, tests run in %s", root, mustGetwd(t))
	}
}

func mustGetwd(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}
