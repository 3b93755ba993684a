package oauth

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/approval"
	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/catalog"
	"github.com/aacworkflow/aacmcp/shared/confirm"
	"github.com/aacworkflow/aacmcp/shared/guard"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// approvalRig is the harness with the approval page on, and a guard on the same
// store, keys and clock making the calls the page approves.
type approvalRig struct {
	*harness
	g     *guard.Guard
	calls *memSink
	alice *auth.Principal
}

func newApprovalRig(t *testing.T) *approvalRig {
	t.Helper()
	keys, err := confirm.EphemeralKeyring()
	if err != nil {
		t.Fatal(err)
	}
	cat := catalog.New(catalog.Deps{})
	h := newHarness(t, func(h *harness, c *Config) {
		c.Approvals = &approval.Desk{Keys: keys, Store: h.st, Items: h.st, Catalog: cat}
	})
	if err := h.st.SetDestructiveConfirmation(context.Background(), "demo", "approve"); err != nil {
		t.Fatal(err)
	}
	calls := &memSink{}
	g := guard.New(guard.Config{Catalog: cat, Store: h.st, Audit: calls, Now: h.clock.Now,
		Confirmations: h.st, Keyring: keys, Approvals: h.st})
	return &approvalRig{harness: h, g: g, calls: calls,
		alice: &auth.Principal{WorkspaceID: "demo", UserID: "alice", TokenID: "tok_alice", Scopes: auth.AllScopes}}
}

func (r *approvalRig) issue(t *testing.T) store.Issue {
	t.Helper()
	is, err := r.st.CreateIssue(context.Background(), "demo", store.NewIssue{Title: "Doomed <b>plan</b>", Status: "open", Priority: "low",
		Labels: []string{}, CreatedBy: "bob", CreatedAt: testEpoch})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.st.CreateComment(context.Background(), "demo", is.ID, store.NewComment{Author: "bob", Body: "one", CreatedAt: testEpoch}); err != nil {
		t.Fatal(err)
	}
	return is
}

// del calls delete_issue as alice through the guard, as REST would.
func (r *approvalRig) del(id string) guard.Result {
	return r.g.Call(context.Background(), guard.Request{Principal: r.alice, Tool: "delete_issue", Transport: audit.TransportREST,
		Args: json.RawMessage(`{"issue_id":"` + id + `","confirm":true}`), PublicURL: r.issuer, SourceIP: "127.0.0.1"})
}

// link is the approval link of a refused call.
func (r *approvalRig) link(t *testing.T, res guard.Result) string {
	t.Helper()
	if res.Err == nil || res.Err.Code != apperr.HumanApprovalRequired {
		t.Fatalf("want human_approval_required, got %+v", res.Err)
	}
	i := strings.Index(res.Err.Message, r.issuer+approval.PagePath)
	if i < 0 {
		t.Fatalf("no link in %q", res.Err.Message)
	}
	return res.Err.Message[i:]
}

func (r *approvalRig) gone(id string) bool {
	_, err := r.st.GetIssue(context.Background(), "demo", id)
	return err != nil
}

// open signs user in through the link in a fresh browser and returns the
// browser and the page it lands on.
func (r *approvalRig) open(t *testing.T, link, user string) (*browser, response) {
	t.Helper()
	b := r.browser()
	return b, b.signIn(t, link, user)
}

// decide submits the page's form.
func decide(t *testing.T, b *browser, page response, decision, typed string) response {
	t.Helper()
	if page.status != http.StatusOK {
		t.Fatalf("approval page: %d\n%s", page.status, page.body)
	}
	f := hidden(t, page.body)
	f.Set("decision", decision)
	f.Set("typed", typed)
	return b.post(approval.PagePath, f)
}

