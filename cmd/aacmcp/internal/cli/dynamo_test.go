package cli

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/audit/file"
	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/store"
	"github.com/aacworkflow/aacmcp/shared/store/dynamo"
	"github.com/aacworkflow/aacmcp/test/emulator"
)

// awsEnv points the SDK's default configuration at nothing but the emulator's static
// credentials, so no developer profile or instance metadata is consulted.
func awsEnv(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", emulator.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", emulator.SecretKey)
	t.Setenv("AWS_REGION", emulator.Region)
	t.Setenv("AWS_CONFIG_FILE", "/dev/null")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", "")
}

// TestDynamoDBBackend runs init and every admin command with --backend dynamodb
// against dynalite, and checks the result through the DynamoDB store itself.
func TestDynamoDBBackend(t *testing.T) {
	awsEnv(t)
	db := emulator.StartT(t, emulator.Dynalite)
	ctx := context.Background()
	data := t.TempDir() // must stay unused: nothing may fall back to SQLite
	be := []string{"--backend", "dynamodb", "--table", "main-t", "--tokens-table", "tokens-t", "--endpoint-url", db.Endpoint, "--data", data}
	with := func(args ...string) []string { return append(args, be...) }

	r := run(t, nil, with("init")...)
	if r.code != ExitOK || !strings.Contains(r.stdout, "ready") {
		t.Fatalf("init: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	// dynalite lacks UpdateTimeToLive: one warning line, and init goes on.
	if n := strings.Count(r.stderr, "\n"); n != 1 || !strings.Contains(r.stderr, "UpdateTimeToLive") {
		t.Errorf("init stderr = %q, want one warning line about TTL", r.stderr)
	}
	// A second init keeps the tables.
	if r := run(t, nil, with("init")...); r.code != ExitOK {
		t.Fatalf("second init: exit %d: %s", r.code, r.stderr)
	}

	client := dynamodb.NewFromConfig(db.AWSConfig())
	for name, spec := range map[string]dynamo.TableSpec{"main-t": dynamo.Main, "tokens-t": dynamo.Tokens} {
		out, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
		if err != nil {
			t.Fatalf("describe %s: %v", name, err)
		}
		if err := dynamo.MatchesSpec(out.Table, spec); err != nil {
			t.Errorf("table %s: %v", name, err)
		}
	}

	mustRun(t, with("workspace", "create", "--id", "acme", "--key", "ACME")...)
	mustRun(t, with("member", "add", "--workspace", "acme", "--user", "alice", "--role", "member", "--email", "Alice@Example.com")...)
	mustRun(t, with("member", "add", "--workspace", "acme", "--user", "alice", "--role", "admin")...) // keeps the e-mail
	mustRun(t, with("member", "add", "--workspace", "acme", "--user", "bob", "--role", "viewer")...)
	if got, want := mustRun(t, with("member", "list", "--workspace", "acme")...), "USER   ROLE    EMAIL              ADDED\n"; !strings.HasPrefix(got, want) ||
		!strings.Contains(got, "alice  admin   alice@example.com") || !strings.Contains(got, "bob    viewer  -") {
		t.Errorf("member list on DynamoDB:\n%s", got)
	}
	mustRun(t, with("agent", "add", "--workspace", "acme", "--id", "bot")...)
	tok := decodeJSON[createdToken](t, mustRun(t, with("token", "create", "--workspace", "acme", "--user", "alice", "--scopes", "issues:read", "--json")...))
	mustRun(t, with("member", "remove", "--workspace", "acme", "--user", "bob")...)

	st := dynamo.New(client, "main-t", "tokens-t")
	if m, err := st.GetMember(ctx, "acme", "alice"); err != nil || m.Role != "admin" || m.Email != "alice@example.com" {
		t.Errorf("alice = %+v, %v", m, err)
	}
	if _, err := st.GetMember(ctx, "acme", "bob"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("bob after remove: %v, want not_found", err)
	}
	if _, err := st.GetAgent(ctx, "acme", "bot"); err != nil {
		t.Errorf("agent: %v", err)
	}
	v := &auth.Verifier{Store: st}
	if p, err := v.Verify(ctx, tok.Token); err != nil || p.UserID != "alice" || p.WorkspaceID != "acme" {
		t.Fatalf("Verify = %+v, %v", p, err)
	}

	list := decodeJSON[[]auth.TokenRecord](t, mustRun(t, with("token", "list", "--workspace", "acme", "--json")...))
	if len(list) != 1 || list[0].TokenID != tok.TokenID {
		t.Errorf("token list = %+v", list)
	}
	mustRun(t, with("token", "revoke", tok.TokenID)...)
	if _, err := v.Verify(ctx, tok.Token); !apperr.Is(err, apperr.InvalidToken) {
		t.Errorf("Verify after revoke: %v, want invalid_token", err)
	}

	// The OAuth admin commands keep their state in the same tables.
	mustRun(t, with("oauth", "clients", "allow", "https://claude.example/cimd")...)
	pol := decodeJSON[store.OAuthPolicy](t, mustRun(t, with("oauth", "clients", "policy", "allowlist", "--json")...))
	if pol.Mode != store.OAuthPolicyAllowlist || len(pol.Allowed) != 1 {
		t.Errorf("oauth policy on DynamoDB = %+v", pol)
	}
	if gs := decodeJSON[[]store.OAuthGrant](t, mustRun(t, with("oauth", "grants", "list", "--json")...)); len(gs) != 0 {
		t.Errorf("oauth grants list on new tables = %+v", gs)
	}
	if r := run(t, nil, with("oauth", "grants", "revoke", "grant_nope")...); r.code != ExitFailure {
		t.Errorf("oauth grants revoke of an unknown grant: exit %d: %s", r.code, r.stderr)
	}

	// Failures against the backend are exit 1; the same workspace twice is a conflict.
	if r := run(t, nil, with("workspace", "create", "--id", "acme", "--key", "ACME")...); r.code != ExitFailure {
		t.Errorf("duplicate workspace: exit %d: %s", r.code, r.stderr)
	}
	if r := run(t, nil, with("member", "add", "--workspace", "nope", "--user", "u", "--role", "viewer")...); r.code != ExitFailure {
		t.Errorf("member of unknown workspace: exit %d: %s", r.code, r.stderr)
	}
	if ok, _ := dbFileExists(data); ok {
		t.Error("a dynamodb command created a SQLite database")
	}
}

func dbFileExists(dataDir string) (bool, error) {
	_, err := os.Stat(dbFile(dataDir))
	return err == nil, err
}

func TestDynamoDBFlagErrors(t *testing.T) {
	awsEnv(t)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"same table twice", []string{"init", "--backend", "dynamodb", "--table", "aaa", "--tokens-table", "aaa"}, "must differ"},
		{"bad endpoint", []string{"init", "--backend", "dynamodb", "--table", "aaa", "--tokens-table", "bbb", "--endpoint-url", "localhost:8000"}, "--endpoint-url"},
		{"no tokens table", []string{"token", "list", "--backend", "dynamodb", "--table", "a"}, "--tokens-table"},
		{"short table name", []string{"token", "list", "--backend", "dynamodb", "--table", "ab", "--tokens-table", "tokens"}, "--table \"ab\""},
		{"bad table name", []string{"token", "list", "--backend", "dynamodb", "--table", "main", "--tokens-table", "to/kens"}, "--tokens-table"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, nil, tc.args...)
			if r.code != ExitUsage || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want usage error with %q", r.code, r.stderr, tc.want)
			}
		})
	}
	// Without a region anywhere the error says how to give one.
	t.Setenv("AWS_REGION", "")
	r := run(t, nil, "token", "list", "--backend", "dynamodb", "--table", "aaa", "--tokens-table", "bbb")
	if r.code != ExitUsage || !strings.Contains(r.stderr, "--region") {
		t.Errorf("no region: exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestInitSQLite(t *testing.T) {
	data := t.TempDir() + "/nested/data"
	out := mustRun(t, "init", "--data", data)
	if !strings.Contains(out, dbFile(data)) {
		t.Errorf("init printed %q", out)
	}
	if ok, err := dbFileExists(data); !ok {
		t.Fatalf("no database after init: %v", err)
	}
	mustRun(t, "init", "--data", data) // twice is fine
}

// TestGateway runs `aacmcp gateway` in process against dynalite, with the audit going
// to files under --data, and checks the three paths API Gateway has: no header (401
// without the authorizer), a bad token (the authorizer refuses) and a good one (the
// function answers).
func TestGateway(t *testing.T) {
	awsEnv(t)
	db := emulator.StartT(t, emulator.Dynalite)
	data := t.TempDir()
	be := []string{"--backend", "dynamodb", "--table", "gw-main", "--tokens-table", "gw-tokens", "--endpoint-url", db.Endpoint, "--data", data}
	with := func(args ...string) []string { return append(args, be...) }
	mustRun(t, with("init")...)
	mustRun(t, with("workspace", "create", "--id", "demo", "--key", "AAC")...)
	mustRun(t, with("member", "add", "--workspace", "demo", "--user", "dev", "--role", "admin")...)
	tok := decodeJSON[createdToken](t, mustRun(t, with("token", "create", "--workspace", "demo", "--user", "dev", "--scopes", "issues:read,issues:write", "--json")...))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb syncBuffer
	ready := make(chan string, 1)
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, append([]string{"gateway", "--addr", "127.0.0.1:0"}, be...), Env{
			Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" },
			Ready: func(base string) { ready <- base },
		})
	}()
	var base string
	select {
	case base = <-ready:
	case code := <-done:
		t.Fatalf("gateway exited %d: %s", code, errb.String())
	case <-time.After(30 * time.Second):
		t.Fatal("gateway did not listen within 30s")
	}
	if !strings.Contains(out.String(), "aacmcp gateway serving "+base+"/mcp") {
		t.Errorf("banner:\n%s", out.String())
	}

	res, err := http.Post(base+"/tools/list_issues", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(res.Header.Get("WWW-Authenticate"), "Bearer ") {
		t.Errorf("no Authorization: %d %q", res.StatusCode, res.Header.Get("WWW-Authenticate"))
	}
	if status, body := callREST(t, base, "aac_"+strings.Repeat("x", 38), "list_issues", `{}`); status != http.StatusUnauthorized {
		t.Errorf("bad token: %d %v", status, body)
	}
	if status, body := callREST(t, base, tok.Token, "create_issue", `{"title":"through the gateway"}`); status != http.StatusOK || body["key"] != "AAC-1" {
		t.Errorf("create_issue: %d %v", status, body)
	}
	if status, body := callREST(t, base, tok.Token, "delete_issue", `{"issue_id":"AAC-1"}`); status != http.StatusBadRequest || body["code"] != "destructive_flag_missing" {
		t.Errorf("delete_issue without confirm: %d %v", status, body)
	}
	cancel()
	if code := <-done; code != ExitOK {
		t.Fatalf("gateway exited %d: %s", code, errb.String())
	}

	recs, _, err := file.ReadAll(data)
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]int{}
	for _, r := range recs {
		reasons[r.Tool+"/"+r.Reason]++
	}
	want := map[string]int{"list_issues/invalid_token": 2, "create_issue/": 1, "delete_issue/destructive_flag_missing": 1}
	if len(recs) != 4 || !maps.Equal(reasons, want) {
		t.Errorf("audit records by tool/reason = %v, want %v", reasons, want)
	}
}

func TestGatewayFlagErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"sqlite backend", []string{"gateway"}, "--backend dynamodb"},
		{"bad rate", []string{"gateway", "--backend", "dynamodb", "--table", "aaa", "--tokens-table", "bbb", "--rate-limit", "lots"}, "--rate-limit"},
		{"bad function url", []string{"gateway", "--backend", "dynamodb", "--table", "aaa", "--tokens-table", "bbb", "--function-url", "nowhere"}, "--function-url"},
		{"bad addr", []string{"gateway", "--addr", "x", "--backend", "dynamodb", "--table", "aaa", "--tokens-table", "bbb"}, "--addr"},
		{"bad stage", []string{"gateway", "--stage", "pr/od", "--backend", "dynamodb", "--table", "aaa", "--tokens-table", "bbb"}, "--stage"},
		{"issuer without client", []string{"gateway", "--oidc-issuer", "https://op.example", "--backend", "dynamodb", "--table", "aaa", "--tokens-table", "bbb"}, "--oidc-client-id"},
		{"client without issuer", []string{"gateway", "--oidc-client-id", "c", "--backend", "dynamodb", "--table", "aaa", "--tokens-table", "bbb"}, "--oidc-issuer"},
		{"dev off loopback", []string{"gateway", "--dev", "--addr", "0.0.0.0:0", "--backend", "dynamodb", "--table", "aaa", "--tokens-table", "bbb", "--endpoint-url", "http://127.0.0.1:1"}, "loopback only"},
		{"api addr without a front door", []string{"gateway", "--api-addr", "127.0.0.1:0", "--backend", "dynamodb", "--table", "aaa", "--tokens-table", "bbb"}, "--front-door"},
		{"bad api addr", []string{"gateway", "--front-door", "--api-addr", "x", "--backend", "dynamodb", "--table", "aaa", "--tokens-table", "bbb"}, "--api-addr"},
		{"dev with the API off loopback", []string{"gateway", "--dev", "--front-door", "--api-addr", "0.0.0.0:0", "--backend", "dynamodb", "--table", "aaa", "--tokens-table", "bbb"}, "loopback only"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, nil, tc.args...)
			if r.code != ExitUsage || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want usage error with %q", r.code, r.stderr, tc.want)
			}
		})
	}
}
