package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/autopilot"
	"github.com/aacworkflow/aacmcp/shared/store"
)

const missingUUID = "550e8400-e29b-41d4-a716-446655440000"

func TestListIssues(t *testing.T) {
	f := newFixture(t)
	for i := range 3 {
		f.newIssue(asMia, fmt.Sprintf("issue %d", i))
	}
	f.ok(asAdmin, "update_issue", `{"issue_id":"AAC-2","status":"done"}`)
	f.ok(asAdmin, "create_issue", `{"title":"findme needle","labels":["ui"]}`)
	f.newIssue(asOutsider, "not yours")

	tests := []struct {
		name, args string
		wantKeys   []string
	}{
		{"all, most recently updated first", `{}`, []string{"AAC-4", "AAC-2", "AAC-3", "AAC-1"}},
		{"by status", `{"status":"done"}`, []string{"AAC-2"}},
		{"by label", `{"label":"ui"}`, []string{"AAC-4"}},
		{"by query", `{"query":"NEEDLE"}`, []string{"AAC-4"}},
		{"no match", `{"status":"closed"}`, []string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := f.ok(asBen, "list_issues", tc.args)
			got := []string{}
			for _, i := range m["issues"].([]any) {
				got = append(got, i.(map[string]any)["key"].(string))
			}
			if !slices.Equal(got, tc.wantKeys) {
				t.Errorf("keys = %v, want %v", got, tc.wantKeys)
			}
		})
	}

	t.Run("pages", func(t *testing.T) {
		var keys []string
		args := `{"limit":3}`
		for range 3 {
			m := f.ok(asBen, "list_issues", args)
			for _, i := range m["issues"].([]any) {
				keys = append(keys, i.(map[string]any)["key"].(string))
			}
			next := m["next_cursor"].(string)
			if next == "" {
				break
			}
			args = `{"limit":3,"cursor":"` + next + `"}`
		}
		if len(keys) != 4 || len(slices.Compact(slices.Sorted(slices.Values(keys)))) != 4 {
			t.Errorf("paged keys = %v, want the 4 demo issues once each", keys)
		}
	})

	t.Run("other workspace sees only its own", func(t *testing.T) {
		m := f.ok(asOutsider, "list_issues", `{}`)
		if n := len(m["issues"].([]any)); n != 1 {
			t.Errorf("outsider sees %d issues, want 1", n)
		}
	})
}

func TestGetIssue(t *testing.T) {
	f := newFixture(t)
	id, key := f.newIssue(asMia, "first")
	otherID, _ := f.newIssue(asOutsider, "theirs")

	byID := f.ok(asBen, "get_issue", `{"issue_id":"`+id+`"}`)
	byKey := f.ok(asBen, "get_issue", `{"issue_id":"`+key+`"}`)
	if byID["id"] != id || byKey["id"] != id || key != "AAC-1" {
		t.Errorf("get by id %v / by key %v, want id %s key AAC-1 (got key %s)", byID["id"], byKey["id"], id, key)
	}
	if byID["created_by"] != mia || byID["version"] != 1.0 || byID["assignee"] != nil {
		t.Errorf("issue = %v", byID)
	}

	f.failsWith(asBen, "get_issue", `{"issue_id":"`+missingUUID+`"}`, store.ErrNotFound)
	f.failsWith(asBen, "get_issue", `{"issue_id":"AAC-99"}`, store.ErrNotFound)
	// Another workspace's issue is exactly as absent as a missing one.
	f.failsWith(asBen, "get_issue", `{"issue_id":"`+otherID+`"}`, store.ErrNotFound)
	f.failsWith(asBen, "get_issue", `{"issue_id":"OTH-1"}`, store.ErrNotFound)
}

