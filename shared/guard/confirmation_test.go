package guard_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/confirm"
	"github.com/aacworkflow/aacmcp/shared/guard"
	gt "github.com/aacworkflow/aacmcp/shared/guard/guardtest"
	"github.com/aacworkflow/aacmcp/shared/store"
)

func answer(action, typed string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{confirm.ElicitationID: map[string]any{
		"action": action, "content": map[string]any{confirm.Field: typed}}})
	return b
}

// TestHumanConfirmation runs the elicit and require policies through Call: the
// first call is answered input_required, the retry with the sealed state and the
// person's answer either deletes or is refused with the reason the issue names.
func TestHumanConfirmation(t *testing.T) {
	ctx := context.Background()
	w := gt.NewWorld(t)
	keys, err := confirm.EphemeralKeyring()
	if err != nil {
		t.Fatal(err)
	}
	g := guard.New(guard.Config{Catalog: w.Catalog, Store: w.Store, Audit: &gt.MemorySink{},
		Confirmations: w.Store, Keyring: keys})
	admin := gt.Principal(gt.WS, gt.Admin, auth.AllScopes...)
	other := gt.Principal(gt.WS, gt.Member, auth.AllScopes...)

	fresh := func(t *testing.T) store.Issue {
		is, err := w.Store.CreateIssue(ctx, gt.WS, store.NewIssue{Title: "Doomed", Status: "open", Priority: "low", Labels: []string{}, CreatedBy: gt.Member, CreatedAt: w.Now})
		if err != nil {
			t.Fatal(err)
		}
		return is
	}
	args := func(id string) json.RawMessage { return json.RawMessage(`{"issue_id":"` + id + `","confirm":true}`) }
	ask := func(t *testing.T, p *auth.Principal, a json.RawMessage) *guard.InputRequired {
		t.Helper()
		res := g.Call(ctx, guard.Request{Principal: p, Tool: "delete_issue", Args: a, Transport: "mcp", CanElicit: true})
		if res.Err != nil || res.InputRequired == nil {
			t.Fatalf("first call: err %v, input required %v", res.Err, res.InputRequired)
		}
		return res.InputRequired
	}
	exists := func(t *testing.T, id string) bool {
		_, err := w.Store.GetIssue(ctx, gt.WS, id)
		return err == nil
	}

	if err := w.Store.SetDestructiveConfirmation(ctx, gt.WS, "elicit"); err != nil {
		t.Fatal(err)
	}

	t.Run("no capability under elicit is flag", func(t *testing.T) {
		is := fresh(t)
		res := g.Call(ctx, guard.Request{Principal: admin, Tool: "delete_issue", Args: args(is.ID), Transport: "mcp"})
		if res.Err != nil || res.InputRequired != nil || exists(t, is.ID) {
			t.Fatalf("got %+v", res.Err)
		}
	})

	cases := []struct {
		name    string
		by      *auth.Principal
		state   func(ir *guard.InputRequired, is store.Issue) string
		argsFor func(is store.Issue) json.RawMessage
		resp    func(ir *guard.InputRequired, is store.Issue) json.RawMessage
		want    apperr.Code
	}{
		{"accepted", admin, nil, nil, func(ir *guard.InputRequired, is store.Issue) json.RawMessage { return answer("accept", is.Key) }, ""},
		{"declined", admin, nil, nil, func(*guard.InputRequired, store.Issue) json.RawMessage { return answer("decline", "") }, apperr.ConfirmationDeclined},
		{"wrong key", admin, nil, nil, func(*guard.InputRequired, store.Issue) json.RawMessage { return answer("accept", "ACME-999") }, apperr.ConfirmationDeclined},
		{"tampered", admin, func(ir *guard.InputRequired, _ store.Issue) string {
			b := []byte(ir.State)
			b[len(b)/2] ^= 1
			return string(b)
		}, nil, func(ir *guard.InputRequired, is store.Issue) json.RawMessage { return answer("accept", is.Key) }, apperr.ConfirmationInvalid},
		{"other user's token", other, nil, nil, func(ir *guard.InputRequired, is store.Issue) json.RawMessage { return answer("accept", is.Key) }, apperr.ConfirmationInvalid},
		{"other issue", admin, nil, func(store.Issue) json.RawMessage { return args(w.Issue.ID) }, func(ir *guard.InputRequired, is store.Issue) json.RawMessage { return answer("accept", w.Issue.Key) }, apperr.ConfirmationInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			is := fresh(t)
			ir := ask(t, admin, args(is.ID))
			if !strings.Contains(ir.Question.Message, is.Key) {
				t.Errorf("question %q does not name %s", ir.Question.Message, is.Key)
			}
			state := ir.State
			if tc.state != nil {
				state = tc.state(ir, is)
			}
			a := args(is.ID)
			if tc.argsFor != nil {
				a = tc.argsFor(is)
			}
			res := g.Call(ctx, guard.Request{Principal: tc.by, Tool: "delete_issue", Args: a, Transport: "mcp",
				CanElicit: true, RequestState: state, InputResponses: tc.resp(ir, is)})
			var got apperr.Code
			if res.Err != nil {
				got = res.Err.Code
			}
			if got != tc.want {
				t.Fatalf("retry: got %q, want %q", got, tc.want)
			}
			if deleted := !exists(t, is.ID); deleted != (tc.want == "") {
				t.Fatalf("deleted = %v", deleted)
			}
			if tc.want == "" {
				// The retried retry: the nonce is spent.
				again := g.Call(ctx, guard.Request{Principal: tc.by, Tool: "delete_issue", Args: a, Transport: "mcp",
					CanElicit: true, RequestState: state, InputResponses: tc.resp(ir, is)})
				if again.Err == nil || again.Err.Code != apperr.ConfirmationInvalid {
					t.Fatalf("replay: got %v, want %s", again.Err, apperr.ConfirmationInvalid)
				}
			}
		})
	}

	t.Run("expired", func(t *testing.T) {
		is := fresh(t)
		ir := ask(t, admin, args(is.ID))
		later := guard.New(guard.Config{Catalog: w.Catalog, Store: w.Store, Audit: &gt.MemorySink{},
			Confirmations: w.Store, Keyring: keys, Now: func() time.Time { return time.Now().Add(confirm.Lifetime + time.Minute) }})
		res := later.Call(ctx, guard.Request{Principal: admin, Tool: "delete_issue", Args: args(is.ID), Transport: "mcp",
			CanElicit: true, RequestState: ir.State, InputResponses: answer("accept", is.Key)})
		if res.Err == nil || res.Err.Code != apperr.ConfirmationInvalid || !exists(t, is.ID) {
			t.Fatalf("got %v", res.Err)
		}
	})

	t.Run("item changed in between", func(t *testing.T) {
		is := fresh(t)
		ir := ask(t, admin, args(is.ID))
		title := "Renamed after the question"
		if _, _, err := w.Store.UpdateIssue(ctx, gt.WS, is.ID, store.IssuePatch{Title: &title}); err != nil {
			t.Fatal(err)
		}
		res := g.Call(ctx, guard.Request{Principal: admin, Tool: "delete_issue", Args: args(is.ID), Transport: "mcp",
			CanElicit: true, RequestState: ir.State, InputResponses: answer("accept", is.Key)})
		if res.Err == nil || res.Err.Code != apperr.ConfirmationInvalid || !exists(t, is.ID) {
			t.Fatalf("got %v", res.Err)
		}
	})

	// Nobody is asked about a delete the tool itself would refuse or has nothing
	// to do for: the tool answers at once, and no nonce is spent on it.
	t.Run("member who may not delete is not asked", func(t *testing.T) {
		is := fresh(t) // created by Member, so Member2 may not delete it
		res := g.Call(ctx, guard.Request{Principal: gt.Principal(gt.WS, gt.Member2, auth.AllScopes...), Tool: "delete_issue",
			Args: args(is.ID), Transport: "mcp", CanElicit: true})
		if res.InputRequired != nil || res.Err == nil || res.Err.Code != apperr.PermissionDenied || !exists(t, is.ID) {
			t.Fatalf("input required %v, err %v", res.InputRequired, res.Err)
		}
	})
	t.Run("deleted item is answered by the tool, not asked about", func(t *testing.T) {
		is := fresh(t)
		ir := ask(t, admin, args(is.ID))
		if res := g.Call(ctx, guard.Request{Principal: admin, Tool: "delete_issue", Args: args(is.ID), Transport: "mcp",
			CanElicit: true, RequestState: ir.State, InputResponses: answer("accept", is.Key)}); res.Err != nil || exists(t, is.ID) {
			t.Fatalf("accepted retry: %v", res.Err)
		}
		// The delete is made; asking again names nothing that exists. The tool's own
		// answer for a repeat (the first result, from the tombstone) is given instead.
		res := g.Call(ctx, guard.Request{Principal: admin, Tool: "delete_issue", Args: args(is.ID), Transport: "mcp", CanElicit: true})
		if res.Err != nil || res.InputRequired != nil {
			t.Fatalf("repeat without state: input required %v, err %v", res.InputRequired, res.Err)
		}
		// The same answer sent again is a replay: confirmation_invalid, not not_found.
		res = g.Call(ctx, guard.Request{Principal: admin, Tool: "delete_issue", Args: args(is.ID), Transport: "mcp",
			CanElicit: true, RequestState: ir.State, InputResponses: answer("accept", is.Key)})
		if res.Err == nil || res.Err.Code != apperr.ConfirmationInvalid {
			t.Fatalf("replay after the delete: %v", res.Err)
		}
	})

	t.Run("require without capability", func(t *testing.T) {
		if err := w.Store.SetDestructiveConfirmation(ctx, gt.WS, "require"); err != nil {
			t.Fatal(err)
		}
		is := fresh(t)
		res := g.Call(ctx, guard.Request{Principal: admin, Tool: "delete_issue", Args: args(is.ID), Transport: "rest"})
		if res.Err == nil || res.Err.Code != apperr.HumanConfirmationRequired || !exists(t, is.ID) {
			t.Fatalf("got %v", res.Err)
		}
	})
}

