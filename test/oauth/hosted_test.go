package oauth_test

import (
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/test/oauth/flow"
)

// The documents of the hosted clients, as docs/clients.md gives them, served by the
// test's HTTPS fixture server: only client_id differs (it must be the URL the
// document is served at). claude.ai's is its published body; Claude Code's and
// Copilot CLI's carry the members reported for them.
var (
	claudeDocument = flow.ClientDocument{
		ClientName: "Claude", ClientURI: "https://claude.ai",
		RedirectURIs:            []string{"https://claude.ai/api/mcp/auth_callback"},
		GrantTypes:              []string{"authorization_code", "refresh_token", "urn:ietf:params:oauth:grant-type:jwt-bearer"},
		ResponseTypes:           []string{"code"},
		TokenEndpointAuthMethod: "none",
	}
	claudeCodeDocument = flow.ClientDocument{
		ClientName:              "Claude Code",
		RedirectURIs:            []string{"http://localhost/callback", "http://127.0.0.1/callback"},
		GrantTypes:              []string{"authorization_code", "refresh_token"},
		ResponseTypes:           []string{"code"},
		TokenEndpointAuthMethod: "none",
	}
	copilotDocument = flow.ClientDocument{
		ClientName:              "GitHub Copilot CLI",
		ApplicationType:         "native",
		RedirectURIs:            []string{"http://127.0.0.1:33418/"},
		GrantTypes:              []string{"authorization_code", "refresh_token"},
		ResponseTypes:           []string{"code"},
		TokenEndpointAuthMethod: "none",
	}
)

// hostedJob is one authorization the browser goes through (hosted.mjs).
type hostedJob struct {
	Name        string         `json:"name"`
	AuthURL     string         `json:"auth_url"`
	RedirectURI string         `json:"redirect_uri"`
	Answer      map[string]any `json:"answer"`

	clientID, verifier, state string
	// redeemWith is the redirect_uri sent to the token endpoint; "": RedirectURI.
	redeemWith string
	scopes     []string
}

type hostedResult struct {
	Name     string            `json:"name"`
	Query    map[string]string `json:"query"`
	Consents []struct {
		Offered []string `json:"offered"`
		Text    string   `json:"text"`
		Buttons map[string]struct {
			Top, Bottom, Viewport float64
			Visible               bool
		} `json:"buttons"`
	} `json:"consents"`
}

