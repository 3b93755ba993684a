package security

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	gt "github.com/aacworkflow/aacmcp/shared/guard/guardtest"
	"github.com/aacworkflow/aacmcp/shared/mcpserver"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// idFields are the arguments that name a stored item.
var idFields = []string{"issue_id", "comment_id", "agent_id"}

// toolSchema is the part of an input schema the matrix needs.
type toolSchema struct {
	Properties map[string]json.RawMessage `json:"properties"`
}

// validFill are values that pass each argument's schema and name nothing foreign.
func validFill(w *gt.World) map[string]any {
	return map[string]any{
		"issue_id": w.Issue.ID, "comment_id": w.Comment.ID, "agent_id": gt.Agent,
		"body": "cross-tenant probe", "title": "cross-tenant probe", "instructions": "probe",
		"confirm": true,
	}
}

// TestCrossTenantMatrix calls every tool that takes an id with ids of another
// workspace (UUID and key forms, comments, agents), over both transports, as an
// admin holding every scope: each call is not_found, indistinguishable from an id
// that does not exist, audited once in the caller's workspace, and the other
// workspace is left exactly as it was.
func TestCrossTenantMatrix(t *testing.T) {
	e := newEnv(t, mcpserverConfig())
	ctx := context.Background()
	w := e.w
	theirAgent, err := w.Store.CreateAgent(ctx, store.Agent{WorkspaceID: gt.OtherWS, ID: "their-agent", Name: "Theirs", CreatedAt: time.Now().UTC()})
	if err != nil {
		t.Fatal(err)
	}
	theirComment, err := w.Store.CreateComment(ctx, gt.OtherWS, w.OtherIssue.ID, store.NewComment{Author: gt.Outsider, Body: "theirs", CreatedAt: time.Now().UTC()})
	if err != nil {
		t.Fatal(err)
	}
	before, err := w.Store.GetIssue(ctx, gt.OtherWS, w.OtherIssue.ID)
	if err != nil {
		t.Fatal(err)
	}

	foreign := map[string][]string{
		"issue_id":   {w.OtherIssue.ID, w.OtherIssue.Key},
		"comment_id": {theirComment.ID},
		"agent_id":   {theirAgent.ID},
	}
	// Ids of the same shapes that exist nowhere: the answer must be the same.
	missing := map[string]string{
		"issue_id":   "00000000-0000-4000-8000-000000000000",
		"comment_id": "01ZZZZZZZZZZZZZZZZZZZZZZZZ",
		"agent_id":   "no-such-agent",
	}

	covered := map[string]bool{}
	calls := 0
	for _, tool := range w.Catalog.Tools() {
		var sch toolSchema
		if err := json.Unmarshal(tool.InputSchema, &sch); err != nil {
			t.Fatalf("%s: input schema: %v", tool.Name, err)
		}
		for _, field := range idFields {
			if _, ok := sch.Properties[field]; !ok {
				continue
			}
			covered[tool.Name] = true
			for _, tr := range transports {
				// The answer for an id that exists nowhere is the reference.
				args := fill(w, sch, field, missing[field])
				ref, _ := e.call(t, tr, e.admin, tool.Name, args)
				calls++
				if ref.Code != string(apperr.NotFound) {
					t.Fatalf("%s over %s with a missing %s: code %q, want not_found (the matrix needs a reference)", tool.Name, tr, field, ref.Code)
				}
				for _, id := range foreign[field] {
					args := fill(w, sch, field, id)
					r, rec := e.call(t, tr, e.admin, tool.Name, args)
					calls++
					if r.Code != string(apperr.NotFound) {
						t.Errorf("%s over %s with %s=%q of another workspace: code %q (HTTP %d), want not_found", tool.Name, tr, field, id, r.Code, r.Status)
						continue
					}
					if r.Message != ref.Message || r.Status != ref.Status {
						t.Errorf("%s over %s: another workspace's %s answers %d %q, a missing one %d %q: existence leaks",
							tool.Name, tr, field, r.Status, r.Message, ref.Status, ref.Message)
					}
					if rec.Reason != "not_found" || rec.Outcome != "error" || rec.WorkspaceID != gt.WS || rec.Tool != tool.Name {
						t.Errorf("%s over %s: audit record reason=%q outcome=%q workspace=%q tool=%q", tool.Name, tr, rec.Reason, rec.Outcome, rec.WorkspaceID, rec.Tool)
					}
				}
			}
		}
	}
	// Every tool that takes an id is in the matrix (a new tool joins it by itself).
	want := []string{"get_issue", "list_comments", "update_issue", "comment_issue", "assign_issue_to_agent", "trigger_autopilot", "delete_issue", "delete_comment"}
	for _, name := range want {
		if !covered[name] {
			t.Errorf("%s takes an id but was not in the matrix", name)
		}
	}

	after, err := w.Store.GetIssue(ctx, gt.OtherWS, w.OtherIssue.ID)
	if err != nil {
		t.Fatalf("the other workspace's issue is gone: %v", err)
	}
	if after.Version != before.Version || after.Title != before.Title || after.CommentCount != before.CommentCount || after.Assignee != nil {
		t.Errorf("the other workspace's issue changed: before %+v, after %+v", before, after)
	}
	if _, err := w.Store.GetComment(ctx, gt.OtherWS, theirComment.ID); err != nil {
		t.Errorf("the other workspace's comment is gone: %v", err)
	}
	t.Logf("cross-tenant matrix: %d tools, %d calls, all not_found and audited", len(covered), calls)
}