// TestConfirmationRecorded: every record says how its call was confirmed: ""
// for other tools and for a delete stopped before or at the confirm check, flag
// for one that passed on confirm: true alone (whatever refused it later), and
// elicited once the person is asked. The question itself is a denial
// (human_confirmation_required), never a success: nothing was deleted.
func TestConfirmationRecorded(t *testing.T) {
	ctx := context.Background()
	w := gt.NewWorld(t)
	keys, err := confirm.EphemeralKeyring()
	if err != nil {
		t.Fatal(err)
	}
	sink := &gt.MemorySink{}
	g := guard.New(guard.Config{Catalog: w.Catalog, Store: w.Store, Audit: sink, Confirmations: w.Store, Keyring: keys})
	admin := gt.Principal(gt.WS, gt.Admin, auth.AllScopes...)
	fresh := func(t *testing.T) store.Issue {
		is, err := w.Store.CreateIssue(ctx, gt.WS, store.NewIssue{Title: "Doomed", Status: "open", Priority: "low", Labels: []string{}, CreatedBy: gt.Member, CreatedAt: w.Now})
		if err != nil {
			t.Fatal(err)
		}
		return is
	}
	del := func(id string) json.RawMessage { return json.RawMessage(`{"issue_id":"` + id + `","confirm":true}`) }
	type step struct {
		req        func(is store.Issue, prev guard.Result) guard.Request
		outcome    string
		reason     apperr.Code
		confirmStr string
	}
	plain := func(p *auth.Principal, tool string, args func(store.Issue) string, canElicit bool) func(store.Issue, guard.Result) guard.Request {
		return func(is store.Issue, _ guard.Result) guard.Request {
			return guard.Request{Principal: p, Tool: tool, Args: json.RawMessage(args(is)), Transport: "mcp", CanElicit: canElicit}
		}
	}
	retry := func(resp func(is store.Issue) json.RawMessage) func(store.Issue, guard.Result) guard.Request {
		return func(is store.Issue, prev guard.Result) guard.Request {
			return guard.Request{Principal: admin, Tool: "delete_issue", Args: del(is.ID), Transport: "mcp", CanElicit: true,
				RequestState: prev.InputRequired.State, InputResponses: resp(is)}
		}
	}
	withConfirm := func(is store.Issue) string { return string(del(is.ID)) }
	cases := []struct {
		name   string
		policy string
		steps  []step
	}{
		{"read-only tool", "elicit", []step{{plain(admin, "get_issue", func(is store.Issue) string { return `{"issue_id":"` + is.ID + `"}` }, true), "success", "", ""}}},
		{"non-destructive write", "require", []step{{plain(admin, "update_issue", func(is store.Issue) string { return `{"issue_id":"` + is.ID + `","title":"x"}` }, false), "success", "", ""}}},
		{"scope refused before the confirm check", "flag", []step{{plain(gt.Principal(gt.WS, gt.Admin, "issues:read"), "delete_issue", withConfirm, false), "denied", apperr.InsufficientScope, ""}}},
		{"no confirm", "elicit", []step{{plain(admin, "delete_issue", func(is store.Issue) string { return `{"issue_id":"` + is.ID + `"}` }, true), "denied", apperr.DestructiveFlagMissing, ""}}},
		{"flag", "flag", []step{{plain(admin, "delete_issue", withConfirm, true), "success", "", audit.ConfirmationFlag}}},
		{"flag, refused later", "flag", []step{{plain(gt.Principal(gt.WS, gt.Viewer, auth.AllScopes...), "delete_issue", withConfirm, false), "denied", apperr.PermissionDenied, audit.ConfirmationFlag}}},
		{"elicit, client cannot ask", "elicit", []step{{plain(admin, "delete_issue", withConfirm, false), "success", "", audit.ConfirmationFlag}}},
		{"require, client cannot ask", "require", []step{{plain(admin, "delete_issue", withConfirm, false), "denied", apperr.HumanConfirmationRequired, audit.ConfirmationFlag}}},
		{"elicit, accepted", "elicit", []step{
			{plain(admin, "delete_issue", withConfirm, true), "denied", apperr.HumanConfirmationRequired, audit.ConfirmationElicited},
			{retry(func(is store.Issue) json.RawMessage { return answer("accept", is.Key) }), "success", "", audit.ConfirmationElicited},
		}},
		{"require, declined", "require", []step{
			{plain(admin, "delete_issue", withConfirm, true), "denied", apperr.HumanConfirmationRequired, audit.ConfirmationElicited},
			{retry(func(store.Issue) json.RawMessage { return answer("decline", "") }), "denied", apperr.ConfirmationDeclined, audit.ConfirmationElicited},
		}},
		{"elicit, tampered state", "elicit", []step{
			{plain(admin, "delete_issue", withConfirm, true), "denied", apperr.HumanConfirmationRequired, audit.ConfirmationElicited},
			{func(is store.Issue, prev guard.Result) guard.Request {
				return guard.Request{Principal: admin, Tool: "delete_issue", Args: del(is.ID), Transport: "mcp", CanElicit: true,
					RequestState: prev.InputRequired.State + "x", InputResponses: answer("accept", is.Key)}
			}, "denied", apperr.ConfirmationInvalid, audit.ConfirmationElicited},
		}},
		{"elicit, member who may not delete is not asked", "elicit", []step{
			{plain(gt.Principal(gt.WS, gt.Member2, auth.AllScopes...), "delete_issue", withConfirm, true), "denied", apperr.PermissionDenied, audit.ConfirmationFlag},
		}},
		{"elicit, state from another call", "elicit", []step{
			{plain(admin, "delete_issue", withConfirm, true), "denied", apperr.HumanConfirmationRequired, audit.ConfirmationElicited},
			{func(is store.Issue, prev guard.Result) guard.Request {
				return guard.Request{Principal: admin, Tool: "delete_issue", Args: del(w.Issue.ID), Transport: "mcp", CanElicit: true,
					RequestState: prev.InputRequired.State, InputResponses: answer("accept", w.Issue.Key)}
			}, "denied", apperr.ConfirmationInvalid, audit.ConfirmationElicited},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := w.Store.SetDestructiveConfirmation(ctx, gt.WS, tc.policy); err != nil {
				t.Fatal(err)
			}
			is := fresh(t)
			var prev guard.Result
			for i, s := range tc.steps {
				sink.Reset()
				res := g.Call(ctx, s.req(is, prev))
				recs := sink.Records()
				if len(recs) != 1 {
					t.Fatalf("step %d: %d records", i, len(recs))
				}
				r := recs[0]
				if r.Outcome != s.outcome || r.Reason != string(s.reason) || r.Confirmation != s.confirmStr {
					t.Errorf("step %d: outcome %q reason %q confirmation %q, want %q %q %q",
						i, r.Outcome, r.Reason, r.Confirmation, s.outcome, s.reason, s.confirmStr)
				}
				if err := r.Validate(); err != nil {
					t.Errorf("step %d: %v", i, err)
				}
				if s.reason == apperr.HumanConfirmationRequired && s.confirmStr == audit.ConfirmationElicited &&
					(res.InputRequired == nil || res.Err != nil) {
					t.Fatalf("step %d: the question was not answered input_required: %v", i, res.Err)
				}
				prev = res
			}
		})
	}
}

