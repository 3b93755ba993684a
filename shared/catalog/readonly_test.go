package catalog

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// reporter is the part of testing.T the recorder needs, so that its own test can
// count the failures it reports.
type reporter interface {
	Helper()
	Errorf(format string, args ...any)
}

// failingWriter implements every store.Writer method by failing the test. It names
// each method explicitly (no embedding), so a method added to store.Writer does not
// compile here until it is added to the recorder too.
type failingWriter struct{ t reporter }

var _ store.Writer = failingWriter{}

func (w failingWriter) fail(method string) error {
	w.t.Helper()
	w.t.Errorf("read-only tool called store.%s", method)
	return apperr.Internal(fmt.Errorf("read-only recorder: %s", method))
}

func (w failingWriter) CreateWorkspace(context.Context, store.Workspace) (store.Workspace, error) {
	return store.Workspace{}, w.fail("CreateWorkspace")
}
func (w failingWriter) UpdateMember(context.Context, store.Member) (store.Member, error) {
	return store.Member{}, w.fail("UpdateMember")
}
func (w failingWriter) DeleteMember(context.Context, string, string) error {
	return w.fail("DeleteMember")
}
func (w failingWriter) CreateAgent(context.Context, store.Agent) (store.Agent, error) {
	return store.Agent{}, w.fail("CreateAgent")
}
func (w failingWriter) CreateIssue(context.Context, string, store.NewIssue) (store.Issue, error) {
	return store.Issue{}, w.fail("CreateIssue")
}
func (w failingWriter) UpdateIssue(context.Context, string, string, store.IssuePatch) (store.Issue, bool, error) {
	return store.Issue{}, false, w.fail("UpdateIssue")
}
func (w failingWriter) DeleteIssue(context.Context, string, string, store.DeleteCheck) (store.DeleteResult, error) {
	return store.DeleteResult{}, w.fail("DeleteIssue")
}
func (w failingWriter) CreateComment(context.Context, string, string, store.NewComment) (store.Comment, error) {
	return store.Comment{}, w.fail("CreateComment")
}
func (w failingWriter) DeleteComment(context.Context, string, string, store.DeleteCheck) (store.DeleteResult, error) {
	return store.DeleteResult{}, w.fail("DeleteComment")
}
func (w failingWriter) CreateAutopilotRun(context.Context, string, store.AutopilotRun) (store.AutopilotRun, error) {
	return store.AutopilotRun{}, w.fail("CreateAutopilotRun")
}
func (w failingWriter) UpdateAutopilotRun(context.Context, string, store.AutopilotRun) (store.AutopilotRun, error) {
	return store.AutopilotRun{}, w.fail("UpdateAutopilotRun")
}
func (w failingWriter) UpdateUsage(context.Context, store.UsageIncrement) error {
	return w.fail("UpdateUsage")
}
func (w failingWriter) CreateIdempotency(context.Context, store.IdempotencyRecord) error {
	return w.fail("CreateIdempotency")
}
func (w failingWriter) UpdateIdempotency(context.Context, store.IdempotencyRecord) error {
	return w.fail("UpdateIdempotency")
}
func (w failingWriter) DeleteIdempotency(context.Context, store.IdempotencyKey, time.Time) error {
	return w.fail("DeleteIdempotency")
}
func (w failingWriter) UpdateRateCounter(context.Context, string, string, time.Time, time.Duration) (int64, error) {
	return 0, w.fail("UpdateRateCounter")
}

// readOnlyRecorder is a full store.Queries: reads go to a real store, every write
// fails the test. Handlers get it as their store, so even a handler that type-asserted
// its Reader back to a Writer would be caught.
type readOnlyRecorder struct {
	store.Reader
	failingWriter
}

var _ store.Queries = readOnlyRecorder{}

// readOnlyCase is a read-only tool's happy-path arguments, the result field that shows
// the handler really read something, and arguments that fail.
type readOnlyCase struct{ args, nonEmpty, failArgs string }

// readOnlySeed is what TestReadOnlyToolsNeverWrite's fixture holds: issue AAC-1 with
// one comment.
type readOnlySeed struct{ issueID, commentID string }

