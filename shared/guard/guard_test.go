package guard_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/autopilot"
	"github.com/aacworkflow/aacmcp/shared/catalog"
	"github.com/aacworkflow/aacmcp/shared/guard"
	gt "github.com/aacworkflow/aacmcp/shared/guard/guardtest"
	"github.com/aacworkflow/aacmcp/shared/ratelimit"
	"github.com/aacworkflow/aacmcp/shared/store"
)

type env struct {
	w    *gt.World
	sink *gt.MemorySink
	g    *guard.Guard
}

// testHMAC keys the digests of newEnv's guard, so tests can compute them.
var testHMAC, _ = audit.NewHMAC([]byte("0123456789abcdef0123456789abcdef"))

func newEnv(t *testing.T, limiter guard.Limiter) *env {
	t.Helper()
	w := gt.NewWorld(t)
	sink := &gt.MemorySink{}
	g := guard.New(guard.Config{Catalog: w.Catalog, Store: w.Store, Audit: sink, Limiter: limiter, HMAC: testHMAC})
	if errs := g.SchemaErrors(); len(errs) > 0 {
		t.Fatalf("catalog schemas do not compile: %v", errs)
	}
	return &env{w: w, sink: sink, g: g}
}

// call runs one call and checks the invariant every call keeps: exactly one new,
// valid audit record, matching the result.
func (e *env) call(t *testing.T, p *auth.Principal, tool, args string) guard.Result {
	t.Helper()
	before := len(e.sink.Records())
	res := e.g.Call(context.Background(), guard.Request{Principal: p, Tool: tool, Args: json.RawMessage(args), Transport: audit.TransportREST, RequestID: "req-test"})
	recs := e.sink.Records()
	if got := len(recs) - before; got != 1 {
		t.Fatalf("%s: %d audit records written, want exactly 1", tool, got)
	}
	rec := recs[len(recs)-1]
	wantReason := ""
	if res.Err != nil {
		wantReason = string(res.Err.Code)
		if res.JSON != nil {
			t.Errorf("%s: error result also carries JSON", tool)
		}
	} else if !json.Valid(res.JSON) {
		t.Errorf("%s: success JSON is not valid: %q", tool, res.JSON)
	}
	if rec.Reason != wantReason || rec.Outcome != string(apperr.Code(wantReason).Outcome()) {
		t.Errorf("%s: record outcome=%q reason=%q, result code %q", tool, rec.Outcome, rec.Reason, wantReason)
	}
	if rec.EventID != res.Record.EventID {
		t.Errorf("%s: Result.Record is not the record written", tool)
	}
	return res
}

func code(r guard.Result) apperr.Code {
	if r.Err == nil {
		return ""
	}
	return r.Err.Code
}

var all = auth.AllScopes

// TestPipelineOrder: a call failing several checks is refused by the earliest, in
// the spec's order: principal, tool, scope, confirm, rate limit, arguments,
// membership and role, then existence and ownership in the handler.
func TestPipelineOrder(t *testing.T) {
	e := newEnv(t, nil)
	missing := `"00000000-0000-4000-8000-000000000000"`
	cases := []struct {
		name string
		p    *auth.Principal
		tool string
		args string
		want apperr.Code
	}{
		{"no principal beats unknown tool", nil, "nope", `{}`, apperr.InvalidToken},
		{"unknown tool beats everything after", gt.Principal(gt.WS, gt.Viewer), "nope", `{"x":1}`, apperr.UnknownTool},
		{"scope before confirm", gt.Principal(gt.WS, gt.Viewer, "issues:read"), "delete_issue", `{"issue_id":5}`, apperr.InsufficientScope},
		{"confirm before validation", gt.Principal(gt.WS, gt.Admin, all...), "delete_issue", `{"issue_id":5,"extra":1}`, apperr.DestructiveFlagMissing},
		{"validation before membership", gt.Principal(gt.WS, gt.Outsider, all...), "get_issue", `{"issue_id":5}`, apperr.InvalidArguments},
		{"validation before role", gt.Principal(gt.WS, gt.Viewer, all...), "delete_issue", `{"issue_id":5,"confirm":true}`, apperr.InvalidArguments},
		{"membership before existence", gt.Principal(gt.WS, gt.Outsider, all...), "get_issue", `{"issue_id":` + missing + `}`, apperr.PermissionDenied},
		{"role before existence", gt.Principal(gt.WS, gt.Viewer, all...), "delete_issue", `{"issue_id":` + missing + `,"confirm":true}`, apperr.PermissionDenied},
		{"existence before ownership", gt.Principal(gt.WS, gt.Member2, all...), "delete_issue", `{"issue_id":` + missing + `,"confirm":true}`, apperr.NotFound},
		{"other workspace is not found", gt.Principal(gt.WS, gt.Member, all...), "get_issue", `{"issue_id":"` + e.w.OtherIssue.ID + `"}`, apperr.NotFound},
		{"ownership last", gt.Principal(gt.WS, gt.Member2, all...), "delete_issue", `{"issue_id":"` + e.w.Issue.ID + `","confirm":true}`, apperr.PermissionDenied},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := code(e.call(t, c.p, c.tool, c.args)); got != c.want {
				t.Fatalf("code = %q, want %q", got, c.want)
			}
		})
	}
}