func TestCreateIssue(t *testing.T) {
	f := newFixture(t)
	m := f.ok(asMia, "create_issue", `{"title":"  Crash on save  ","labels":["bug","ui","bug"," ui"]}`)
	want := map[string]any{
		"key": "AAC-1", "title": "Crash on save", "description": "", "status": "open", "priority": "medium",
		"created_by": mia, "version": 1.0, "comment_count": 0.0, "assignee": nil,
	}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s = %#v, want %#v", k, m[k], v)
		}
	}
	if got := m["labels"].([]any); len(got) != 2 || got[0] != "bug" || got[1] != "ui" {
		t.Errorf("labels = %v, want [bug ui]", got)
	}

	m = f.ok(asMia, "create_issue", `{"title":"Second","description":"d","status":"in_progress","priority":"urgent"}`)
	if m["key"] != "AAC-2" || m["status"] != "in_progress" || m["priority"] != "urgent" || len(m["labels"].([]any)) != 0 {
		t.Errorf("second issue = %v", m)
	}

	f.fails(asMia, "create_issue", `{"title":"   "}`, apperr.InvalidArguments)
	f.fails(asMia, "create_issue", `{"title":"x","labels":["  "]}`, apperr.InvalidArguments)

	// The key sequence is per workspace.
	if _, key := f.newIssue(asOutsider, "theirs"); key != "OTH-1" {
		t.Errorf("other workspace's first key = %s, want OTH-1", key)
	}
}

func TestUpdateIssue(t *testing.T) {
	f := newFixture(t)
	id, _ := f.newIssue(asMia, "before")
	otherID, _ := f.newIssue(asOutsider, "theirs")

	m := f.ok(asBen, "update_issue", `{"issue_id":"AAC-1","title":"after","labels":["b","a","b"],"expected_version":1}`)
	if m["title"] != "after" || m["version"] != 2.0 || fmt.Sprint(m["labels"]) != "[b a]" {
		t.Errorf("updated = %v", m)
	}
	first, err := f.call(asBen, "get_issue", `{"issue_id":"`+id+`"}`)
	if err != nil {
		t.Fatal(err)
	}

	// Values that already hold: nothing changes, and a stale expected_version does not
	// matter (docs/architecture.md section 2): the very same issue comes back.
	again, err := f.call(asBen, "update_issue", `{"issue_id":"`+id+`","title":"after","expected_version":1}`)
	if err != nil {
		t.Fatalf("no-op update with stale version: %v", err)
	}
	if again != first {
		t.Errorf("no-op update changed the issue:\n got %s\nwant %s", again, first)
	}

	f.failsWith(asBen, "update_issue", `{"issue_id":"AAC-1","status":"done","expected_version":1}`, store.ErrVersionMismatch)
	f.fails(asBen, "update_issue", `{"issue_id":"AAC-1"}`, apperr.InvalidArguments)
	f.fails(asBen, "update_issue", `{"issue_id":"AAC-1","expected_version":2}`, apperr.InvalidArguments)
	f.fails(asBen, "update_issue", `{"issue_id":"AAC-1","title":" "}`, apperr.InvalidArguments)
	f.failsWith(asBen, "update_issue", `{"issue_id":"`+missingUUID+`","title":"x"}`, store.ErrNotFound)
	f.failsWith(asBen, "update_issue", `{"issue_id":"`+otherID+`","title":"x"}`, store.ErrNotFound)

	m = f.ok(asBen, "update_issue", `{"issue_id":"AAC-1","status":"done","priority":"low","description":"d","expected_version":2}`)
	if m["status"] != "done" || m["priority"] != "low" || m["description"] != "d" || m["version"] != 3.0 {
		t.Errorf("updated = %v", m)
	}
	// An empty label list clears the labels.
	if m = f.ok(asBen, "update_issue", `{"issue_id":"AAC-1","labels":[]}`); len(m["labels"].([]any)) != 0 {
		t.Errorf("labels after clearing = %v", m["labels"])
	}
}

