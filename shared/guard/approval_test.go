package guard_test

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/approval"
	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/confirm"
	"github.com/aacworkflow/aacmcp/shared/guard"
	gt "github.com/aacworkflow/aacmcp/shared/guard/guardtest"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// TestHumanApproval runs the policy approve through Call: a call without an
// approval is answered with the page's link (a refusal, or a URL elicitation to
// a client that declares one), bound to the call; the page's decision (written
// here as the page writes it, store.DecideApproval) is spent by exactly one call.
func TestHumanApproval(t *testing.T) {
	ctx := context.Background()
	w := gt.NewWorld(t)
	keys, err := confirm.EphemeralKeyring()
	if err != nil {
		t.Fatal(err)
	}
	now := w.Now
	sink := &gt.MemorySink{}
	g := guard.New(guard.Config{Catalog: w.Catalog, Store: w.Store, Audit: sink,
		Confirmations: w.Store, Keyring: keys, Approvals: w.Store, Now: func() time.Time { return now }})
	admin := gt.Principal(gt.WS, gt.Admin, auth.AllScopes...)
	if err := w.Store.SetDestructiveConfirmation(ctx, gt.WS, "approve"); err != nil {
		t.Fatal(err)
	}
	const base = "https://aac.example"
	fresh := func(t *testing.T) store.Issue {
		is, err := w.Store.CreateIssue(ctx, gt.WS, store.NewIssue{Title: "Doomed", Status: "open", Priority: "low", Labels: []string{}, CreatedBy: gt.Member, CreatedAt: w.Now})
		if err != nil {
			t.Fatal(err)
		}
		return is
	}
	args := func(id string) json.RawMessage { return json.RawMessage(`{"issue_id":"` + id + `","confirm":true}`) }
	call := func(p *auth.Principal, a json.RawMessage, urlMode bool, state string) guard.Result {
		return g.Call(ctx, guard.Request{Principal: p, Tool: "delete_issue", Args: a, Transport: "mcp",
			CanElicit: urlMode, CanElicitURL: urlMode, RequestState: state, PublicURL: base})
	}
	exists := func(id string) bool { _, err := w.Store.GetIssue(ctx, gt.WS, id); return err == nil }
	// linkOf finds the token in a refusal's text and checks the link's origin.
	linkOf := func(t *testing.T, res guard.Result) string {
		t.Helper()
		if res.Err == nil || res.Err.Code != apperr.HumanApprovalRequired {
			t.Fatalf("want human_approval_required, got %+v %+v", res.Err, res.InputRequired)
		}
		i := strings.Index(res.Err.Message, base+approval.PagePath+"?")
		if i < 0 {
			t.Fatalf("the refusal carries no link: %q", res.Err.Message)
		}
		u, err := url.Parse(res.Err.Message[i:])
		if err != nil {
			t.Fatal(err)
		}
		return u.Query().Get(approval.TokenParam)
	}
	decide := func(t *testing.T, token string, status store.ApprovalStatus) {
		t.Helper()
		c, err := keys.Open(token, now)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Store.DecideApproval(ctx, gt.WS, approval.Binding(c), c.Nonce, status, "dev:"+gt.Admin, "127.0.0.1", now); err != nil {
			t.Fatal(err)
		}
	}
	last := func() audit.Record { rs := sink.Records(); return rs[len(rs)-1] }

	t.Run("refusal carries the link; approval lets the same call run once", func(t *testing.T) {
		is := fresh(t)
		res := call(admin, args(is.ID), false, "")
		tok := linkOf(t, res)
		if r := last(); r.Confirmation != audit.ConfirmationApproved || r.Reason != string(apperr.HumanApprovalRequired) {
			t.Fatalf("record %+v", r)
		}
		// Asked again before the person decided: the same link.
		if again := linkOf(t, call(admin, args(is.ID), false, "")); again != tok {
			t.Fatal("a pending approval was answered with a new link")
		}
		decide(t, tok, store.ApprovalGranted)
		if res := call(admin, args(is.ID), false, ""); res.Err != nil || exists(is.ID) {
			t.Fatalf("approved call: %+v", res.Err)
		}
		if r := last(); r.Confirmation != audit.ConfirmationApproved || r.Outcome != audit.OutcomeSuccess {
			t.Fatalf("record %+v", r)
		}
	})

	t.Run("URL elicitation, retry with its state runs once, a replay is refused", func(t *testing.T) {
		is := fresh(t)
		res := call(admin, args(is.ID), true, "")
		ir := res.InputRequired
		if res.Err != nil || ir == nil || ir.URL != approval.Link(base, ir.State) || !strings.Contains(ir.Message, ir.URL) {
			t.Fatalf("want a URL elicitation, got %+v %+v", res.Err, ir)
		}
		if r := last(); r.Reason != string(apperr.HumanApprovalRequired) || r.Confirmation != audit.ConfirmationApproved {
			t.Fatalf("record %+v", r)
		}
		// Retried before the person decided: asked again, with the same link.
		if again := call(admin, args(is.ID), true, ir.State); again.InputRequired == nil || again.InputRequired.State != ir.State {
			t.Fatalf("undecided retry: %+v", again.Err)
		}
		decide(t, ir.State, store.ApprovalGranted)
		if res := call(admin, args(is.ID), true, ir.State); res.Err != nil || exists(is.ID) {
			t.Fatalf("retry: %+v", res.Err)
		}
		if res := call(admin, args(is.ID), true, ir.State); res.Err == nil || res.Err.Code != apperr.ConfirmationInvalid {
			t.Fatalf("replay: %+v", res.Err)
		}
	})

	t.Run("denied is declined once", func(t *testing.T) {
		is := fresh(t)
		tok := linkOf(t, call(admin, args(is.ID), false, ""))
		decide(t, tok, store.ApprovalDenied)
		if res := call(admin, args(is.ID), false, ""); res.Err == nil || res.Err.Code != apperr.ConfirmationDeclined || !exists(is.ID) {
			t.Fatalf("denied: %+v", res.Err)
		}
		// The denial is spent: the next call is asked anew, with a new link.
		if tok2 := linkOf(t, call(admin, args(is.ID), false, "")); tok2 == tok {
			t.Fatal("a denied approval's link was answered again")
		}
	})

	t.Run("an approval does not cover other arguments or another issue", func(t *testing.T) {
		is, other := fresh(t), fresh(t)
		tok := linkOf(t, call(admin, args(is.ID), false, ""))
		decide(t, tok, store.ApprovalGranted)
		// The same issue named by its key is other arguments (delete_issue has no
		// expected_version: the item's version is bound, "an edited item" below).
		if res := call(admin, args(is.Key), false, ""); res.Err == nil || res.Err.Code != apperr.HumanApprovalRequired {
			t.Fatalf("the same issue by key: %+v", res.Err)
		}
		if res := call(admin, args(other.ID), false, ""); res.Err == nil || res.Err.Code != apperr.HumanApprovalRequired || !exists(other.ID) {
			t.Fatalf("another issue: %+v", res.Err)
		}
		// The approval's token as the state of another issue's call is refused.
		if res := call(admin, args(other.ID), true, tok); res.Err == nil || res.Err.Code != apperr.ConfirmationInvalid {
			t.Fatalf("token of another call: %+v", res.Err)
		}
		if !exists(is.ID) || !exists(other.ID) {
			t.Fatal("something was deleted")
		}
	})

	t.Run("another principal of the same member is asked anew", func(t *testing.T) {
		is := fresh(t)
		tok := linkOf(t, call(admin, args(is.ID), false, ""))
		decide(t, tok, store.ApprovalGranted)
		p2 := *admin
		p2.TokenID = "tok_other"
		if res := call(&p2, args(is.ID), false, ""); res.Err == nil || res.Err.Code != apperr.HumanApprovalRequired || !exists(is.ID) {
			t.Fatalf("other principal: %+v", res.Err)
		}
	})

	t.Run("an edited item is asked anew", func(t *testing.T) {
		is := fresh(t)
		tok := linkOf(t, call(admin, args(is.ID), false, ""))
		decide(t, tok, store.ApprovalGranted)
		title := "Edited"
		if _, _, err := w.Store.UpdateIssue(ctx, gt.WS, is.ID, store.IssuePatch{Title: &title}); err != nil {
			t.Fatal(err)
		}
		if res := call(admin, args(is.ID), false, ""); res.Err == nil || res.Err.Code != apperr.HumanApprovalRequired || !exists(is.ID) {
			t.Fatalf("edited: %+v", res.Err)
		}
	})

	t.Run("forged and edited state is refused", func(t *testing.T) {
		is := fresh(t)
		ir := call(admin, args(is.ID), true, "").InputRequired
		b := []byte(ir.State)
		b[len(b)-3] ^= 1
		for _, st := range []string{string(b), "x" + ir.State, "AAAA"} {
			if res := call(admin, args(is.ID), true, st); res.Err == nil || res.Err.Code != apperr.ConfirmationInvalid {
				t.Fatalf("state %q: %+v", st, res.Err)
			}
		}
	})

	t.Run("expired", func(t *testing.T) {
		is := fresh(t)
		ir := call(admin, args(is.ID), true, "").InputRequired
		decide(t, ir.State, store.ApprovalGranted)
		now = now.Add(confirm.Lifetime)
		defer func() { now = w.Now }()
		if res := call(admin, args(is.ID), true, ir.State); res.Err == nil || res.Err.Code != apperr.ConfirmationInvalid || !exists(is.ID) {
			t.Fatalf("expired state: %+v", res.Err)
		}
		if res := call(admin, args(is.ID), false, ""); res.Err == nil || res.Err.Code != apperr.HumanApprovalRequired || !exists(is.ID) {
			t.Fatalf("expired approval: %+v", res.Err)
		}
	})
}