// TestRateLimitBeforeValidation: a throttled caller learns nothing about its
// arguments, and the limiter sees the call before any store read.
func TestRateLimitBeforeValidation(t *testing.T) {
	e := newEnv(t, denyAll{retry: 1500 * time.Millisecond})
	res := e.call(t, gt.Principal(gt.WS, gt.Admin, all...), "get_issue", `{"bogus":true}`)
	if code(res) != apperr.RateLimited {
		t.Fatalf("code = %q, want rate_limited", code(res))
	}
	if got := res.Err.Body().RetryAfterSeconds; got != 2 {
		t.Errorf("retry_after_seconds = %d, want 2 (rounded up)", got)
	}
	if res.Record.Outcome != "denied" {
		t.Errorf("outcome = %q, want denied", res.Record.Outcome)
	}
	// Confirm is checked before the limiter.
	if c := code(e.call(t, gt.Principal(gt.WS, gt.Admin, all...), "delete_issue", `{}`)); c != apperr.DestructiveFlagMissing {
		t.Errorf("destructive without confirm under rate limit = %q, want destructive_flag_missing", c)
	}
}

type denyAll struct{ retry time.Duration }

func (d denyAll) Allow(context.Context, auth.Principal, string, time.Time) (time.Duration, error) {
	return d.retry, nil
}

type brokenLimiter struct{}

func (brokenLimiter) Allow(context.Context, auth.Principal, string, time.Time) (time.Duration, error) {
	return 0, errors.New("store down")
}

func TestLimiterFailureFailsOpen(t *testing.T) {
	e := newEnv(t, brokenLimiter{})
	if c := code(e.call(t, gt.Principal(gt.WS, gt.Admin, all...), "list_issues", `{}`)); c != "" {
		t.Fatalf("code = %q, want success when the limiter cannot decide", c)
	}
}

// TestStoreRateLimit runs the real store-backed limiter: the third call in a window
// of two is refused with a Retry-After inside the window.
func TestStoreRateLimit(t *testing.T) {
	w := gt.NewWorld(t)
	sink := &gt.MemorySink{}
	rate, err := ratelimit.Parse("2/h")
	if err != nil {
		t.Fatal(err)
	}
	g := guard.New(guard.Config{Catalog: w.Catalog, Store: w.Store, Audit: sink, Limiter: ratelimit.New(w.Store, rate)})
	e := &env{w: w, sink: sink, g: g}
	p := gt.Principal(gt.WS, gt.Admin, all...)
	for i := range 2 {
		if c := code(e.call(t, p, "list_issues", `{}`)); c != "" {
			t.Fatalf("call %d: %q", i, c)
		}
	}
	res := e.call(t, p, "list_issues", `{}`)
	if code(res) != apperr.RateLimited {
		t.Fatalf("third call = %q, want rate_limited", code(res))
	}
	if res.Err.RetryAfter <= 0 || res.Err.RetryAfter > time.Hour {
		t.Errorf("RetryAfter = %v, want within the hour window", res.Err.RetryAfter)
	}
	// Another tool has its own budget; another token too.
	if c := code(e.call(t, p, "get_issue", `{"issue_id":"`+w.Issue.ID+`"}`)); c != "" {
		t.Errorf("other tool: %q", c)
	}
	other := gt.Principal(gt.WS, gt.Member, all...)
	if c := code(e.call(t, other, "list_issues", `{}`)); c != "" {
		t.Errorf("other token: %q", c)
	}
}

