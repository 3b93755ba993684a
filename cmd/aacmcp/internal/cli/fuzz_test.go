package cli

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"
)

// FuzzCommandLine feeds arbitrary command lines to Run: whatever the arguments, the
// CLI must answer with exit code 0, 1 or 2 and never panic. Commands that block
// (serve, gateway, audit tail), reach the network (the dynamodb backend) or run
// arbitrary SQL (audit query) are left out; their flag parsing is the same cobra code
// path.
func FuzzCommandLine(f *testing.F) {
	seeds := []string{
		"tools\x00--json",
		"workspace\x00create\x00--id\x00acme\x00--key\x00ACME",
		"member\x00add\x00--workspace\x00acme\x00--user\x00u\x00--role\x00owner",
		"token\x00create\x00--workspace\x00w\x00--user\x00u\x00--scopes\x00issues:read,,x\x00--ttl\x00-5h",
		"token\x00revoke\x00tok_\x00extra",
		"token\x00list\x00--json\x00--workspace",
		"agent\x00add\x00--id",
		"--data",
		"audit\x00query\x00--sql",
		"init\x00--backend\x00sqlite\x00--table\x00x",
		"\x00\x00--\x00-",
	}
	for _, s := range seeds {
		f.Add(s)
	}
	data := f.TempDir()
	f.Fuzz(func(t *testing.T, line string) {
		args := strings.Split(line, "\x00")
		for _, a := range args {
			switch {
			case a == "serve", a == "gateway", a == "tail", a == "query",
				strings.Contains(a, "dynamodb"), strings.Contains(a, "data"):
				t.Skip()
			}
		}
		args = append(args, "--data", data)
		code := Run(context.Background(), args, Env{Stdout: io.Discard, Stderr: io.Discard, Getenv: func(string) string { return "" }})
		if !slices.Contains([]int{ExitOK, ExitFailure, ExitUsage}, code) {
			t.Fatalf("exit code %d for %q", code, args)
		}
	})
}
