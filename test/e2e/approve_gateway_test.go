package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"

	"github.com/aacworkflow/aacmcp/test/harness"
	"github.com/aacworkflow/aacmcp/test/mcpgotest"
)

// TestHumanApprovalThroughGateway: the workspace policy approve on the deployed
// path, `aacmcp gateway --dev --front-door` on dynalite. The MCP function's real
// code answers with a link of the front door's origin; the OAuth function's real
// code serves the approval page there, where a browser (a cookie jar, form by
// form) signs in with the dev sign-in and approves; the approval lives in
// DynamoDB, and the same call then deletes, once.
func TestHumanApprovalThroughGateway(t *testing.T) {
	bin, awsEnv, backend, data, cli := devOnDynalite(t)
	var tok createdToken
	if err := json.Unmarshal(cli("token", "create", "--workspace", "demo", "--user", "dev",
		"--scopes", "issues:read,issues:write", "--name", "approve", "--json"), &tok); err != nil {
		t.Fatal(err)
	}
	cli("workspace", "set", "--workspace", "demo", "--destructive-confirmation", "approve")
	gw, err := harness.Gateway(bin, awsEnv, append(backend, "--data", data, "--dev", "--front-door")...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := gw.Terminate(20 * time.Second); err != nil {
			t.Errorf("gateway did not exit cleanly on SIGTERM: %v\nstderr: %s", err, gw.Stderr())
		}
	})
	c := mcpgotest.Connect(t, gw.MCPURL, tok.Token, nil)

	create := func(title string) (id, key string) {
		res := mcpgotest.Call(t, c, "create_issue", map[string]any{"title": title})
		var is struct{ ID, Key string }
		if res.IsError || json.Unmarshal([]byte(mcpgotest.Text(res)), &is) != nil || is.ID == "" {
			t.Fatalf("create_issue: %s", mcpgotest.Text(res))
		}
		return is.ID, is.Key
	}
	del := func(c *mcpclient.Client, id string) (code, message string) {
		res := mcpgotest.Call(t, c, "delete_issue", map[string]any{"issue_id": id, "confirm": true})
		if !res.IsError {
			return "", ""
		}
		var body struct{ Code, Error string }
		_ = json.Unmarshal([]byte(mcpgotest.Text(res)), &body)
		return body.Code, body.Error
	}
	linkRE := regexp.MustCompile(`https?://\S+/oauth/approve\?\S+`)

	id, key := create("Approve me through the front door")
	code, msg := del(c, id)
	link := linkRE.FindString(msg)
	if code != "human_approval_required" || link == "" {
		t.Fatalf("first call: %q %q", code, msg)
	}
	if u, _ := url.Parse(link); u == nil || "http://"+u.Host != strings.TrimSuffix(gw.Base, "/") {
		t.Fatalf("the link %s is not of the front door's origin %s", link, gw.Base)
	}

	b := newFormBrowser(t)
	page := b.follow(link)
	if !strings.Contains(page, "Dev sign-in") {
		t.Fatalf("the link did not lead to the sign-in:\n%s", page)
	}
	page = b.submit(page, url.Values{"user": {"dev"}})
	if !strings.Contains(page, "Approve a delete") || !strings.Contains(page, key) || !strings.Contains(page, "personal token") {
		t.Fatalf("approval page:\n%s", page)
	}
	page = b.submit(page, url.Values{"decision": {"approve"}, "typed": {key}})
	if !strings.Contains(page, "Approved") {
		t.Fatalf("after Approve:\n%s", page)
	}
	if code, msg := del(c, id); code != "" {
		t.Fatalf("approved call: %s %s", code, msg)
	}
	res := mcpgotest.Call(t, c, "get_issue", map[string]any{"issue_id": id})
	if mcpgotest.ErrCode(res) != "not_found" {
		t.Fatalf("the issue is still there: %s", mcpgotest.Text(res))
	}
	// Used: the page says so, and a second approval of it cannot be given.
	if page := newFormBrowser(t).follow(link); !strings.Contains(page, "already decided") {
		t.Fatalf("used link:\n%s", page)
	}
}

// formBrowser follows redirects with a cookie jar and submits a page's one form
// with its hidden fields, as a person's browser would.
type formBrowser struct {
	t    *testing.T
	c    *http.Client
	base *url.URL
}

func newFormBrowser(t *testing.T) *formBrowser {
	jar, _ := cookiejar.New(nil)
	return &formBrowser{t: t, c: &http.Client{Jar: jar}}
}

func (b *formBrowser) read(res *http.Response, err error) string {
	b.t.Helper()
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	b.base = res.Request.URL
	return string(body)
}

func (b *formBrowser) follow(u string) string { return b.read(b.c.Get(u)) }

var (
	formActionRE  = regexp.MustCompile(`<form method="post" action="([^"]+)">`)
	hiddenFieldRE = regexp.MustCompile(`<input type="hidden" name="([a-z]+)" value="([^"]*)">`)
)

func (b *formBrowser) submit(page string, fields url.Values) string {
	b.t.Helper()
	m := formActionRE.FindStringSubmatch(page)
	if m == nil {
		b.t.Fatalf("no form on the page:\n%s", page)
	}
	action, err := b.base.Parse(strings.ReplaceAll(m[1], "&amp;", "&"))
	if err != nil {
		b.t.Fatal(err)
	}
	for _, h := range hiddenFieldRE.FindAllStringSubmatch(page, -1) {
		fields.Set(h[1], h[2])
	}
	return b.read(b.c.PostForm(action.String(), fields))
}