// TestConfirmMatrix: only the JSON boolean true confirms.
func TestConfirmMatrix(t *testing.T) {
	e := newEnv(t, nil)
	p := gt.Principal(gt.WS, gt.Admin, all...)
	for _, tool := range []string{"delete_issue", "delete_comment"} {
		for _, c := range []struct {
			confirm string // "" = absent
			want    apperr.Code
		}{
			{"", apperr.DestructiveFlagMissing},
			{"false", apperr.DestructiveFlagMissing},
			{`"true"`, apperr.DestructiveFlagMissing},
			{"1", apperr.DestructiveFlagMissing},
			{"null", apperr.DestructiveFlagMissing},
			{`{}`, apperr.DestructiveFlagMissing},
			{"true", ""},
		} {
			t.Run(tool+"/"+c.confirm, func(t *testing.T) {
				var args map[string]any
				if err := json.Unmarshal(e.w.Args(t, tool), &args); err != nil {
					t.Fatal(err)
				}
				delete(args, "confirm")
				if c.confirm != "" {
					args["confirm"] = json.RawMessage(c.confirm)
				}
				b, _ := json.Marshal(args)
				res := e.call(t, p, tool, string(b))
				if code(res) != c.want {
					t.Fatalf("code = %q, want %q", code(res), c.want)
				}
				if c.want == apperr.DestructiveFlagMissing {
					// The admin may read and delete the item: the refusal names it
					// (TestPreviewOnMissingConfirm has who may not), and is
					// otherwise the spec's.
					b := res.Err.Body()
					if pv := b.Preview; pv == nil || pv.Kind != strings.TrimPrefix(tool, "delete_") || pv.ID != res.Record.ResourceID {
						t.Errorf("preview = %+v", pv)
					}
					b.Preview = nil
					body, _ := json.Marshal(b)
					if string(body) != `{"error":"confirm: true required for destructive operations","code":"destructive_flag_missing"}` {
						t.Errorf("body = %s", body)
					}
				}
				if res.Record.ConfirmPresent != (c.confirm == "true") {
					t.Errorf("confirm_present = %v", res.Record.ConfirmPresent)
				}
				if !res.Record.Destructive || res.Record.ResourceID == "" {
					t.Errorf("record destructive=%v resource_id=%q", res.Record.Destructive, res.Record.ResourceID)
				}
			})
		}
	}
}

// TestScopeMatrix: every tool against the empty scope set and each single scope:
// the call passes the scope check iff the set covers the tool's scopes.
func TestScopeMatrix(t *testing.T) {
	e := newEnv(t, nil)
	sets := [][]string{{}}
	for _, s := range all {
		sets = append(sets, []string{s})
	}
	for _, tool := range e.w.Catalog.Tools() {
		for _, scopes := range sets {
			t.Run(tool.Name+"/"+strings.Join(scopes, "+"), func(t *testing.T) {
				p := gt.Principal(gt.WS, gt.Admin, scopes...)
				res := e.call(t, p, tool.Name, string(e.w.Args(t, tool.Name)))
				covers := true
				for _, s := range tool.Scopes {
					covers = covers && slices.Contains(scopes, s)
				}
				if covers && res.Err != nil {
					t.Fatalf("allowed call failed: %v", res.Err)
				}
				if !covers {
					if code(res) != apperr.InsufficientScope {
						t.Fatalf("code = %q, want insufficient_scope", code(res))
					}
					if !slices.Equal(res.Err.Scopes, tool.Scopes) || !slices.Equal(res.Record.ScopesRequired, tool.Scopes) {
						t.Errorf("required scopes: err %v record %v, want %v", res.Err.Scopes, res.Record.ScopesRequired, tool.Scopes)
					}
				}
			})
		}
	}
}