// readOnlyCases gives each read-only tool its case. A new read-only tool adds its own
// from its test file, in an init function, so that it needs no line here.
var readOnlyCases = map[string]func(readOnlySeed) readOnlyCase{
	"list_issues": func(readOnlySeed) readOnlyCase {
		return readOnlyCase{`{"limit":10}`, "issues", `{"cursor":"not-a-cursor"}`}
	},
	"get_issue": func(s readOnlySeed) readOnlyCase {
		return readOnlyCase{`{"issue_id":"` + s.issueID + `"}`, "id", `{"issue_id":"AAC-404"}`}
	},
	"list_comments": func(readOnlySeed) readOnlyCase {
		return readOnlyCase{`{"issue_id":"AAC-1"}`, "comments", `{"issue_id":"AAC-404"}`}
	},
	"dashboard_usage_daily": func(readOnlySeed) readOnlyCase {
		return readOnlyCase{`{}`, "days", `{"from":"2026-03-10","to":"2026-03-01"}`}
	},
}

// TestReadOnlyToolsNeverWrite runs every tool whose catalog entry says ReadOnly, on its
// happy path and on a failing path, against a store that fails on any mutation.
func TestReadOnlyToolsNeverWrite(t *testing.T) {
	f := newFixture(t)
	id, _ := f.newIssue(asMia, "read me")
	cm := f.ok(asBen, "comment_issue", `{"issue_id":"AAC-1","body":"a comment"}`)
	if err := f.st.UpdateUsage(t.Context(), store.UsageIncrement{
		WorkspaceID: wsDemo, Date: testNow.Format(dateLayout), Tool: "get_issue", Outcome: "success", EventID: "ro-1",
	}); err != nil {
		t.Fatal(err)
	}
	seed := readOnlySeed{issueID: id, commentID: cm["id"].(string)}

	rec := readOnlyRecorder{Reader: f.st, failingWriter: failingWriter{t: t}}
	ran := 0
	for _, tool := range f.cat.Tools() {
		if !tool.Annotations.ReadOnly {
			continue
		}
		ran++
		t.Run(tool.Name, func(t *testing.T) {
			mk, ok := readOnlyCases[tool.Name]
			if !ok {
				t.Fatalf("no case for read-only tool %s: add one to readOnlyCases from its test file", tool.Name)
			}
			tc := mk(seed)
			out, err := f.callWith(rec, asBen, tool.Name, tc.args)
			if err != nil {
				t.Fatalf("happy path: %v", err)
			}
			var m map[string]json.RawMessage
			if err := json.Unmarshal([]byte(out), &m); err != nil {
				t.Fatal(err)
			}
			if v := string(m[tc.nonEmpty]); v == "" || v == "[]" || v == `""` || v == "null" {
				t.Errorf("result %s has empty %s: the handler read nothing", out, tc.nonEmpty)
			}
			if _, err := f.callWith(rec, asBen, tool.Name, tc.failArgs); err == nil {
				t.Errorf("failing arguments %s succeeded", tc.failArgs)
			}
		})
	}
	if ran != len(readOnlyCases) {
		t.Errorf("ran %d read-only tools, have cases for %d", ran, len(readOnlyCases))
	}
}

// countingReporter counts the failures the recorder reports.
type countingReporter struct{ n int }

func (*countingReporter) Helper()                 {}
func (c *countingReporter) Errorf(string, ...any) { c.n++ }

// TestRecorderCatchesWrites shows the recorder can fail: a mutating tool run against it
// is reported.
func TestRecorderCatchesWrites(t *testing.T) {
	f := newFixture(t)
	rep := &countingReporter{}
	rec := readOnlyRecorder{Reader: f.st, failingWriter: failingWriter{t: rep}}
	if _, err := f.callWith(rec, asBen, "create_issue", `{"title":"sneaky"}`); !apperr.Is(err, apperr.InternalError) {
		t.Errorf("create_issue through the recorder = %v, want the recorder's error", err)
	}
	if rep.n != 1 {
		t.Errorf("recorder reported %d writes, want 1", rep.n)
	}
}
