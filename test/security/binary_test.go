package security

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/audit/file"
	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/test/load/server"
)

// TestSecretsNeverLeak runs the built server at debug log level, presents every
// token the world holds (valid, expired, revoked, of a removed member), forms that
// differ from real secrets by one character, and well-formed unknown ones, on both
// transports and with calls that succeed, are denied and fail. Then it greps every
// byte the server produced — stdout, stderr, every file under the data folder
// (audit files, outbox, the SQLite database and its WAL) and every response — for
// each secret's random part. Arguments are planted with a marker that must reach
// the audit files only as a digest.
func TestSecretsNeverLeak(t *testing.T) {
	dir := t.TempDir()
	w := server.Seed(t, dir, 2, 1)
	p := server.Start(t, dir, "--log-level", "debug")
	c := server.NewClient(p.Base, 4)

	secrets := w.Secrets()
	var presented []string
	for _, s := range secrets {
		presented = append(presented, s, s[:len(s)-1], s+"Z", s[:len(s)-1]+string(flip(s[len(s)-1])))
	}
	for range 3 {
		s, _, err := auth.Mint()
		if err != nil {
			t.Fatal(err)
		}
		presented = append(presented, s)
	}

	tn := w.Tenants[0]
	calls := []struct {
		tool string
		args string
	}{
		{"list_issues", `{"query":"` + marker + `"}`},
		{"create_issue", `{"title":"` + marker + `","labels":["` + marker + `"]}`},
		{"get_issue", `{"issue_id":"` + w.Tenants[1].Issues[0].ID + `"}`},
		{"delete_issue", `{"issue_id":"` + tn.Issues[2].ID + `"}`},
		{"comment_issue", `{"issue_id":"` + tn.Issues[0].ID + `","body":"` + marker + `","idempotency_key":"leak-test-key"}`},
		{"update_issue", `{"issue_id":"` + tn.Issues[1].ID + `","title":5}`},
		{"trigger_autopilot", `{"issue_id":"` + tn.Issues[1].ID + `","instructions":"` + marker + `"}`},
		{"no_such_tool", `{}`},
	}
	var responses bytes.Buffer
	n, rejected := 0, 0
	for _, tok := range presented {
		for _, tr := range transports {
			for _, cl := range calls {
				r, err := c.Call(context.Background(), tr, tok, cl.tool, cl.args, fmt.Sprintf("leak-%d", n))
				if err != nil {
					t.Fatal(err)
				}
				n++
				responses.Write(r.Body)
				for k, vs := range r.Header {
					responses.WriteString(k + ": " + strings.Join(vs, ",") + "\n")
				}
			}
		}
	}
	// GET /tools too: logged, and audited when the token is refused.
	for _, tok := range presented[:4] {
		req, _ := http.NewRequest(http.MethodGet, p.Base+"/tools", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := c.HTTP.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = responses.ReadFrom(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusUnauthorized {
			rejected++
		}
	}
	p.Stop(t)

	haystacks := map[string][]byte{
		"stdout":    []byte(p.Stdout()),
		"stderr":    []byte(p.Stderr()),
		"responses": responses.Bytes(),
	}
	files := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		haystacks[path] = b
		files++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// A clean stop compacts the open hour into Parquet, whose compressed bytes a grep
	// cannot see into: the decoded records are searched too.
	var decoded bytes.Buffer
	if err := file.Scan(dir, func(e file.Entry) error {
		if e.Err != nil {
			return e.Err
		}
		line, err := audit.MarshalLine(e.Record)
		decoded.Write(line)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	haystacks[filepath.Join(dir, file.Subdir, "decoded-records")] = decoded.Bytes()
	if !bytes.Contains(haystacks["stderr"], []byte("level=DEBUG")) && !bytes.Contains(haystacks["stderr"], []byte("level=INFO")) {
		t.Fatalf("the server logged nothing: the grep would prove nothing\n%s", p.Stderr())
	}
	// Positive control: the public token id is in the audit files, so the grep did
	// read them.
	control := false
	for where, b := range haystacks {
		if strings.Contains(where, string(filepath.Separator)+file.Subdir+string(filepath.Separator)) && bytes.Contains(b, []byte(tn.TokenIDs[server.TokAdmin])) {
			control = true
		}
	}
	if !control {
		t.Errorf("no audit file names the admin's token id: the grep did not see the audit files")
	}
	for _, s := range presented {
		needle := s
		if strings.HasPrefix(s, auth.TokenPrefix) && len(s) > len(auth.TokenPrefix)+16 {
			// The random part alone: a log that cut the prefix still leaks.
			needle = s[len(auth.TokenPrefix) : len(auth.TokenPrefix)+24]
		}
		for where, b := range haystacks {
			if bytes.Contains(b, []byte(needle)) {
				t.Errorf("a token secret (%s...) appears in %s", s[:8], where)
			}
		}
	}

	// Arguments reach the audit only as a digest.
	recs := 0
	err = file.Scan(dir, func(e file.Entry) error {
		if e.Err != nil {
			return e.Err
		}
		recs++
		line, err := audit.MarshalLine(e.Record)
		if err != nil {
			return err
		}
		if bytes.Contains(line, []byte(marker)) {
			t.Errorf("audit record %s holds argument text", e.Record.EventID)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if recs != n+rejected {
		t.Errorf("%d audit records for %d calls and %d refused GET /tools", recs, n, rejected)
	}
	t.Logf("%d secrets and %d variants presented in %d calls; grepped %d files, %d bytes of logs and %d bytes of responses: no secret found",
		len(secrets), len(presented)-len(secrets), n, files, len(haystacks["stderr"])+len(haystacks["stdout"]), len(haystacks["responses"]))
}

// TestRateLimitEndToEnd runs the built server with --rate-limit and checks the
// limiter from the outside: per token and per tool, shared by both transports, REST
// 429 with Retry-After, MCP tool error with retry_after_seconds, audited as denied
// rate_limited and counted as denied in the usage counters.
func TestRateLimitEndToEnd(t *testing.T) {
	const limit = 4
	for attempt := 1; ; attempt++ {
		dir := t.TempDir()
		w := server.Seed(t, dir, 1, 1)
		p := server.Start(t, dir, "--rate-limit", strconv.Itoa(limit)+"/h")
		hour := time.Now().UTC().Truncate(time.Hour)
		ok := rateLimitScenario(t, p, w)
		p.Stop(t)
		if time.Now().UTC().Truncate(time.Hour).Equal(hour) {
			if ok {
				checkRateLimitAudit(t, dir, limit)
			}
			return
		}
		// The fixed window turned over during the scenario: its counts are split.
		if attempt == 2 {
			t.Fatal("the hour turned twice during the scenario")
		}
	}
}

func rateLimitScenario(t *testing.T, p *server.Proc, w *server.World) bool {
	t.Helper()
	c := server.NewClient(p.Base, 2)
	tn := w.Tenants[0]
	admin, member := tn.Tokens[server.TokAdmin], tn.Tokens[server.TokMember]
	call := func(tr, tok, tool string, args any) server.Response {
		t.Helper()
		r, err := c.Call(context.Background(), tr, tok, tool, args, "")
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	// The budget is shared by the transports: alternate them.
	for i := range 4 {
		tr := transports[i%2]
		if r := call(tr, admin, "list_issues", `{}`); r.Code != "" {
			t.Fatalf("call %d within the limit over %s: %q", i+1, tr, r.Code)
		}
	}
	r := call(server.REST, admin, "list_issues", `{}`)
	if r.Status != http.StatusTooManyRequests || r.Code != "rate_limited" {
		t.Fatalf("REST over the limit: %d %q, want 429 rate_limited", r.Status, r.Code)
	}
	ra, err := strconv.Atoi(r.RetryAfter)
	if err != nil || ra < 1 || ra > 3600 {
		t.Errorf("Retry-After %q, want whole seconds in 1..3600", r.RetryAfter)
	}
	if r.RetryAfterSeconds < ra-1 || r.RetryAfterSeconds > ra+1 {
		t.Errorf("retry_after_seconds %d disagrees with Retry-After %d", r.RetryAfterSeconds, ra)
	}
	r = call(server.MCP, admin, "list_issues", `{}`)
	if r.Status != http.StatusOK || r.Code != "rate_limited" || r.RPCCode != 0 || r.RetryAfterSeconds < 1 {
		t.Errorf("MCP over the limit: HTTP %d code %q rpc %d retry_after_seconds %d, want a tool error rate_limited with a retry time",
			r.Status, r.Code, r.RPCCode, r.RetryAfterSeconds)
	}
	// Per tool: another tool of the same token is not limited.
	if r := call(server.REST, admin, "get_issue", map[string]any{"issue_id": tn.Issues[0].ID}); r.Code != "" {
		t.Errorf("another tool of the limited token: %q", r.Code)
	}
	// Per token: another token for the same tool is not limited.
	if r := call(server.MCP, member, "list_issues", `{}`); r.Code != "" {
		t.Errorf("another token for the limited tool: %q", r.Code)
	}
	return !t.Failed()
}

func checkRateLimitAudit(t *testing.T, dir string, limit int) {
	t.Helper()
	var limited, total int
	err := file.Scan(dir, func(e file.Entry) error {
		if e.Err != nil {
			return e.Err
		}
		total++
		if e.Record.Reason == "rate_limited" {
			limited++
			if e.Record.Outcome != "denied" || e.Record.Tool != "list_issues" {
				t.Errorf("rate_limited record: outcome %q tool %q", e.Record.Outcome, e.Record.Tool)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if limited != 2 || total != limit+4 {
		t.Errorf("audit: %d rate_limited of %d records, want 2 of %d", limited, total, limit+4)
	}
	st := server.OpenStore(t, dir)
	day := time.Now().UTC().Format(time.DateOnly)
	rows, err := st.ListUsage(context.Background(), "ws1", day, day)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Tool == "list_issues" && (r.Calls != int64(limit)+3 || r.Denied != 2) {
			t.Errorf("usage of list_issues: calls %d denied %d, want %d and 2", r.Calls, r.Denied, limit+3)
		}
	}
}