// TestRoleMatrix: reads for every member; writes for members and admins; deletes
// for admins and authors; nothing for a removed member or a user of another
// workspace.
func TestRoleMatrix(t *testing.T) {
	e := newEnv(t, nil)
	type who struct {
		name, user string
	}
	users := []who{{"viewer", gt.Viewer}, {"member", gt.Member2}, {"author", gt.Member}, {"admin", gt.Admin}, {"removed", gt.Removed}, {"outsider", gt.Outsider}}
	for _, tool := range e.w.Catalog.Tools() {
		for _, u := range users {
			t.Run(tool.Name+"/"+u.name, func(t *testing.T) {
				var want apperr.Code
				switch {
				case u.name == "removed" || u.name == "outsider":
					want = apperr.PermissionDenied
				case tool.Annotations.ReadOnly:
					want = ""
				case u.name == "viewer":
					want = apperr.PermissionDenied
				case tool.Annotations.Destructive && u.name == "member":
					want = apperr.PermissionDenied
				}
				res := e.call(t, gt.Principal(gt.WS, u.user, all...), tool.Name, string(e.w.Args(t, tool.Name)))
				if code(res) != want {
					t.Fatalf("code = %q, want %q (%v)", code(res), want, res.Err)
				}
			})
		}
	}
}

// TestDemotionTakesEffectAtOnce: the role is read per call, not from the token.
func TestDemotionTakesEffectAtOnce(t *testing.T) {
	e := newEnv(t, nil)
	p := gt.Principal(gt.WS, gt.Member2, all...)
	if c := code(e.call(t, p, "create_issue", `{"title":"before"}`)); c != "" {
		t.Fatalf("member create: %q", c)
	}
	if _, err := e.w.Store.UpdateMember(context.Background(), storeMember(gt.WS, gt.Member2, "viewer")); err != nil {
		t.Fatal(err)
	}
	if c := code(e.call(t, p, "create_issue", `{"title":"after"}`)); c != apperr.PermissionDenied {
		t.Fatalf("demoted create: %q, want permission_denied", c)
	}
}

// TestValidationMessages: schema failures read like sentences a model can act on,
// never like Go values or schema URLs.
func TestValidationMessages(t *testing.T) {
	e := newEnv(t, nil)
	p := gt.Principal(gt.WS, gt.Admin, all...)
	deep := strings.Repeat(`{"a":`, 40) + `1` + strings.Repeat(`}`, 40)
	cases := []struct {
		tool, args, want string
	}{
		{"create_issue", `{"title":"x","labels":"bug"}`, "labels: expected array, got string"},
		{"create_issue", `{"title":"x","foo":1}`, `unknown field "foo"`},
		{"create_issue", `{}`, `missing required field "title"`},
		{"create_issue", `{"title":"x","labels":[1]}`, "labels[0]: expected string, got number"},
		{"create_issue", `{"title":"x","status":"later"}`, `status: must be one of "open", "in_progress", "done", "closed"`},
		{"list_issues", `{"limit":0}`, "limit: must be at least 1"},
		{"list_issues", `{"limit":1000}`, "limit: must be at most 100"},
		{"list_issues", `{"limit":2.5}`, "limit: expected integer, got number"},
		{"list_issues", `[1,2]`, "arguments must be a JSON object, got array"},
		{"list_issues", `{"a":`, "arguments are not valid JSON"},
		{"list_issues", `{} {}`, "arguments are not valid JSON"},
		{"list_issues", deep, "arguments nest deeper than 32 levels"},
		{"create_issue", `{"title":"` + strings.Repeat("x", guard.MaxArgsBytes) + `"}`, "arguments exceed 262144 bytes"},
	}
	for _, c := range cases {
		t.Run(c.want, func(t *testing.T) {
			res := e.call(t, p, c.tool, c.args)
			if code(res) != apperr.InvalidArguments {
				t.Fatalf("code = %q (%v), want invalid_arguments", code(res), res.Err)
			}
			if res.Err.Message != c.want {
				t.Fatalf("message = %q, want %q", res.Err.Message, c.want)
			}
		})
	}
	// Absent and null arguments mean {}.
	for _, args := range []string{"", "null", "  "} {
		if c := code(e.call(t, p, "list_issues", args)); c != "" {
			t.Errorf("list_issues with args %q: %q", args, c)
		}
	}
}

