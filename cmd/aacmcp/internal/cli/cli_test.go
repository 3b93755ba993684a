package cli

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/aacworkflow/aacmcp/shared/store"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/catalog"
	"github.com/aacworkflow/aacmcp/test/harness"
)

// syncBuffer is safe to write from a command's goroutines while the test reads it.
type syncBuffer = harness.Buffer

type result struct {
	stdout, stderr string
	code           int
}

// run executes the CLI in process with an empty environment (plus env), so the
// developer's AACMCP_* variables cannot change what a test sees.
func run(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	return runCtx(t, context.Background(), env, args...)
}

func runCtx(t *testing.T, ctx context.Context, env map[string]string, args ...string) result {
	t.Helper()
	var out, errb syncBuffer
	code := Run(ctx, args, Env{
		Stdout: &out, Stderr: &errb,
		Getenv: func(k string) string { return env[k] },
	})
	return result{stdout: out.String(), stderr: errb.String(), code: code}
}

// mustRun runs a command that must succeed.
func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	r := run(t, nil, args...)
	if r.code != ExitOK {
		t.Fatalf("aacmcp %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

func decodeJSON[T any](t *testing.T, s string) T {
	t.Helper()
	var v T
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("output is not the expected JSON: %v\n%s", err, s)
	}
	return v
}

func TestToolsTableAndJSON(t *testing.T) {
	want := catalog.New(catalog.Deps{}).Tools()

	out := mustRun(t, "tools")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(want)+1 {
		t.Fatalf("want a header and %d rows, got %d lines:\n%s", len(want), len(lines), out)
	}
	if f := strings.Fields(lines[0]); f[0] != "TOOL" || f[1] != "READ-ONLY" {
		t.Errorf("header = %q", lines[0])
	}
	for i, tool := range want {
		f := strings.Fields(lines[i+1])
		a := tool.Annotations
		wantCells := []string{tool.Name, yesNo(a.ReadOnly), yesNo(a.Destructive), yesNo(a.Idempotent), yesNo(a.OpenWorld)}
		if strings.Join(f[:5], " ") != strings.Join(wantCells, " ") {
			t.Errorf("row %d = %q, want it to start with %q", i, lines[i+1], wantCells)
		}
		if !strings.Contains(lines[i+1], strings.Join(tool.Scopes, " ")) {
			t.Errorf("row %d = %q lacks scopes %v", i, lines[i+1], tool.Scopes)
		}
	}

	got := decodeJSON[[]toolJSON](t, mustRun(t, "tools", "--json"))
	if len(got) != len(want) {
		t.Fatalf("--json lists %d tools, want %d", len(got), len(want))
	}
	for i, tool := range want {
		g := got[i]
		if g.Name != tool.Name || g.Annotations.ReadOnlyHint != tool.Annotations.ReadOnly ||
			g.Annotations.DestructiveHint != tool.Annotations.Destructive ||
			g.Annotations.IdempotentHint != tool.Annotations.Idempotent ||
			g.Annotations.OpenWorldHint != tool.Annotations.OpenWorld ||
			strings.Join(g.Scopes, ",") != strings.Join(tool.Scopes, ",") ||
			g.RequiresConfirm != tool.Annotations.Destructive ||
			g.AcceptsIdempotencyKey != tool.AcceptsIdempotencyKey() {
			t.Errorf("tool %d: got %+v, catalog has %+v", i, g, tool)
		}
		if !json.Valid(g.InputSchema) || !json.Valid(g.OutputSchema) {
			t.Errorf("%s: schemas are not JSON", g.Name)
		}
	}
}

func TestUsageErrorsExitTwo(t *testing.T) {
	data := t.TempDir()
	tests := []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"unknown command", []string{"frobnicate"}, `unknown command "frobnicate"`},
		{"unknown subcommand", []string{"token", "frob"}, `unknown command "frob"`},
		{"group without subcommand", []string{"member"}, "needs a subcommand"},
		{"unknown flag", []string{"tools", "--colour"}, "unknown flag: --colour"},
		{"missing required flag", []string{"workspace", "create", "--data", data, "--id", "x"}, `"key" not set`},
		{"bad workspace key", []string{"workspace", "create", "--data", data, "--id", "x", "--key", "1AB"}, "--key"},
		{"bad workspace id", []string{"workspace", "create", "--data", data, "--id", "a#b", "--key", "AB"}, "--id"},
		{"bad role", []string{"member", "add", "--data", data, "--workspace", "w", "--user", "u", "--role", "owner"}, "--role"},
		{"unknown scope", []string{"token", "create", "--data", data, "--workspace", "w", "--user", "u", "--scopes", "issues:read,issues:delete"}, `unknown scope "issues:delete"`},
		{"empty scopes", []string{"token", "create", "--data", data, "--workspace", "w", "--user", "u", "--scopes", ","}, "--scopes"},
		{"bad ttl", []string{"token", "create", "--data", data, "--workspace", "w", "--user", "u", "--scopes", "issues:read", "--ttl", "-1h"}, "--ttl"},
		{"ttl not a duration", []string{"token", "create", "--data", data, "--workspace", "w", "--user", "u", "--scopes", "issues:read", "--ttl", "soon"}, "--ttl"},
		{"revoke a secret", []string{"token", "revoke", "--data", data, "aac_secret"}, "not a token id"},
		{"revoke without id", []string{"token", "revoke", "--data", data}, "accepts 1 arg"},
		{"bad backend", []string{"token", "list", "--data", data, "--backend", "mysql"}, `--backend "mysql"`},
		{"dynamodb without tables", []string{"token", "list", "--backend", "dynamodb"}, "--table and --tokens-table"},
		{"dynamo flag on sqlite", []string{"token", "list", "--data", data, "--table", "t"}, "--table needs --backend dynamodb"},
		{"serve bad addr", []string{"serve", "--data", data, "--addr", "8080"}, "--addr"},
		{"serve bad rate", []string{"serve", "--data", data, "--rate-limit", "fast"}, "--rate-limit"},
		{"serve bad cpu slots", []string{"serve", "--data", data, "--cpu-slots", "-2"}, "--cpu-slots"},
		{"serve webhook without secret", []string{"serve", "--data", data, "--autopilot-webhook", "https://runner.example.com/jobs"}, "--autopilot-secret-file"},
		{"serve plain http webhook", []string{"serve", "--data", data, "--autopilot-webhook", "http://runner.example.com/jobs", "--autopilot-secret-file", "f"}, "--autopilot-webhook"},
		{"serve bad origin", []string{"serve", "--data", data, "--allowed-origins", "example.com"}, "--allowed-origins"},
		{"serve bad log level", []string{"serve", "--data", data, "--addr", "127.0.0.1:0", "--log-level", "loud"}, "--log-level"},
		{"tail bad interval", []string{"audit", "tail", "--data", data, "--poll-interval", "0s"}, "--poll-interval"},
		{"positional args", []string{"tools", "extra"}, `unknown command "extra"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, nil, tc.args...)
			if r.code != ExitUsage {
				t.Fatalf("exit %d, want %d\nstderr: %s", r.code, ExitUsage, r.stderr)
			}
			if !strings.HasPrefix(r.stderr, "error: ") || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("stderr = %q, want an error mentioning %q", r.stderr, tc.want)
			}
			if !strings.Contains(r.stderr, "--help") {
				t.Errorf("stderr = %q, want a hint to --help", r.stderr)
			}
			if strings.Contains(r.stderr, "goroutine ") || strings.Contains(r.stderr, "panic") {
				t.Errorf("stderr shows a Go panic: %s", r.stderr)
			}
		})
	}
}

func TestHelpExitsZero(t *testing.T) {
	for _, args := range [][]string{{}, {"--help"}, {"token", "--help"}, {"serve", "--help"}, {"audit", "query", "--help"}} {
		r := run(t, nil, args...)
		if r.code != ExitOK || !strings.Contains(r.stdout, "Usage:") {
			t.Errorf("aacmcp %v: exit %d, stdout %q", args, r.code, r.stdout)
		}
	}
}

func TestDataDirFromEnvironment(t *testing.T) {
	data := t.TempDir()
	env := map[string]string{"AACMCP_DATA": data}
	if r := run(t, env, "workspace", "create", "--id", "envws", "--key", "ENV"); r.code != ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	// The same workspace is visible through an explicit --data, so the variable chose
	// the folder.
	r := run(t, nil, "workspace", "create", "--data", data, "--id", "envws", "--key", "ENV")
	if r.code != ExitFailure || !strings.Contains(r.stderr, "error: ") {
		t.Fatalf("creating it again: exit %d, stderr %q; want a conflict failure", r.code, r.stderr)
	}
}

// TestAdminCommandsSQLite walks the admin commands on the local backend and checks
// their effect through the store and the token verifier.
func TestAdminCommandsSQLite(t *testing.T) {
	data := t.TempDir()
	ctx := context.Background()
	d := []string{"--data", data}
	with := func(args ...string) []string { return append(args, d...) }

	ws := decodeJSON[struct {
		ID, Key, Name string
		CreatedAt     time.Time `json:"created_at"`
	}](t, mustRun(t, with("workspace", "create", "--id", "acme", "--key", "acme", "--name", "Acme", "--json")...))
	if ws.ID != "acme" || ws.Key != "ACME" || ws.Name != "Acme" {
		t.Errorf("workspace = %+v (the key is upper-cased)", ws)
	}
	mustRun(t, with("member", "add", "--workspace", "acme", "--user", "alice", "--role", "member")...)
	m := decodeJSON[struct {
		WorkspaceID string    `json:"workspace_id"`
		UserID      string    `json:"user_id"`
		Role        string    `json:"role"`
		CreatedAt   time.Time `json:"created_at"`
	}](t, mustRun(t, with("member", "add", "--workspace", "acme", "--user", "alice", "--role", "admin", "--json")...))
	if m.Role != "admin" {
		t.Errorf("role after the second add = %q, want admin", m.Role)
	}
	out := mustRun(t, with("agent", "add", "--workspace", "acme", "--id", "bot-1", "--name", "Bot one")...)
	if !strings.Contains(out, "bot-1") {
		t.Errorf("agent add printed %q", out)
	}

	tok := decodeJSON[createdToken](t, mustRun(t, with("token", "create", "--workspace", "acme", "--user", "alice",
		"--scopes", "issues:write,issues:read", "--ttl", "2h", "--name", "ci", "--json")...))
	if !auth.ValidFormat(tok.Token) || !strings.HasPrefix(tok.TokenID, "tok_") {
		t.Fatalf("token create --json = %+v", tok)
	}
	if strings.Join(tok.Scopes, " ") != "issues:read issues:write" || tok.ExpiresAt.Sub(tok.CreatedAt) != 2*time.Hour {
		t.Errorf("token record = %+v", tok)
	}

	// The secret works against the same database, and only there.
	st, err := openSQLite(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	v := &auth.Verifier{Store: st}
	p, err := v.Verify(ctx, tok.Token)
	if err != nil || p.WorkspaceID != "acme" || p.UserID != "alice" || p.TokenID != tok.TokenID {
		t.Fatalf("Verify = %+v, %v", p, err)
	}
	st.Close()

	// Human output of token create shows the secret once, with the warning.
	r := run(t, nil, with("token", "create", "--workspace", "acme", "--user", "ghost", "--scopes", "issues:read")...)
	if r.code != ExitOK || !strings.Contains(r.stdout, "aac_") || !strings.Contains(r.stdout, "shown once") {
		t.Fatalf("token create: exit %d, %q", r.code, r.stdout)
	}
	if !strings.Contains(r.stderr, "not a member") {
		t.Errorf("no warning for a non-member: %q", r.stderr)
	}

	list := decodeJSON[[]auth.TokenRecord](t, mustRun(t, with("token", "list", "--workspace", "acme", "--json")...))
	if len(list) != 2 {
		t.Fatalf("token list: %d records, want 2", len(list))
	}
	if raw := mustRun(t, with("token", "list", "--json")...); strings.Contains(raw, tok.Token) || strings.Contains(raw, auth.Hash(tok.Token)) {
		t.Error("token list leaks a secret or its hash")
	}
	table := mustRun(t, with("token", "list")...)
	if !strings.Contains(table, tok.TokenID) || !strings.Contains(table, "active") {
		t.Errorf("token list table:\n%s", table)
	}

	rev := decodeJSON[auth.TokenRecord](t, mustRun(t, with("token", "revoke", tok.TokenID, "--json")...))
	if rev.RevokedAt == nil || rev.TokenID != tok.TokenID {
		t.Fatalf("revoke --json = %+v", rev)
	}
	st, err = openSQLite(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	v = &auth.Verifier{Store: st}
	if _, err := v.Verify(ctx, tok.Token); !apperr.Is(err, apperr.InvalidToken) {
		t.Errorf("Verify after revoke = %v, want invalid_token", err)
	}
	if table := mustRun(t, with("token", "list", "--workspace", "acme")...); !strings.Contains(table, "revoked") {
		t.Errorf("token list does not show the revocation:\n%s", table)
	}

	// The e-mail links a member to an OAuth sign-in: set, kept by a role change, removed
	// by --email "".
	type member struct {
		WorkspaceID string    `json:"workspace_id"`
		UserID      string    `json:"user_id"`
		Role        string    `json:"role"`
		Email       string    `json:"email"`
		CreatedAt   time.Time `json:"created_at"`
	}
	// undated drops the time, after checking there is one.
	undated := func(m member) member {
		if m.CreatedAt.IsZero() {
			t.Errorf("member %+v lacks created_at", m)
		}
		m.CreatedAt = time.Time{}
		return m
	}
	for _, step := range []struct {
		args []string
		want member
	}{
		{[]string{"--role", "admin", "--email", "Alice@Example.com"}, member{"acme", "alice", "admin", "alice@example.com", time.Time{}}},
		{[]string{"--role", "viewer"}, member{"acme", "alice", "viewer", "alice@example.com", time.Time{}}},
		{[]string{"--role", "member", "--email", ""}, member{"acme", "alice", "member", "", time.Time{}}},
		{[]string{"--role", "admin", "--email", "a.l+ice@例え.jp"}, member{"acme", "alice", "admin", "a.l+ice@例え.jp", time.Time{}}},
	} {
		args := append([]string{"member", "add", "--workspace", "acme", "--user", "alice", "--json"}, step.args...)
		if got := undated(decodeJSON[member](t, mustRun(t, with(args...)...))); got != step.want {
			t.Errorf("member add %v = %+v, want %+v", step.args, got, step.want)
		}
		if got, err := st.GetMember(ctx, "acme", "alice"); err != nil || got.Email != step.want.Email || string(got.Role) != step.want.Role {
			t.Errorf("after member add %v: stored %+v %v", step.args, got, err)
		}
	}
	mustRun(t, with("member", "add", "--workspace", "acme", "--user", "bob", "--role", "viewer", "--email", "bob@example.com")...)
	members := decodeJSON[[]member](t, mustRun(t, with("member", "list", "--workspace", "acme", "--json")...))
	for i := range members {
		members[i] = undated(members[i])
	}
	if want := []member{{"acme", "alice", "admin", "a.l+ice@例え.jp", time.Time{}}, {"acme", "bob", "viewer", "bob@example.com", time.Time{}}}; !slices.Equal(members, want) {
		t.Errorf("member list --json = %+v, want %+v", members, want)
	}
	if table := mustRun(t, with("member", "list", "--workspace", "acme")...); !strings.Contains(table, "bob@example.com") || !strings.Contains(table, "EMAIL") {
		t.Errorf("member list table:\n%s", table)
	}

	mustRun(t, with("member", "remove", "--workspace", "acme", "--user", "alice")...)
	if _, err := st.GetMember(ctx, "acme", "alice"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetMember after remove = %v, want not_found", err)
	}
}

func TestAdminFailuresExitOne(t *testing.T) {
	data := t.TempDir()
	mustRun(t, "workspace", "create", "--data", data, "--id", "acme", "--key", "ACME")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"duplicate workspace", []string{"workspace", "create", "--id", "acme", "--key", "ACME"}, "error: "},
		{"member of unknown workspace", []string{"member", "add", "--workspace", "nope", "--user", "u", "--role", "viewer"}, `workspace "nope"`},
		{"agent of unknown workspace", []string{"agent", "add", "--workspace", "nope", "--id", "a"}, `workspace "nope"`},
		{"token for unknown workspace", []string{"token", "create", "--workspace", "nope", "--user", "u", "--scopes", "issues:read"}, `workspace "nope"`},
		{"remove a non-member", []string{"member", "remove", "--workspace", "acme", "--user", "ghost"}, `member "ghost"`},
		{"members of unknown workspace", []string{"member", "list", "--workspace", "nope"}, `workspace "nope"`},
		{"revoke unknown token", []string{"token", "revoke", "tok_01JUNKJUNKJUNKJUNKJUNKJUNK"}, "tok_01JUNKJUNKJUNKJUNKJUNKJUNK"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, nil, append(tc.args, "--data", data)...)
			if r.code != ExitFailure {
				t.Fatalf("exit %d, want %d; stderr %q", r.code, ExitFailure, r.stderr)
			}
			if !strings.Contains(r.stderr, tc.want) || strings.Contains(r.stderr, "--help") {
				t.Errorf("stderr = %q, want %q and no usage hint", r.stderr, tc.want)
			}
		})
	}
}

// TestAdminHumanOutput pins, byte for byte, what the admin commands print without
// --json.
func TestAdminHumanOutput(t *testing.T) {
	data := t.TempDir()
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	exec := func(args ...string) string {
		t.Helper()
		var out, errb syncBuffer
		code := Run(context.Background(), append(args, "--data", data), Env{
			Stdout: &out, Stderr: &errb,
			Getenv: func(string) string { return "" },
			Now:    func() time.Time { return now },
		})
		if code != ExitOK {
			t.Fatalf("aacmcp %s: exit %d\nstderr: %s", strings.Join(args, " "), code, errb.String())
		}
		return out.String()
	}
	steps := []struct {
		args []string
		want string
	}{
		{[]string{"workspace", "create", "--id", "acme", "--key", "acme"}, "created workspace acme (issue keys ACME-1, ACME-2, ...)\n"},
		{[]string{"member", "add", "--workspace", "acme", "--user", "alice", "--role", "member"}, "alice is member in workspace acme\n"},
		{[]string{"agent", "add", "--workspace", "acme", "--id", "bot"}, "added agent bot to workspace acme\n"},
		{[]string{"member", "remove", "--workspace", "acme", "--user", "alice"}, "removed alice from workspace acme\n"},
		{[]string{"member", "add", "--workspace", "acme", "--user", "bob", "--role", "viewer", "--email", "Bob@Example.COM"},
			"bob (bob@example.com) is viewer in workspace acme\n"},
		{[]string{"member", "add", "--workspace", "acme", "--user", "carol", "--role", "admin"}, "carol is admin in workspace acme\n"},
		{[]string{"member", "list", "--workspace", "acme"}, "USER   ROLE    EMAIL            ADDED\n" +
			"bob    viewer  bob@example.com  2026-03-04T05:06:07Z\n" +
			"carol  admin   -                2026-03-04T05:06:07Z\n"},
		{[]string{"token", "list"}, "TOKEN ID  NAME  WORKSPACE  USER  SCOPES  EXPIRES  STATE\n"},
	}
	for _, s := range steps {
		if got := exec(s.args...); got != s.want {
			t.Errorf("aacmcp %s printed %q, want %q", strings.Join(s.args, " "), got, s.want)
		}
	}

	created := exec("token", "create", "--workspace", "acme", "--user", "bob", "--scopes", "issues:read,issues:write", "--ttl", "1h")
	id := strings.Fields(created)[1]
	secret := strings.Fields(created)[11]
	want := "token " + id + " for bob in acme, scopes issues:read issues:write, expires 2026-03-04T06:06:07Z\n" +
		"\n  " + secret + "\n\nThis secret is shown once; only its hash is stored.\n"
	if !strings.HasPrefix(id, "tok_") || !auth.ValidFormat(secret) || created != want {
		t.Errorf("token create printed %q, want %q", created, want)
	}
	if got, want := exec("token", "list"),
		"TOKEN ID                        NAME  WORKSPACE  USER  SCOPES                    EXPIRES               STATE\n"+
			id+"  -     acme       bob   issues:read,issues:write  2026-03-04T06:06:07Z  active\n"; got != want {
		t.Errorf("token list printed\n%s\nwant\n%s", got, want)
	}
	if got, want := exec("token", "revoke", id), "revoked "+id+" at 2026-03-04T05:06:07Z\n"; got != want {
		t.Errorf("token revoke printed %q, want %q", got, want)
	}
}

// TestAdminChecksBeforeOpening: a mistake on the command line is reported before the
// store is opened (no data folder appears) and before the backend flags are judged.
func TestAdminChecksBeforeOpening(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"workspace id", []string{"workspace", "create", "--id", "a#b", "--key", "AB"}, `--id "a#b"`},
		{"workspace key", []string{"workspace", "create", "--id", "ab", "--key", "1AB"}, `--key "1AB"`},
		{"member role", []string{"member", "add", "--workspace", "w", "--user", "u", "--role", "owner"}, `--role "owner"`},
		{"member user", []string{"member", "add", "--workspace", "w", "--user", "u/v", "--role", "viewer"}, `--user "u/v"`},
		{"member e-mail", []string{"member", "add", "--workspace", "w", "--user", "u", "--role", "viewer", "--email", "not an address"}, `--email "not an address"`},
		{"agent id", []string{"agent", "add", "--workspace", "w", "--id", "b t"}, `--id "b t"`},
		{"token scopes", []string{"token", "create", "--workspace", "w", "--user", "u", "--scopes", "admin"}, `unknown scope "admin"`},
		{"token ttl", []string{"token", "create", "--workspace", "w", "--user", "u", "--scopes", "issues:read", "--ttl", "0s"}, "--ttl 0s"},
		{"revoke a secret", []string{"token", "revoke", "aac_secret"}, "not a token id"},
		{"json on member remove", []string{"member", "remove", "--workspace", "w", "--user", "u", "--json"}, "unknown flag: --json"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := t.TempDir() + "/data"
			r := run(t, nil, append(tc.args, "--data", data, "--backend", "mysql")...)
			if r.code != ExitUsage || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want a usage error with %q", r.code, r.stderr, tc.want)
			}
			if _, err := os.Stat(data); err == nil {
				t.Errorf("the data folder was created by a command that failed its checks")
			}
		})
	}
}