// TestApprovalPage drives the page as a browser does (the dev sign-in, forms,
// cookies): who may decide, what the page shows and how, and that a decision is
// spent by one call.
func TestApprovalPage(t *testing.T) {
	t.Run("approve after typing the key; the same call then runs once", func(t *testing.T) {
		r := newApprovalRig(t)
		is := r.issue(t)
		b, page := r.open(t, r.link(t, r.del(is.ID)), "alice")
		if page.status != http.StatusOK {
			t.Fatalf("approval page: %d\n%s", page.status, page.body)
		}
		contains(t, page.body, is.Key, "Doomed &lt;b&gt;plan&lt;/b&gt;", "personal token", "alice", "delete_issue", "<td>1</td>",
			"Type <strong>"+is.Key+"</strong>", `value="approve">Approve`, `value="deny">Deny`)
		if strings.Contains(page.body, "<b>plan") || strings.Contains(page.body, "<script") {
			t.Fatal("the page carries markup from the item, or a script")
		}
		csp := page.header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "script-src") {
			t.Fatalf("CSP %q", csp)
		}
		// A wrong key leaves the question open, with a new form.
		again := decide(t, b, page, "approve", "AAC-999")
		contains(t, again.body, "What you typed is not "+is.Key)
		if r.gone(is.ID) || r.del(is.ID).Err.Code != apperr.HumanApprovalRequired {
			t.Fatal("a wrong key approved the call")
		}
		// The stale form's token is spent.
		if stale := decide(t, b, page, "approve", is.Key); stale.status != http.StatusForbidden {
			t.Fatalf("stale CSRF: %d", stale.status)
		}
		done := decide(t, b, again, "approve", strings.ToLower(is.Key))
		contains(t, done.body, "Approved")
		rec, ok := r.sink.last(audit.ActionApprovalGranted)
		if !ok || rec.Outcome != audit.OutcomeSuccess || rec.UserID != "alice" || rec.WorkspaceID != "demo" || rec.SourceIP != "127.0.0.1" || rec.TokenID != "tok_alice" {
			t.Fatalf("approval record %+v", rec)
		}
		if res := r.del(is.ID); res.Err != nil || !r.gone(is.ID) {
			t.Fatalf("approved call: %+v", res.Err)
		}
		if last := r.calls.recs[len(r.calls.recs)-1]; last.Confirmation != audit.ConfirmationApproved || last.Outcome != audit.OutcomeSuccess {
			t.Fatalf("call record %+v", last)
		}
		// The form posted again after the decision is refused: the sign-in is spent.
		if replay := decide(t, b, again, "approve", is.Key); replay.status == http.StatusOK {
			t.Fatalf("replayed form: %d\n%s", replay.status, replay.body)
		}
	})

	t.Run("another member sees that it is not theirs", func(t *testing.T) {
		r := newApprovalRig(t)
		is := r.issue(t)
		link := r.link(t, r.del(is.ID))
		_, page := r.open(t, link, "bob")
		if page.status != http.StatusForbidden {
			t.Fatalf("bob's page: %d\n%s", page.status, page.body)
		}
		contains(t, page.body, "This approval is not yours", "alice")
		rec, ok := r.sink.last(audit.ActionApprovalGranted)
		if !ok || rec.Outcome != audit.OutcomeDenied || rec.Reason != string(apperr.PermissionDenied) || rec.UserID != "bob" {
			t.Fatalf("refusal record %+v", rec)
		}
		// Someone of another workspace learns nothing of who asked.
		if _, err := r.st.UpdateMember(context.Background(), store.Member{WorkspaceID: "other", UserID: "carol", Role: store.RoleMember, CreatedAt: testEpoch}); err != nil {
			t.Fatal(err)
		}
		r.srv.cfg.DevWorkspace = "other"
		_, page = r.open(t, link, "carol")
		r.srv.cfg.DevWorkspace = DefaultDevWorkspace
		contains(t, page.body, "This approval is not yours", "someone else")
		if strings.Contains(page.body, "alice") || strings.Contains(page.body, "demo") {
			t.Fatalf("an outsider's page names the member or workspace:\n%s", page.body)
		}
		// alice can still approve it.
		b, page := r.open(t, link, "alice")
		contains(t, decide(t, b, page, "approve", is.Key).body, "Approved")
		if res := r.del(is.ID); res.Err != nil {
			t.Fatalf("approved call: %+v", res.Err)
		}
	})

	t.Run("deny", func(t *testing.T) {
		r := newApprovalRig(t)
		is := r.issue(t)
		b, page := r.open(t, r.link(t, r.del(is.ID)), "alice")
		contains(t, decide(t, b, page, "deny", "").body, "Denied")
		if rec, ok := r.sink.last(audit.ActionApprovalDenied); !ok || rec.Outcome != audit.OutcomeSuccess || rec.UserID != "alice" {
			t.Fatalf("denial record %+v", rec)
		}
		if res := r.del(is.ID); res.Err == nil || res.Err.Code != apperr.ConfirmationDeclined || r.gone(is.ID) {
			t.Fatalf("denied call: %+v", res.Err)
		}
	})

	t.Run("forged, edited, expired and used links are refused", func(t *testing.T) {
		r := newApprovalRig(t)
		is := r.issue(t)
		link := r.link(t, r.del(is.ID))
		u, _ := url.Parse(link)
		tok := u.Query().Get(approval.TokenParam)
		edited := []byte(tok)
		edited[len(edited)/2] ^= 2
		for name, l := range map[string]string{
			"edited": approval.Link(r.issuer, string(edited)),
			"forged": approval.Link(r.issuer, "AQZhYmNkZWZnaGlqa2xtbm9wcXJzdHV2d3h5ejAxMjM0NTY3ODk"),
			"junk":   r.issuer + approval.PagePath + "?" + approval.TokenParam + "=%3Cscript%3E",
		} {
			page := r.browser().get(l)
			if page.status != http.StatusBadRequest || !strings.Contains(page.body, "not valid") {
				t.Fatalf("%s link: %d\n%s", name, page.status, page.body)
			}
		}
		if rec, ok := r.sink.last(audit.ActionApprovalGranted); !ok || rec.Reason != string(apperr.ConfirmationInvalid) || rec.SourceIP != "127.0.0.1" {
			t.Fatalf("forged link record %+v", rec)
		}
		r.clock.Advance(confirm.Lifetime + time.Second)
		if page := r.browser().get(link); page.status != http.StatusGone {
			t.Fatalf("expired link: %d\n%s", page.status, page.body)
		}
		if res := r.del(is.ID); res.Err == nil || res.Err.Code != apperr.HumanApprovalRequired || r.gone(is.ID) {
			t.Fatalf("after expiry: %+v", res.Err)
		}
		// A fresh link, approved and used, cannot be approved again.
		fresh := r.link(t, r.del(is.ID))
		b, page := r.open(t, fresh, "alice")
		decide(t, b, page, "approve", is.Key)
		if res := r.del(is.ID); res.Err != nil {
			t.Fatalf("approved: %+v", res.Err)
		}
		if page := r.browser().get(fresh); page.status != http.StatusConflict && page.status != http.StatusGone {
			t.Fatalf("used link: %d\n%s", page.status, page.body)
		}
	})
}