// TestIdempotency: same key and arguments replay the first result; other
// arguments conflict; a failed call releases its key; keys are per user.
func TestIdempotency(t *testing.T) {
	e := newEnv(t, nil)
	p := gt.Principal(gt.WS, gt.Member, all...)
	first := e.call(t, p, "create_issue", `{"title":"Once","labels":["a"],"idempotency_key":"k1"}`)
	if first.Err != nil || first.Replay {
		t.Fatalf("first: %v replay=%v", first.Err, first.Replay)
	}
	// Same arguments in another order and layout.
	again := e.call(t, p, "create_issue", `{ "idempotency_key":"k1", "labels":["a"], "title":"Once" }`)
	if again.Err != nil || !again.Replay || string(again.JSON) != string(first.JSON) {
		t.Fatalf("replay: err=%v replay=%v\n got %s\nwant %s", again.Err, again.Replay, again.JSON, first.JSON)
	}
	if !again.Record.IdempotentReplay || again.Record.IdempotencyKeyHMAC != testHMAC.IdempotencyKey("k1") || again.Record.ResourceID == "" {
		t.Errorf("replay record: %+v", again.Record)
	}
	if first.Record.IdempotentReplay {
		t.Errorf("first record marked as replay")
	}
	page, err := e.w.Store.ListIssues(context.Background(), gt.WS, storeFilter("Once"))
	if err != nil || len(page.Issues) != 1 {
		t.Fatalf("issues titled Once: %d (%v), want exactly 1", len(page.Issues), err)
	}
	c := e.call(t, p, "create_issue", `{"title":"Other","idempotency_key":"k1"}`)
	if code(c) != apperr.Conflict || c.Err.Message != "idempotency key reused with different arguments" {
		t.Fatalf("reuse: %v", c.Err)
	}
	// Keys are per user.
	if r := e.call(t, gt.Principal(gt.WS, gt.Admin, all...), "create_issue", `{"title":"Other","idempotency_key":"k1"}`); r.Err != nil || r.Replay {
		t.Fatalf("other user, same key: %v replay=%v", r.Err, r.Replay)
	}
	// A failed call releases its key: the retry with other arguments runs.
	missing := "00000000-0000-4000-8000-000000000000"
	if r := e.call(t, p, "comment_issue", `{"issue_id":"`+missing+`","body":"x","idempotency_key":"k2"}`); code(r) != apperr.NotFound {
		t.Fatalf("comment on missing issue: %v", r.Err)
	}
	if r := e.call(t, p, "comment_issue", `{"issue_id":"`+e.w.Issue.ID+`","body":"x","idempotency_key":"k2"}`); r.Err != nil || r.Replay {
		t.Fatalf("retry after failure: %v replay=%v", r.Err, r.Replay)
	}
}