func TestComments(t *testing.T) {
	f := newFixture(t)
	id, _ := f.newIssue(asMia, "discussed")
	f.newIssue(asMia, "quiet")
	otherID, _ := f.newIssue(asOutsider, "theirs")

	c1 := f.ok(asBen, "comment_issue", `{"issue_id":"AAC-1","body":"first"}`)
	f.ok(asMia, "comment_issue", `{"issue_id":"`+id+`","body":"second"}`)
	if c1["issue_id"] != id || c1["author"] != ben || c1["body"] != "first" || c1["id"] == "" {
		t.Errorf("comment = %v", c1)
	}
	if m := f.ok(asBen, "get_issue", `{"issue_id":"AAC-1"}`); m["comment_count"] != 2.0 {
		t.Errorf("comment_count = %v, want 2", m["comment_count"])
	}

	m := f.ok(asBen, "list_comments", `{"issue_id":"AAC-1"}`)
	cs := m["comments"].([]any)
	if len(cs) != 2 || cs[0].(map[string]any)["body"] != "first" || cs[1].(map[string]any)["body"] != "second" {
		t.Errorf("comments = %v, want first then second", cs)
	}
	m = f.ok(asBen, "list_comments", `{"issue_id":"AAC-1","limit":1}`)
	if len(m["comments"].([]any)) != 1 || m["next_cursor"] == "" {
		t.Errorf("page of 1 = %v", m)
	}
	if m = f.ok(asBen, "list_comments", `{"issue_id":"AAC-2"}`); len(m["comments"].([]any)) != 0 {
		t.Errorf("quiet issue comments = %v", m)
	}

	f.failsWith(asBen, "list_comments", `{"issue_id":"AAC-9"}`, store.ErrNotFound)
	f.failsWith(asBen, "list_comments", `{"issue_id":"`+otherID+`"}`, store.ErrNotFound)
	f.failsWith(asBen, "comment_issue", `{"issue_id":"`+otherID+`","body":"x"}`, store.ErrNotFound)
	f.failsWith(asBen, "comment_issue", `{"issue_id":"AAC-9","body":"x"}`, store.ErrNotFound)
	f.fails(asBen, "comment_issue", `{"issue_id":"AAC-1","body":" \n "}`, apperr.InvalidArguments)
}

func TestDashboardUsageDaily(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	add := func(ws, date, tool, outcome string) {
		t.Helper()
		err := f.st.UpdateUsage(ctx, store.UsageIncrement{WorkspaceID: ws, Date: date, Tool: tool, Outcome: outcome,
			EventID: fmt.Sprintf("event-%d", usageSeq())})
		if err != nil {
			t.Fatal(err)
		}
	}
	add(wsDemo, "2026-03-03", "get_issue", "success") // 8 days before testNow: outside the default
	add(wsDemo, "2026-03-04", "get_issue", "success")
	add(wsDemo, "2026-03-04", "get_issue", "denied")
	add(wsDemo, "2026-03-04", "delete_issue", "error")
	add(wsDemo, "2026-03-10", "list_issues", "success")
	add(wsDemo, "2025-03-10", "list_issues", "success")
	add(wsOther, "2026-03-10", "list_issues", "success")

	days := func(args string) string {
		t.Helper()
		m := f.ok(asBen, "dashboard_usage_daily", args)
		var out []string
		for _, d := range m["days"].([]any) {
			r := d.(map[string]any)
			out = append(out, fmt.Sprintf("%s %s %v/%v/%v", r["date"], r["tool"], r["calls"], r["denied"], r["errors"]))
		}
		return strings.Join(out, "; ")
	}
	tests := []struct{ args, want string }{
		{`{}`, "2026-03-04 delete_issue 1/0/1; 2026-03-04 get_issue 2/1/0; 2026-03-10 list_issues 1/0/0"},
		{`{"from":"2026-03-03","to":"2026-03-03"}`, "2026-03-03 get_issue 1/0/0"},
		{`{"to":"2026-03-09"}`, "2026-03-03 get_issue 1/0/0; 2026-03-04 delete_issue 1/0/1; 2026-03-04 get_issue 2/1/0"},
		{`{"from":"2025-03-10"}`, "2025-03-10 list_issues 1/0/0; 2026-03-03 get_issue 1/0/0; 2026-03-04 delete_issue 1/0/1; 2026-03-04 get_issue 2/1/0; 2026-03-10 list_issues 1/0/0"},
		{`{"from":"2026-06-01","to":"2026-06-30"}`, ""},
	}
	for _, tc := range tests {
		if got := days(tc.args); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.args, got, tc.want)
		}
	}

	f.fails(asBen, "dashboard_usage_daily", `{"from":"2026-03-05","to":"2026-03-04"}`, apperr.InvalidArguments)
	f.fails(asBen, "dashboard_usage_daily", `{"from":"2025-03-09"}`, apperr.InvalidArguments) // 367 days
	f.fails(asBen, "dashboard_usage_daily", `{"from":"2026-02-30"}`, apperr.InvalidArguments)
	f.fails(asBen, "dashboard_usage_daily", `{"to":"2026-13-01"}`, apperr.InvalidArguments)
}

