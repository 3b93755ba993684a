package catalog

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/store"
	"github.com/aacworkflow/aacmcp/shared/store/memory"
)

// FuzzToolArguments feeds arbitrary arguments to every handler against a real store.
// Whatever arrives, a handler must not panic and must answer with an apperr value or a
// storage error (the guard maps those); for arguments the input schema admits (what
// the guard lets through) it must never be an internal_error, and a success must match
// the output schema.
func FuzzToolArguments(f *testing.F) {
	seeds := []struct {
		tool string
		args string
	}{
		{"list_issues", `{}`}, {"list_issues", `{"status":"open","limit":1}`}, {"list_issues", `{"cursor":"zzz"}`}, {"list_issues", `{"limit":-1}`},
		{"get_issue", `{"issue_id":"AAC-1"}`}, {"get_issue", `{"issue_id":"AAC-99999999999999999"}`}, {"get_issue", `{"issue_id":null}`},
		{"list_comments", `{"issue_id":"AAC-1","limit":100}`},
		{"dashboard_usage_daily", `{"from":"2026-02-29"}`}, {"dashboard_usage_daily", `{"from":"0000-01-01","to":"9999-12-31"}`},
		{"create_issue", `{"title":"t","labels":["a","a"]}`}, {"create_issue", `{"title":"t","status":"bogus"}`},
		{"update_issue", `{"issue_id":"AAC-1","title":"x","expected_version":99}`}, {"update_issue", `{"issue_id":"AAC-1"}`},
		{"comment_issue", `{"issue_id":"AAC-1","body":"b"}`},
		{"assign_issue_to_agent", `{"issue_id":"AAC-1","agent_id":"agent-1"}`},
		{"trigger_autopilot", `{"issue_id":"AAC-1","instructions":"go"}`},
		{"delete_issue", `{"issue_id":"AAC-2","confirm":true}`},
		{"delete_comment", `{"comment_id":"x","confirm":true}`},
		{"create_issue", `[]`}, {"create_issue", `{"title":"a"} trailing`}, {"create_issue", ``}, {"create_issue", `{"title":"\u0000"}`},
		{"get_issue", `{"issue_id":"a","issue_id":"b"}`}, {"get_issue", `{"issue_id":"\ud800"}`}, {"delete_comment", "{\"comment_id\":\"\u00e9\xff\"}"},
	}
	st := memory.New()
	ctx := context.Background()
	if _, err := st.CreateWorkspace(ctx, store.Workspace{ID: wsDemo, Key: "AAC", Name: "Demo"}); err != nil {
		f.Fatal(err)
	}
	if _, err := st.CreateAgent(ctx, store.Agent{WorkspaceID: wsDemo, ID: agentID}); err != nil {
		f.Fatal(err)
	}
	for range 2 {
		if _, err := st.CreateIssue(ctx, wsDemo, store.NewIssue{Title: "seed", Status: "open", Priority: "medium",
			Labels: []string{}, CreatedBy: admin, CreatedAt: testNow}); err != nil {
			f.Fatal(err)
		}
	}

	cat := New(Deps{Dispatcher: &recordingDispatcher{}})
	tools := cat.Tools()
	// Seeds name their tool; the fuzzer's byte picks a tool by position, so the seeds
	// keep their meaning when a tool is added or the order changes.
	for _, s := range seeds {
		i := slices.IndexFunc(tools, func(t Tool) bool { return t.Name == s.tool })
		if i < 0 {
			f.Fatalf("seed names %q, which is not in the catalog", s.tool)
		}
		f.Add(byte(i), []byte(s.args))
	}
	in := map[string]interface{ Validate(any) error }{}
	out := map[string]interface{ Validate(any) error }{}
	for _, tool := range tools {
		in[tool.Name] = compileSchema(f, tool.Name+"/input", tool.InputSchema)
		out[tool.Name] = compileSchema(f, tool.Name+"/output", tool.OutputSchema)
	}

	f.Fuzz(func(t *testing.T, which byte, args []byte) {
		tool := tools[int(which)%len(tools)]
		checkResourceID(t, tool, args)
		c := Call{
			Principal: auth.Principal{WorkspaceID: wsDemo, UserID: admin, Scopes: auth.AllScopes},
			Role:      KnownRole(store.RoleAdmin), Args: args, Now: testNow,
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var res any
		var err error
		if tool.Read != nil {
			res, err = tool.Read(ctx, c, st)
		} else {
			res, err = tool.Write(ctx, c, st)
		}

		inst, jerr := decodeInstance(args)
		admitted := jerr == nil && in[tool.Name].Validate(inst) == nil
		if err != nil {
			if !decided(err) {
				t.Fatalf("%s(%q): error %v is neither an apperr value nor a storage error", tool.Name, args, err)
			}
			if admitted && apperr.CodeOf(err) == apperr.InternalError && !store.IsStorage(err) {
				t.Fatalf("%s(%q): internal_error for schema-valid arguments: %v", tool.Name, args, err)
			}
			return
		}
		b, err := json.Marshal(res)
		if err != nil {
			t.Fatalf("%s(%q): result does not encode: %v", tool.Name, args, err)
		}
		if admitted {
			v, _ := decodeInstance(b)
			if err := out[tool.Name].Validate(v); err != nil {
				t.Fatalf("%s(%q): result %s fails the output schema: %v", tool.Name, args, b, err)
			}
		}
	})
}

// checkResourceID compares tool.ResourceID, which takes the arguments as the guard
// decodes them, with resourceIDFromRaw, the function it replaced (which decoded the
// raw bytes itself), on every input the guard passes on: one JSON object.
func checkResourceID(t *testing.T, tool Tool, args []byte) {
	t.Helper()
	field := tool.ResourceArg
	inst, err := decodeInstance(args)
	obj, ok := inst.(map[string]any)
	if err != nil || !ok {
		return
	}
	got := tool.ResourceID(obj)
	if len(got) > maxResourceIDLen {
		t.Errorf("ResourceID returned %d bytes", len(got))
	}
	if want := resourceIDFromRaw(field)(args); got != want {
		t.Errorf("%s ResourceID(%q) = %q, the raw-bytes version gives %q", tool.Name, args, got, want)
	}
}

// resourceIDFromRaw is ResourceID as it was before it took decoded arguments: the
// oracle for the fuzz comparison.
func resourceIDFromRaw(field string) func(json.RawMessage) string {
	return func(args json.RawMessage) string {
		if field == "" {
			return ""
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(args, &m) != nil {
			return ""
		}
		var id string
		if json.Unmarshal(m[field], &id) != nil || len(id) > maxResourceIDLen {
			return ""
		}
		return id
	}
}