// TestAuditRecordFields checks what a record says about a call, and that it never
// holds the raw arguments.
func TestAuditRecordFields(t *testing.T) {
	e := newEnv(t, nil)
	p := &auth.Principal{WorkspaceID: gt.WS, UserID: gt.Admin, TokenID: "tok_abc", Scopes: []string{"issues:write", "comments:read", "issues:read"}}
	secret := "very-private-description"
	args := `{"title":"Audit me","description":"` + secret + `"}`
	res := e.g.Call(context.Background(), guard.Request{
		Principal: p, Tool: "create_issue", Args: json.RawMessage(args), Transport: audit.TransportMCP,
		RequestID: "rid", JSONRPCID: "7", ClientName: "cli", ClientVersion: "1.2", ProtocolVersion: "2025-11-25",
		UserAgent: "ua/1", SourceIP: "127.0.0.1",
	})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	r := res.Record
	var canon map[string]any
	_ = json.Unmarshal([]byte(args), &canon)
	cb, _ := json.Marshal(canon)
	plain := sha256.Sum256(cb)
	var created struct{ ID string }
	_ = json.Unmarshal(res.JSON, &created)
	checks := []struct {
		field string
		got   any
		want  any
	}{
		{"tool", r.Tool, "create_issue"},
		{"outcome", r.Outcome, "success"},
		{"reason", r.Reason, ""},
		{"scopes_provided", strings.Join(r.ScopesProvided, ","), "comments:read,issues:read,issues:write"},
		{"scopes_required", strings.Join(r.ScopesRequired, ","), "issues:write"},
		{"workspace_id", r.WorkspaceID, gt.WS},
		{"user_id", r.UserID, gt.Admin},
		{"token_id", r.TokenID, "tok_abc"},
		{"read_only", r.ReadOnly, false},
		{"destructive", r.Destructive, false},
		{"resource_id", r.ResourceID, created.ID},
		{"args_hmac", r.ArgsHMAC, testHMAC.Args(cb)},
		{"args_hmac is keyed", r.ArgsHMAC == hex.EncodeToString(plain[:]), false},
		{"args_sha256 (1.1 only)", r.ArgsSHA256, ""},
		{"request_id", r.RequestID, "rid"},
		{"jsonrpc_id", r.JSONRPCID, "7"},
		{"client_name", r.ClientName, "cli"},
		{"protocol_version", r.ProtocolVersion, "2025-11-25"},
		{"user_agent", r.UserAgent, "ua/1"},
		{"source_ip", r.SourceIP, "127.0.0.1"},
		{"transport", r.Transport, "mcp"},
		{"event_version", r.EventVersion, audit.EventVersion},
		{"event_type", r.EventType, audit.EventToolCall},
		{"action", r.Action, ""},
		{"client_id", r.ClientID, ""}, // a personal token
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.field, c.got, c.want)
		}
	}
	line, _ := json.Marshal(r)
	if strings.Contains(string(line), secret) {
		t.Errorf("record contains raw arguments: %s", line)
	}
	if len(line) >= 1024 {
		t.Errorf("record is %d bytes, want < 1 KB", len(line))
	}
	if err := r.Validate(); err != nil {
		t.Error(err)
	}

	// No principal: who-fields are empty, the tool is still named.
	anon := e.call(t, nil, "delete_issue", `{"issue_id":"x"}`)
	if anon.Record.WorkspaceID != "" || anon.Record.UserID != "" || anon.Record.TokenID != "" || anon.Record.Tool != "delete_issue" || anon.Record.Reason != "invalid_token" {
		t.Errorf("anonymous record: %+v", anon.Record)
	}
	if anon.Record.EventType != audit.EventToolCall || anon.Record.ClientID != "" || anon.Record.Action != "" {
		t.Errorf("anonymous record: event_type %q client_id %q action %q", anon.Record.EventType, anon.Record.ClientID, anon.Record.Action)
	}
}

// TestAuditRecordClientID: a call with an OAuth access token records the client the
// token was issued to, for allowed and denied calls alike, and keeps the principal's
// other fields; a personal token's call records "".
func TestAuditRecordClientID(t *testing.T) {
	e := newEnv(t, nil)
	const client = "https://claude.ai/oauth/mcp-oauth-client-metadata"
	oauth := func(scopes ...string) *auth.Principal {
		p := gt.Principal(gt.WS, gt.Admin, scopes...)
		p.ClientID = client
		return p
	}
	tests := []struct {
		name       string
		p          *auth.Principal
		tool, args string
		wantReason string
		wantClient string
	}{
		{"oauth read", oauth("issues:read"), "list_issues", `{}`, "", client},
		{"oauth destructive without confirm", oauth("issues:write"), "delete_issue", `{"issue_id":"` + e.w.Issue.ID + `"}`,
			"destructive_flag_missing", client},
		{"oauth insufficient scope", oauth("issues:read"), "create_issue", `{"title":"t"}`, "insufficient_scope", client},
		{"oauth unknown tool", oauth("issues:read"), "no_such_tool", `{}`, "unknown_tool", client},
		{"personal token", gt.Principal(gt.WS, gt.Admin, "issues:read"), "list_issues", `{}`, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.call(t, tt.p, tt.tool, tt.args).Record
			if r.Reason != tt.wantReason || r.ClientID != tt.wantClient || r.EventType != audit.EventToolCall || r.Action != "" {
				t.Errorf("reason %q client_id %q event_type %q action %q, want %q %q tool_call \"\"",
					r.Reason, r.ClientID, r.EventType, r.Action, tt.wantReason, tt.wantClient)
			}
			if r.TokenID != tt.p.TokenID || r.WorkspaceID != gt.WS {
				t.Errorf("principal fields %+v", r)
			}
			if err := r.Validate(); err != nil {
				t.Error(err)
			}
		})
	}
	// The sink received the same records.
	var withClient int
	for _, r := range e.sink.Records() {
		if r.ClientID == client {
			withClient++
		}
	}
	if withClient != 4 {
		t.Errorf("%d records with the client id in the sink, want 4", withClient)
	}
}