var usageCounter struct {
	sync.Mutex
	n int
}

func usageSeq() int {
	usageCounter.Lock()
	defer usageCounter.Unlock()
	usageCounter.n++
	return usageCounter.n
}

func TestAssignIssueToAgent(t *testing.T) {
	f := newFixture(t)
	id, _ := f.newIssue(asMia, "for the robot")
	otherID, _ := f.newIssue(asOutsider, "theirs")

	first, err := f.call(asBen, "assign_issue_to_agent", `{"issue_id":"AAC-1","agent_id":"`+agentID+`"}`)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(first), &m); err != nil {
		t.Fatal(err)
	}
	if a, _ := m["assignee"].(map[string]any); a["type"] != "agent" || a["id"] != agentID || m["version"] != 2.0 {
		t.Errorf("assigned issue = %v", m)
	}
	// Assigning the current agent again changes nothing: the very same issue.
	again, err := f.call(asMia, "assign_issue_to_agent", `{"issue_id":"`+id+`","agent_id":"`+agentID+`"}`)
	if err != nil {
		t.Fatal(err)
	}
	if again != first {
		t.Errorf("repeat changed the issue:\n got %s\nwant %s", again, first)
	}

	f.failsWith(asBen, "assign_issue_to_agent", `{"issue_id":"AAC-1","agent_id":"no-such-agent"}`, store.ErrNotFound)
	f.failsWith(asBen, "assign_issue_to_agent", `{"issue_id":"AAC-1","agent_id":"`+otherAgent+`"}`, store.ErrNotFound)
	f.failsWith(asBen, "assign_issue_to_agent", `{"issue_id":"AAC-7","agent_id":"`+agentID+`"}`, store.ErrNotFound)
	f.failsWith(asBen, "assign_issue_to_agent", `{"issue_id":"`+otherID+`","agent_id":"`+agentID+`"}`, store.ErrNotFound)
}