// TestQuestionWithoutRecord: a question whose record cannot be written is not
// put: the caller gets internal_error, as for any call without a record.
func TestQuestionWithoutRecord(t *testing.T) {
	ctx := context.Background()
	w := gt.NewWorld(t)
	keys, err := confirm.EphemeralKeyring()
	if err != nil {
		t.Fatal(err)
	}
	sink := &gt.MemorySink{Fail: errors.New("disk full")}
	g := guard.New(guard.Config{Catalog: w.Catalog, Store: w.Store, Audit: sink, Confirmations: w.Store, Keyring: keys,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := w.Store.SetDestructiveConfirmation(ctx, gt.WS, "elicit"); err != nil {
		t.Fatal(err)
	}
	res := g.Call(ctx, guard.Request{Principal: gt.Principal(gt.WS, gt.Admin, auth.AllScopes...), Tool: "delete_issue",
		Args: json.RawMessage(`{"issue_id":"` + w.Issue.ID + `","confirm":true}`), Transport: "mcp", CanElicit: true})
	if res.InputRequired != nil || res.Err == nil || res.Err.Code != apperr.InternalError {
		t.Fatalf("input required %v, err %v", res.InputRequired, res.Err)
	}
}

// TestJudgedAnswerSpendsNonce: an answer the server judges (accepted with the
// wrong value, declined, cancelled) spends the state's nonce, so the same
// requestState sent again with the right answer is a replay, confirmation_invalid,
// and deletes nothing. Each judged answer is recorded as declined.
func TestJudgedAnswerSpendsNonce(t *testing.T) {
	ctx := context.Background()
	w := gt.NewWorld(t)
	keys, err := confirm.EphemeralKeyring()
	if err != nil {
		t.Fatal(err)
	}
	sink := &gt.MemorySink{}
	g := guard.New(guard.Config{Catalog: w.Catalog, Store: w.Store, Audit: sink, Confirmations: w.Store, Keyring: keys})
	admin := gt.Principal(gt.WS, gt.Admin, auth.AllScopes...)
	for _, policy := range []string{"elicit", "require"} {
		for _, first := range []struct {
			name string
			resp func(is store.Issue) json.RawMessage
		}{
			{"wrong key", func(store.Issue) json.RawMessage { return answer("accept", "ACME-999") }},
			{"decline", func(store.Issue) json.RawMessage { return answer("decline", "") }},
			{"cancel", func(store.Issue) json.RawMessage { return answer("cancel", "") }},
		} {
			t.Run(policy+"/"+first.name, func(t *testing.T) {
				if err := w.Store.SetDestructiveConfirmation(ctx, gt.WS, policy); err != nil {
					t.Fatal(err)
				}
				is, err := w.Store.CreateIssue(ctx, gt.WS, store.NewIssue{Title: "Doomed", Status: "open", Priority: "low", Labels: []string{}, CreatedBy: gt.Member, CreatedAt: w.Now})
				if err != nil {
					t.Fatal(err)
				}
				req := guard.Request{Principal: admin, Tool: "delete_issue", Args: json.RawMessage(`{"issue_id":"` + is.ID + `","confirm":true}`),
					Transport: "mcp", CanElicit: true}
				res := g.Call(ctx, req)
				if res.InputRequired == nil {
					t.Fatalf("first call: %v", res.Err)
				}
				req.RequestState = res.InputRequired.State
				req.InputResponses = first.resp(is)
				sink.Reset()
				if res := g.Call(ctx, req); res.Err == nil || res.Err.Code != apperr.ConfirmationDeclined {
					t.Fatalf("judged answer: got %v, want %s", res.Err, apperr.ConfirmationDeclined)
				}
				if recs := sink.Records(); len(recs) != 1 || recs[0].Outcome != "denied" || recs[0].Reason != string(apperr.ConfirmationDeclined) {
					t.Fatalf("judged answer's record: %+v", recs)
				}
				req.InputResponses = answer("accept", is.Key)
				if res := g.Call(ctx, req); res.Err == nil || res.Err.Code != apperr.ConfirmationInvalid {
					t.Fatalf("replay with the right answer: got %v, want %s", res.Err, apperr.ConfirmationInvalid)
				}
				if _, err := w.Store.GetIssue(ctx, gt.WS, is.ID); err != nil {
					t.Fatalf("the replay deleted the issue: %v", err)
				}
			})
		}
	}
}

// TestConfirmationEveryDestructiveTool: every destructive tool of the catalog is
// asked about, refused on a wrong answer and run on the right one under elicit and
// require, from its declaration alone (the guard names no tool). delete_comment's
// question is checked word for word: the person types "delete", and it names the
// comment's issue.
func TestConfirmationEveryDestructiveTool(t *testing.T) {
	ctx := context.Background()
	w := gt.NewWorld(t)
	keys, err := confirm.EphemeralKeyring()
	if err != nil {
		t.Fatal(err)
	}
	g := guard.New(guard.Config{Catalog: w.Catalog, Store: w.Store, Audit: &gt.MemorySink{}, Confirmations: w.Store, Keyring: keys})
	admin := gt.Principal(gt.WS, gt.Admin, auth.AllScopes...)
	n := 0
	for _, tool := range w.Catalog.Tools() {
		if !tool.Annotations.Destructive {
			continue
		}
		n++
		for _, policy := range []string{"elicit", "require"} {
			t.Run(tool.Name+"/"+policy, func(t *testing.T) {
				if err := w.Store.SetDestructiveConfirmation(ctx, gt.WS, policy); err != nil {
					t.Fatal(err)
				}
				for _, answerRight := range []bool{false, true} {
					req := guard.Request{Principal: admin, Tool: tool.Name, Args: w.Args(t, tool.Name), Transport: "mcp", CanElicit: true}
					first := g.Call(ctx, req)
					if first.Err != nil || first.InputRequired == nil || first.InputRequired.Question.Expect == "" {
						t.Fatalf("first call: err %v, input required %+v", first.Err, first.InputRequired)
					}
					q := first.InputRequired.Question
					if tool.Name == "delete_comment" {
						if q.Expect != "delete" || !strings.HasPrefix(q.Message, `Delete the comment on `+w.Issue.Key+` "doomed"?`) {
							t.Fatalf("delete_comment's question: %+v", q)
						}
					}
					req.RequestState = first.InputRequired.State
					req.InputResponses = answer("accept", q.Expect)
					if !answerRight {
						req.InputResponses = answer("accept", q.Expect+"x")
					}
					res := g.Call(ctx, req)
					switch {
					case !answerRight && (res.Err == nil || res.Err.Code != apperr.ConfirmationDeclined):
						t.Fatalf("wrong answer: %v", res.Err)
					case answerRight && (res.Err != nil || !strings.Contains(string(res.JSON), `"deleted":true`)):
						t.Fatalf("right answer: %v, %s", res.Err, res.JSON)
					}
					if again := g.Call(ctx, req); again.Err == nil || again.Err.Code != apperr.ConfirmationInvalid {
						t.Fatalf("replay: %v", again.Err)
					}
				}
			})
		}
	}
	if n < 2 {
		t.Fatalf("%d destructive tools in the catalog", n)
	}
}