// TestUsageCounted: every call of a known tool by a principal bumps the day's
// counters with its outcome.
func TestUsageCounted(t *testing.T) {
	e := newEnv(t, nil)
	p := gt.Principal(gt.WS, gt.Admin, all...)
	e.call(t, p, "list_issues", `{}`)
	e.call(t, p, "list_issues", `{"limit":0}`)
	e.call(t, gt.Principal(gt.WS, gt.Admin, "issues:write"), "list_issues", `{}`)
	e.call(t, p, "no_such_tool", `{}`)
	day := time.Now().UTC().Format(time.DateOnly)
	rows, err := e.w.Store.ListUsage(context.Background(), gt.WS, day, day)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Tool != "list_issues" || rows[0].Calls != 3 || rows[0].Errors != 1 || rows[0].Denied != 1 {
		t.Fatalf("usage rows = %+v, want one list_issues row: calls 3, errors 1, denied 1", rows)
	}
}

// TestAuditFailure: a success without a record is not answered as a success; a
// refusal stays the refusal.
func TestAuditFailure(t *testing.T) {
	e := newEnv(t, nil)
	e.sink.Fail = errors.New("disk full")
	p := gt.Principal(gt.WS, gt.Admin, all...)
	res := e.g.Call(context.Background(), guard.Request{Principal: p, Tool: "list_issues", Args: json.RawMessage(`{}`), Transport: audit.TransportREST})
	if code(res) != apperr.InternalError || res.JSON != nil {
		t.Fatalf("success with failed audit = %v", res.Err)
	}
	if strings.Contains(res.Err.Message, "disk") {
		t.Errorf("internal detail leaked: %q", res.Err.Message)
	}
	res = e.g.Call(context.Background(), guard.Request{Principal: p, Tool: "delete_issue", Args: json.RawMessage(`{}`), Transport: audit.TransportREST})
	if code(res) != apperr.DestructiveFlagMissing {
		t.Fatalf("refusal with failed audit = %v", res.Err)
	}
}

// TestPanicIsInternalError: a panicking dependency becomes internal_error with one
// record, not a crash.
func TestPanicIsInternalError(t *testing.T) {
	w := gt.NewWorld(t)
	sink := &gt.MemorySink{}
	cat := catalog.New(catalog.Deps{Dispatcher: panicker{}})
	g := guard.New(guard.Config{Catalog: cat, Store: w.Store, Audit: sink})
	e := &env{w: w, sink: sink, g: g}
	res := e.call(t, gt.Principal(gt.WS, gt.Admin, all...), "trigger_autopilot", `{"issue_id":"`+w.Issue.ID+`","idempotency_key":"p1"}`)
	if code(res) != apperr.InternalError || res.Err.Message != "internal error" {
		t.Fatalf("panic result = %v", res.Err)
	}
	// The idempotency claim was released: a retry runs (and panics) again rather
	// than reporting "in progress".
	res = e.call(t, gt.Principal(gt.WS, gt.Admin, all...), "trigger_autopilot", `{"issue_id":"`+w.Issue.ID+`","idempotency_key":"p1"}`)
	if code(res) != apperr.InternalError {
		t.Fatalf("retry after panic = %v, want internal_error again", res.Err)
	}
}