func TestTriggerAutopilot(t *testing.T) {
	t.Run("dispatched", func(t *testing.T) {
		f := newFixture(t)
		id, _ := f.newIssue(asMia, "automate me")
		m := f.ok(asBen, "trigger_autopilot", `{"issue_id":"AAC-1","instructions":"add a test"}`)
		if m["status"] != store.RunDispatched || m["attempts"] != 1.0 || m["issue_id"] != id || m["issue_key"] != "AAC-1" ||
			m["requested_by"] != ben || m["instructions"] != "add a test" || m["error"] != nil {
			t.Errorf("run = %v", m)
		}
		jobs := f.disp.Jobs()
		if len(jobs) != 1 {
			t.Fatalf("dispatched %d jobs, want 1", len(jobs))
		}
		want := autopilot.Job{RunID: m["id"].(string), WorkspaceID: wsDemo, IssueID: id, IssueKey: "AAC-1",
			Instructions: "add a test", RequestedBy: ben, CreatedAt: mustTime(t, m["created_at"])}
		if jobs[0] != want {
			t.Errorf("job = %+v, want %+v", jobs[0], want)
		}
		// Not idempotent: a second call is a second run.
		m2 := f.ok(asBen, "trigger_autopilot", `{"issue_id":"AAC-1"}`)
		if m2["id"] == m["id"] || len(f.disp.Jobs()) != 2 {
			t.Errorf("second trigger reused run %v", m2["id"])
		}
	})

	t.Run("dispatch failed", func(t *testing.T) {
		tests := []struct {
			name    string
			err     error
			wantMsg string
		}{
			{"dispatcher's safe message", &autopilot.DispatchError{Attempts: 3, StatusCode: 503}, "agent runner answered HTTP 503 after 3 attempt(s)"},
			{"foreign error is not shown", errors.New("dial tcp 10.1.2.3:443: secret detail"), "the agent runner did not accept the run"},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				f := newFixture(t)
				f.disp.err = tc.err
				f.newIssue(asMia, "automate me")
				m := f.ok(asBen, "trigger_autopilot", `{"issue_id":"AAC-1"}`)
				if m["status"] != store.RunDispatchFailed || m["error"] != tc.wantMsg || m["attempts"] != 1.0 {
					t.Errorf("run = %v, want dispatch_failed with %q", m, tc.wantMsg)
				}
			})
		}
	})

	t.Run("unknown or foreign issue dispatches nothing", func(t *testing.T) {
		f := newFixture(t)
		otherID, _ := f.newIssue(asOutsider, "theirs")
		f.failsWith(asBen, "trigger_autopilot", `{"issue_id":"AAC-1"}`, store.ErrNotFound)
		f.failsWith(asBen, "trigger_autopilot", `{"issue_id":"`+otherID+`"}`, store.ErrNotFound)
		if n := len(f.disp.Jobs()); n != 0 {
			t.Errorf("dispatched %d jobs", n)
		}
	})

	t.Run("through a signed webhook", func(t *testing.T) {
		secret := []byte("runner-secret")
		var mu sync.Mutex
		var got []autopilot.Job
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, err := io.ReadAll(r.Body)
			if err != nil || autopilot.Verify(secret, body, r.Header.Get(autopilot.HeaderSignature), time.Now()) != nil {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			var j autopilot.Job
			if err := json.Unmarshal(body, &j); err != nil || r.Header.Get(autopilot.HeaderIdempotencyKey) != j.RunID {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			mu.Lock()
			got = append(got, j)
			mu.Unlock()
			w.WriteHeader(http.StatusAccepted)
		}))
		t.Cleanup(srv.Close)

		f := newFixtureWith(t, autopilot.NewWebhook(srv.URL, secret, srv.Client()))
		f.newIssue(asMia, "automate me")
		m := f.ok(asBen, "trigger_autopilot", `{"issue_id":"AAC-1"}`)
		mu.Lock()
		defer mu.Unlock()
		if m["status"] != store.RunDispatched || len(got) != 1 || got[0].RunID != m["id"] {
			t.Errorf("run = %v, runner got %+v", m, got)
		}
	})

	t.Run("into the outbox", func(t *testing.T) {
		ob, err := autopilot.NewOutbox(filepath.Join(t.TempDir(), autopilot.OutboxFile))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ob.Close() })
		f := newFixtureWith(t, ob)
		f.newIssue(asMia, "automate me")
		// The outbox only queues: the run must not claim it reached the runner.
		if m := f.ok(asBen, "trigger_autopilot", `{"issue_id":"AAC-1"}`); m["status"] != store.RunQueued {
			t.Errorf("run = %v, want status queued", m)
		}
		b, err := os.ReadFile(ob.Path())
		if err != nil || !strings.Contains(string(b), `"issue_key":"AAC-1"`) {
			t.Errorf("outbox holds %q (%v), want the job", b, err)
		}
	})

	t.Run("no dispatcher configured", func(t *testing.T) {
		f := newFixture(t)
		f.cat = New(Deps{})
		f.newIssue(asMia, "automate me")
		f.fails(asBen, "trigger_autopilot", `{"issue_id":"AAC-1"}`, apperr.InternalError)
	})
}