// fill builds arguments with field set to id and every other argument the tool
// takes valid and naming this workspace's own items.
func fill(w *gt.World, sch toolSchema, field, id string) map[string]any {
	args := map[string]any{field: id}
	for name, v := range validFill(w) {
		if _, ok := sch.Properties[name]; ok && name != field {
			args[name] = v
		}
	}
	return args
}

// TestWorkspaceComesFromTheToken: no argument can choose the workspace. A
// workspace_id argument is refused as unknown, and another workspace's valid token
// sees only its own workspace.
func TestWorkspaceComesFromTheToken(t *testing.T) {
	e := newEnv(t, mcpserverConfig())
	for _, tr := range transports {
		r, _ := e.call(t, tr, e.admin, "list_issues", map[string]any{"workspace_id": gt.OtherWS})
		if r.Code != string(apperr.InvalidArguments) {
			t.Errorf("%s: list_issues with workspace_id: code %q, want invalid_arguments", tr, r.Code)
		}
		r, _ = e.call(t, tr, e.outsider, "get_issue", map[string]any{"issue_id": e.w.Issue.ID})
		if r.Code != string(apperr.NotFound) {
			t.Errorf("%s: another workspace's token reading acme's issue: code %q, want not_found", tr, r.Code)
		}
		r, rec := e.call(t, tr, e.outsider, "list_issues", map[string]any{"limit": 100})
		if r.Code != "" {
			t.Fatalf("%s: list_issues as outsider: %q", tr, r.Code)
		}
		var page struct {
			Issues []struct {
				ID string `json:"id"`
			} `json:"issues"`
		}
		if err := json.Unmarshal(r.Result, &page); err != nil {
			t.Fatal(err)
		}
		ids := []string{}
		for _, is := range page.Issues {
			ids = append(ids, is.ID)
		}
		if !slices.Equal(ids, []string{e.w.OtherIssue.ID}) {
			t.Errorf("%s: outsider lists %v, want only their own issue %s", tr, ids, e.w.OtherIssue.ID)
		}
		if rec.WorkspaceID != gt.OtherWS {
			t.Errorf("%s: audit workspace %q, want %q", tr, rec.WorkspaceID, gt.OtherWS)
		}
	}
}

func mcpserverConfig() mcpserver.Config {
	return mcpserver.Config{ServerName: "aacmcp-security", ServerVersion: "test", Logger: discard}
}