type panicker struct{}

func (panicker) Dispatch(context.Context, autopilotJob) error { panic("boom") }

// TestConcurrentCalls: calls from many goroutines each leave one record.
func TestConcurrentCalls(t *testing.T) {
	e := newEnv(t, nil)
	p := gt.Principal(gt.WS, gt.Admin, all...)
	const n = 20
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			tool := "list_issues"
			if i%2 == 0 {
				tool = "create_issue"
			}
			args := `{}`
			if tool == "create_issue" {
				args = `{"title":"c"}`
			}
			e.g.Call(context.Background(), guard.Request{Principal: p, Tool: tool, Args: json.RawMessage(args), Transport: audit.TransportREST})
		})
	}
	wg.Wait()
	recs := e.sink.Records()
	if len(recs) != n {
		t.Fatalf("%d records, want %d", len(recs), n)
	}
	ids := map[string]bool{}
	for _, r := range recs {
		if ids[r.EventID] {
			t.Fatalf("duplicate event id %s", r.EventID)
		}
		ids[r.EventID] = true
		if r.Outcome != "success" {
			t.Errorf("%s: %s %s", r.Tool, r.Outcome, r.Reason)
		}
	}
}

// TestRecordRejected: a call refused before the guard ran still gets its record;
// it counts usage exactly when a call would (a known tool and a principal), which is
// also what the usage replay counts from the record.
func TestRecordRejected(t *testing.T) {
	cases := []struct {
		name      string
		principal *auth.Principal
		tool      string
		err       *apperr.Error
		outcome   string
		ws        string
		calls     int64 // usage_daily calls for the tool today
	}{
		{"rejected token", nil, "delete_issue", apperr.New(apperr.InvalidToken, "bad token"), "denied", "", 0},
		// The authorizer names a revoked token by its id only: no workspace to count in.
		{"revoked token", &auth.Principal{TokenID: "tok_1"}, "get_issue", apperr.New(apperr.InvalidToken, "revoked"), "denied", "", 0},
		{"malformed call by a member", gt.Principal(gt.WS, gt.Admin, all...), "get_issue",
			apperr.New(apperr.InvalidArguments, "malformed tools/call request"), "error", gt.WS, 1},
		{"malformed call of an unknown tool", gt.Principal(gt.WS, gt.Admin, all...), "no_such_tool",
			apperr.New(apperr.InvalidArguments, "malformed tools/call request"), "error", gt.WS, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			e.g.RecordRejected(context.Background(), guard.Request{Principal: tc.principal, Tool: tc.tool,
				Transport: audit.TransportMCP, Args: json.RawMessage(`{"issue_id":"x"}`)}, tc.err)
			recs := e.sink.Records()
			if len(recs) != 1 {
				t.Fatalf("%d records, want 1", len(recs))
			}
			r := recs[0]
			if r.Outcome != tc.outcome || r.Reason != string(tc.err.Code) || r.Tool != tc.tool || r.ArgsHMAC == "" || r.WorkspaceID != tc.ws ||
				r.Destructive != (tc.tool == "delete_issue") {
				t.Errorf("record = %+v", r)
			}
			day := time.Now().UTC().Format(time.DateOnly)
			rows, err := e.w.Store.ListUsage(context.Background(), gt.WS, day, day)
			if err != nil {
				t.Fatal(err)
			}
			var calls, errs int64
			for _, row := range rows {
				if row.Tool == tc.tool {
					calls, errs = row.Calls, row.Errors
				}
			}
			if calls != tc.calls || errs != tc.calls {
				t.Errorf("usage of %s = %d calls, %d errors; want %d and %d", tc.tool, calls, errs, tc.calls, tc.calls)
			}
		})
	}
}

type autopilotJob = autopilot.Job

func storeMember(ws, user string, role store.Role) store.Member {
	return store.Member{WorkspaceID: ws, UserID: user, Role: role, CreatedAt: time.Now().UTC()}
}

func storeFilter(query string) store.IssueFilter {
	return store.IssueFilter{Query: query, PageRequest: store.PageRequest{Limit: 100}}
}