func TestDeleteIssue(t *testing.T) {
	f := newFixture(t)
	miaID, _ := f.newIssue(asMia, "mia's")         // AAC-1
	f.newIssue(asMia, "mia's second")              // AAC-2
	benID, _ := f.newIssue(asBen, "ben's")         // AAC-3
	otherID, _ := f.newIssue(asOutsider, "theirs") // OTH-1
	comment := f.ok(asBen, "comment_issue", `{"issue_id":"AAC-1","body":"goes with it"}`)

	// Existence first, then permission: a member may not delete another's issue.
	f.fails(asBen, "delete_issue", `{"issue_id":"`+miaID+`","confirm":true}`, apperr.PermissionDenied)
	f.ok(asBen, "get_issue", `{"issue_id":"`+miaID+`"}`) // still there

	first, err := f.call(asMia, "delete_issue", `{"issue_id":"AAC-1","confirm":true}`)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"deleted":true,"issue_id":"` + miaID + `"}`; first != want {
		t.Errorf("delete result = %s, want %s", first, want)
	}
	f.failsWith(asMia, "get_issue", `{"issue_id":"`+miaID+`"}`, store.ErrNotFound)
	f.failsWith(asMia, "delete_comment", `{"comment_id":"`+comment["id"].(string)+`","confirm":true}`, store.ErrNotFound)

	// Repeats answer the same body, by id or key, for whoever may delete it.
	for _, tc := range []struct {
		who  caller
		args string
	}{
		{asAdmin, `{"issue_id":"` + miaID + `","confirm":true}`},
		{asAdmin, `{"issue_id":"AAC-1","confirm":true}`},
	} {
		again, err := f.call(tc.who, "delete_issue", tc.args)
		if err != nil || again != first {
			t.Errorf("repeat %s by %s = %s, %v; want %s", tc.args, tc.who.user, again, err, first)
		}
	}
	// A repeat is judged like the delete: ben could not have deleted mia's issue.
	f.fails(asBen, "delete_issue", `{"issue_id":"`+miaID+`","confirm":true}`, apperr.PermissionDenied)

	// An admin deletes anyone's issue.
	if got := f.ok(asAdmin, "delete_issue", `{"issue_id":"AAC-3","confirm":true}`); got["issue_id"] != benID {
		t.Errorf("admin delete = %v", got)
	}

	f.failsWith(asAdmin, "delete_issue", `{"issue_id":"`+missingUUID+`","confirm":true}`, store.ErrNotFound)
	f.failsWith(asAdmin, "delete_issue", `{"issue_id":"AAC-99","confirm":true}`, store.ErrNotFound)
	f.failsWith(asAdmin, "delete_issue", `{"issue_id":"`+otherID+`","confirm":true}`, store.ErrNotFound)
	f.ok(asOutsider, "get_issue", `{"issue_id":"`+otherID+`"}`) // untouched
}

// TestDeleteRepeatByOwner: the author retrying their own delete gets the same body.
// That needs the owner from the tombstone (store.DeleteResult.Owner), which every
// backend returns on a repeat (storetest checks it).
func TestDeleteRepeatByOwner(t *testing.T) {
	f := newFixture(t)
	call := func(who caller, tool, args string) (string, error) {
		t.Helper()
		return f.call(who, tool, args)
	}
	id, _ := f.newIssue(asMia, "mia's")
	c := f.ok(asBen, "comment_issue", `{"issue_id":"AAC-1","body":"ben's"}`)
	cid := c["id"].(string)

	firstC, err := call(asBen, "delete_comment", `{"comment_id":"`+cid+`","confirm":true}`)
	if err != nil {
		t.Fatal(err)
	}
	if againC, err := call(asBen, "delete_comment", `{"comment_id":"`+cid+`","confirm":true}`); err != nil || againC != firstC {
		t.Errorf("author's repeat of delete_comment = %s, %v; want %s", againC, err, firstC)
	}

	first, err := call(asMia, "delete_issue", `{"issue_id":"`+id+`","confirm":true}`)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := call(asMia, "delete_issue", `{"issue_id":"`+id+`","confirm":true}`); err != nil || again != first {
		t.Errorf("author's repeat of delete_issue = %s, %v; want %s", again, err, first)
	}
}

func TestDeleteComment(t *testing.T) {
	f := newFixture(t)
	f.newIssue(asMia, "discussed")
	f.newIssue(asOutsider, "theirs")
	mine := f.ok(asMia, "comment_issue", `{"issue_id":"AAC-1","body":"mia"}`)["id"].(string)
	bens := f.ok(asBen, "comment_issue", `{"issue_id":"AAC-1","body":"ben"}`)["id"].(string)
	theirs := f.ok(asOutsider, "comment_issue", `{"issue_id":"OTH-1","body":"x"}`)["id"].(string)

	f.fails(asBen, "delete_comment", `{"comment_id":"`+mine+`","confirm":true}`, apperr.PermissionDenied)

	first, err := f.call(asMia, "delete_comment", `{"comment_id":"`+mine+`","confirm":true}`)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"deleted":true,"comment_id":"` + mine + `"}`; first != want {
		t.Errorf("delete result = %s, want %s", first, want)
	}
	if again, err := f.call(asAdmin, "delete_comment", `{"comment_id":"`+mine+`","confirm":true}`); err != nil || again != first {
		t.Errorf("admin repeat = %s, %v; want %s", again, err, first)
	}
	f.fails(asBen, "delete_comment", `{"comment_id":"`+mine+`","confirm":true}`, apperr.PermissionDenied)
	if m := f.ok(asBen, "get_issue", `{"issue_id":"AAC-1"}`); m["comment_count"] != 1.0 {
		t.Errorf("comment_count after delete = %v, want 1", m["comment_count"])
	}

	if m := f.ok(asAdmin, "delete_comment", `{"comment_id":"`+bens+`","confirm":true}`); m["comment_id"] != bens {
		t.Errorf("admin delete = %v", m)
	}
	f.failsWith(asAdmin, "delete_comment", `{"comment_id":"01JQ3Z7R6W7YV1T0B3Q6Y2K9ZC","confirm":true}`, store.ErrNotFound)
	f.failsWith(asAdmin, "delete_comment", `{"comment_id":"`+theirs+`","confirm":true}`, store.ErrNotFound)
}