// ephemeralPort is a port the kernel hands out, free again for hosted.mjs to
// listen on: a native client's listener.
func ephemeralPort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// TestHostedClients: documents shaped like those of claude.ai, Claude Code and
// GitHub Copilot CLI are accepted, and a person connects each in chromium through
// the dev sign-in and consent pages (Allow and Deny in view at 1280x800 with all
// seven scopes asked); each code is redeemed and the token calls /mcp. Claude Code
// authorizes with an ephemeral port on localhost and on 127.0.0.1, Copilot with
// another port than the one it declares; a code redeemed with another port than
// its authorization's is refused, and so is another path at authorization.
func TestHostedClients(t *testing.T) {
	ca := flow.NewCA(t)
	docs := flow.StartCIMD(t, ca)
	srv := flow.Serve(t, flow.ServeOptions{Dev: true, Env: []string{"SSL_CERT_FILE=" + ca.WriteBundle(t)}})
	claude := docs.Publish(t, "claude-ai", claudeDocument)
	claudeCode := docs.Publish(t, "claude-code", claudeCodeDocument)
	copilot := docs.Publish(t, "copilot-cli", copilotDocument)
	docsHost := strings.TrimPrefix(claude[:strings.Index(claude, "/clients/")], "https://")

	var allScopes []string
	if err := json.Unmarshal([]byte(scopesJSON(t)), &allScopes); err != nil {
		t.Fatal(err)
	}
	job := func(name, clientID, redirect string, scopes []string) *hostedJob {
		j := &hostedJob{Name: name, RedirectURI: redirect, clientID: clientID, scopes: scopes,
			verifier: strings.Repeat("v", 20) + strings.ReplaceAll(name, " ", "-") + strings.Repeat("x", 30),
			state:    "state-" + strings.ReplaceAll(name, " ", "-"),
			Answer:   map[string]any{"user": flow.DevUser, "allScopes": allScopes}}
		j.AuthURL = flow.AuthorizationURL(srv.Base, clientID, redirect, strings.Join(scopes, " "), j.state, j.verifier)
		return j
	}
	// A client asking again for what it holds gets no scope to tick: each Claude
	// Code authorization asks for one more.
	read := []string{"issues:read"}
	localhost, loopback, stolen, copilotPort := ephemeralPort(t), ephemeralPort(t), ephemeralPort(t), ephemeralPort(t)
	for copilotPort == "33418" { // the case is another port than the declared one
		copilotPort = ephemeralPort(t)
	}
	jobs := []*hostedJob{
		job("claude.ai", claude, "https://claude.ai/api/mcp/auth_callback", allScopes),
		job("Claude Code on localhost", claudeCode, "http://localhost:"+localhost+"/callback", read),
		job("Claude Code on 127.0.0.1", claudeCode, "http://127.0.0.1:"+loopback+"/callback", []string{"comments:read"}),
		job("Claude Code redeemed on another port", claudeCode, "http://localhost:"+stolen+"/callback", []string{"dashboard:read"}),
		job("Copilot CLI on another port than declared", copilot, "http://127.0.0.1:"+copilotPort+"/", read),
	}
	jobs[3].redeemWith = "http://localhost:" + localhost + "/callback"

	// Another path is refused at authorization with a page, never a redirect.
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, bad := range []string{"http://localhost:" + localhost + "/other", "http://127.0.0.1:" + copilotPort + "/x"} {
		id := claudeCode
		if strings.HasSuffix(bad, "/x") {
			id = copilot
		}
		resp, err := noFollow.Get(flow.AuthorizationURL(srv.Base, id, bad, "issues:read", "s", strings.Repeat("v", 43)))
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Location") != "" {
			t.Errorf("authorize %s for %s: HTTP %d, Location %q; want 400 and a page", bad, id, resp.StatusCode, resp.Header.Get("Location"))
		}
	}

	b, err := json.Marshal(jobs)
	if err != nil {
		t.Fatal(err)
	}
	resultFile := filepath.Join(t.TempDir(), "result.json")
	out, err := flow.NodeScript(t, "hosted.mjs", []string{"AACMCP_JOBS=" + string(b), "AACMCP_RESULT_FILE=" + resultFile, "AACMCP_UNRESOLVED=claude.ai"}, nil, 3*time.Minute)
	t.Logf("hosted.mjs:\n%s", out)
	if m := nodeSummary.FindSubmatch(out); err != nil || m == nil || string(m[2]) != "0" {
		t.Fatalf("node hosted.mjs: %v\n%s\nserver log:\n%s", err, out, srv.Logs())
	}
	raw, err := os.ReadFile(resultFile)
	if err != nil {
		t.Fatal(err)
	}
	var results []hostedResult
	if err := json.Unmarshal(raw, &results); err != nil || len(results) != len(jobs) {
		t.Fatalf("results %s: %v", raw, err)
	}

	for i, j := range jobs {
		res := results[i]
		t.Run(j.Name, func(t *testing.T) {
			if res.Query["state"] != j.state || res.Query["iss"] != srv.Base || res.Query["code"] == "" {
				t.Fatalf("the redirect to %s carried %v, want a code, state %q and iss %q", j.RedirectURI, res.Query, j.state, srv.Base)
			}
			if len(res.Consents) != 1 {
				t.Fatalf("%d consent pages, want 1", len(res.Consents))
			}
			c := res.Consents[0]
			if !slices.Equal(slices.Sorted(slices.Values(c.Offered)), slices.Sorted(slices.Values(j.scopes))) {
				t.Errorf("the consent page offered %q, want %q", c.Offered, j.scopes)
			}
			for _, name := range []string{"allow", "deny"} {
				if bt := c.Buttons[name]; !bt.Visible || bt.Viewport != 800 {
					t.Errorf("the %s button is at %.0f-%.0f px of an %.0f px window, visible %v: want it in view without scrolling", name, bt.Top, bt.Bottom, bt.Viewport, bt.Visible)
				}
			}
			name := map[string]string{claude: "Claude", claudeCode: "Claude Code", copilot: "GitHub Copilot CLI"}[j.clientID]
			if !strings.Contains(c.Text, "Allow "+name+" to use AACWorkflow?") || !strings.Contains(c.Text, docsHost) {
				t.Errorf("the consent page does not name %q and the host %s that publishes it:\n%s", name, docsHost, c.Text)
			}

			redeemWith := j.redeemWith
			if redeemWith == "" {
				redeemWith = j.RedirectURI
			}
			status, tok := tokenCall(t, srv, url.Values{"grant_type": {"authorization_code"}, "client_id": {j.clientID},
				"code": {res.Query["code"]}, "redirect_uri": {redeemWith}, "code_verifier": {j.verifier}})
			if j.redeemWith != "" {
				if status != http.StatusBadRequest || tok["error"] != "invalid_grant" {
					t.Fatalf("a code of %s redeemed with %s: HTTP %d %v, want invalid_grant", j.RedirectURI, redeemWith, status, tok)
				}
				return
			}
			access, _ := tok["access_token"].(string)
			if status != http.StatusOK || access == "" {
				t.Fatalf("token: HTTP %d %v", status, tok)
			}
			if got := mcpStatus(t, srv.MCPURL, access); got != http.StatusOK {
				t.Fatalf("tools/list with the access token: HTTP %d, want 200", got)
			}
			refresh, _ := tok["refresh_token"].(string)
			status, tok = tokenCall(t, srv, url.Values{"grant_type": {"refresh_token"}, "client_id": {j.clientID}, "refresh_token": {refresh}})
			if access, _ = tok["access_token"].(string); status != http.StatusOK || mcpStatus(t, srv.MCPURL, access) != http.StatusOK {
				t.Fatalf("refresh: HTTP %d %v, and its access token must call /mcp", status, tok)
			}
		})
	}

	// The grant claude.ai lists and this server does not offer is refused when used.
	status, body := tokenCall(t, srv, url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:jwt-bearer"}, "client_id": {claude}, "assertion": {"a.b.c"}})
	if status != http.StatusBadRequest || body["error"] != "unsupported_grant_type" {
		t.Errorf("the jwt-bearer grant: HTTP %d %v, want unsupported_grant_type", status, body)
	}
	for _, id := range []string{claude, claudeCode, copilot} {
		if docs.Fetches(id) == 0 {
			t.Errorf("the server never fetched %s", id)
		}
	}
}

// tokenCall posts a form to the token endpoint and decodes the JSON answer.
func tokenCall(t *testing.T, srv *flow.Server, form url.Values) (int, map[string]any) {
	t.Helper()
	resp, err := http.PostForm(srv.Base+"/oauth/token", form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("token answer: HTTP %d: %v", resp.StatusCode, err)
	}
	return resp.StatusCode, body
}