func mustTime(t *testing.T, v any) time.Time {
	t.Helper()
	s, _ := v.(string)
	tm, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("time %v: %v", v, err)
	}
	return tm
}

// deleteOnly fails any read: a delete tool makes one store call, the delete, which
// finds the item (or its tombstone) and applies the permission check itself, so the
// item judged is the item deleted and no tombstone is read outside the store.
type deleteOnly struct {
	store.Queries
	t *testing.T
}

func (s deleteOnly) GetIssue(context.Context, string, string) (store.Issue, error) {
	s.t.Error("a delete tool read the issue beside the store's delete")
	return store.Issue{}, store.NotFound("issue")
}

func (s deleteOnly) GetComment(context.Context, string, string) (store.Comment, error) {
	s.t.Error("a delete tool read the comment beside the store's delete")
	return store.Comment{}, store.NotFound("comment")
}

// TestDeleteJudgedInTheStore: a member deleting another's issue or comment is refused
// by the check the store applies in the delete, first time and on a repeat, and
// nothing is deleted; the owner deletes and repeats through the same single call.
func TestDeleteJudgedInTheStore(t *testing.T) {
	f := newFixture(t)
	f.newIssue(asMia, "mia's") // AAC-1, not Ben's
	cid := f.ok(asMia, "comment_issue", `{"issue_id":"AAC-1","body":"mia's words"}`)["id"].(string)
	only := deleteOnly{Queries: f.st, t: t}
	deleteIssue, deleteComment := `{"issue_id":"AAC-1","confirm":true}`, `{"comment_id":"`+cid+`","confirm":true}`

	for _, tc := range []struct{ tool, args string }{{"delete_comment", deleteComment}, {"delete_issue", deleteIssue}} {
		if _, err := f.callWith(only, asBen, tc.tool, tc.args); !apperr.Is(err, apperr.PermissionDenied) {
			t.Errorf("%s by a member who does not own it = %v, want permission_denied", tc.tool, err)
		}
	}
	if m := f.ok(asMia, "get_issue", `{"issue_id":"AAC-1"}`); m["comment_count"] != 1.0 {
		t.Errorf("issue or comment was deleted by a caller who may not delete them: %v", m)
	}
	for _, tc := range []struct{ tool, args string }{{"delete_comment", deleteComment}, {"delete_issue", deleteIssue}} {
		first, err := f.callWith(only, asMia, tc.tool, tc.args)
		if err != nil {
			t.Fatalf("%s by its owner: %v", tc.tool, err)
		}
		if again, err := f.callWith(only, asMia, tc.tool, tc.args); err != nil || again != first {
			t.Errorf("owner's repeat of %s = %s, %v; want %s", tc.tool, again, err, first)
		}
		if _, err := f.callWith(only, asBen, tc.tool, tc.args); !apperr.Is(err, apperr.PermissionDenied) {
			t.Errorf("repeat of %s by a member who did not own it = %v, want permission_denied", tc.tool, err)
		}
	}
}
