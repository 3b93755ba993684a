package oauth

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/catalog"
	"github.com/aacworkflow/aacmcp/shared/oauth/clientmeta"
	"github.com/aacworkflow/aacmcp/shared/store"
	"github.com/aacworkflow/aacmcp/shared/store/memory"
)

var testEpoch = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// clock is the one clock of a test: server, store and verifier share it.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// memSink keeps every audit record; fail makes writes fail.
type memSink struct {
	mu      sync.Mutex
	recs    []audit.Record
	invalid []error
	fail    bool
}

func (m *memSink) Write(_ context.Context, r audit.Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail {
		return io.ErrClosedPipe
	}
	// What every real sink checks before it files a record.
	if err := r.Validate(); err != nil {
		m.invalid = append(m.invalid, err)
		return err
	}
	m.recs = append(m.recs, r)
	return nil
}

func (m *memSink) actions() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, r := range m.recs {
		out = append(out, r.Action)
	}
	return out
}

func (m *memSink) last(action string) (audit.Record, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := len(m.recs) - 1; i >= 0; i-- {
		if m.recs[i].Action == action {
			return m.recs[i], true
		}
	}
	return audit.Record{}, false
}

type harness struct {
	t      *testing.T
	st     *memory.Store
	clock  *clock
	sink   *memSink
	srv    *Server
	live   atomic.Pointer[Server] // srv, for the handler goroutines
	ts     *httptest.Server
	issuer string
}

// option changes the Config; h.issuer is already known when it runs.
type option func(h *harness, c *Config)

// newHarness serves a Server over the in-memory store (the OAuth conformance suite
// holds it to the same contract as SQLite and DynamoDB) on 127.0.0.1, with the dev
// sign-in, and the workspaces demo (alice admin, bob member) and other (alice).
func newHarness(t *testing.T, mods ...option) *harness {
	t.Helper()
	ctx := context.Background()
	h := &harness{t: t, clock: &clock{t: testEpoch}, sink: &memSink{}}
	t.Cleanup(func() {
		for _, err := range h.sink.invalid {
			t.Errorf("the server wrote an invalid audit record: %v", err)
		}
	})
	quiet := slog.New(slog.DiscardHandler)
	st := memory.New(memory.WithClock(h.clock.Now))
	h.st = st
	for _, ws := range []string{"demo", "other"} {
		if _, err := st.CreateWorkspace(ctx, store.Workspace{ID: ws, Key: strings.ToUpper(ws[:3]), Name: ws, CreatedAt: testEpoch}); err != nil {
			t.Fatalf("CreateWorkspace: %v", err)
		}
	}
	for _, m := range []store.Member{
		{WorkspaceID: "demo", UserID: "alice", Role: store.RoleAdmin, Email: "alice@example.com"},
		{WorkspaceID: "other", UserID: "alice", Role: store.RoleMember, Email: "alice@example.com"},
		{WorkspaceID: "demo", UserID: "bob", Role: store.RoleMember, Email: "Bob@Example.com"},
	} {
		m.CreatedAt = testEpoch
		if _, err := st.UpdateMember(ctx, m); err != nil {
			t.Fatalf("UpdateMember: %v", err)
		}
	}
	cfg := Config{
		Store: st, Tokens: st, Sink: h.sink, Catalog: catalog.New(catalog.Deps{}),
		Clients: clientmeta.NewFetcher(clientmeta.Options{AllowLoopback: true, Now: h.clock.Now}),
		Dev:     true, Counter: st, Now: h.clock.Now, Logger: quiet,
	}
	// The listener comes first: an upstream provider must know our callback URL.
	h.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Request-Id", "req-test")
		h.live.Load().ServeOAuth(w, r, h.issuer)
	}))
	t.Cleanup(h.ts.Close)
	h.issuer = h.ts.URL
	for _, m := range mods {
		m(h, &cfg)
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h.srv = srv
	h.live.Store(srv)
	return h
}

// rows counts the records of every OAuth table and of the tokens table: what a
// refused request must leave unchanged.
func (h *harness) rows() map[string]int { return h.st.OAuthRecords() }

// verifier is the verifier the MCP endpoint uses, on the same store and clock.
func (h *harness) verifier() *auth.Verifier { return &auth.Verifier{Store: h.st, Now: h.clock.Now} }

// browser is a cookie-keeping client that does not follow redirects, so each step
// of a flow can be inspected.
type browser struct {
	h *harness
	c *http.Client
}

func (h *harness) browser() *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{h: h, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

type response struct {
	status int
	header http.Header
	body   string
}

func (r response) location(t *testing.T) *url.URL {
	t.Helper()
	loc := r.header.Get("Location")
	if loc == "" {
		t.Fatalf("status %d with no Location; body:\n%s", r.status, r.body)
	}
	u, err := url.Parse(loc)
	if err != nil {
		t.Fatalf("Location %q: %v", loc, err)
	}
	return u
}

func (b *browser) do(req *http.Request) response {
	b.h.t.Helper()
	resp, err := b.c.Do(req)
	if err != nil {
		b.h.t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: string(body)}
}

func (b *browser) get(u string) response {
	req, _ := http.NewRequest(http.MethodGet, b.abs(u), nil)
	return b.do(req)
}

func (b *browser) post(u string, form url.Values) response {
	req, _ := http.NewRequest(http.MethodPost, b.abs(u), strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return b.do(req)
}

func (b *browser) abs(u string) string {
	if strings.HasPrefix(u, "/") {
		return b.h.issuer + u
	}
	return u
}

var hiddenRE = regexp.MustCompile(`<input type="hidden" name="([a-z]+)" value="([^"]*)">`)

// hidden returns the hidden fields of a rendered form.
func hidden(t *testing.T, body string) url.Values {
	t.Helper()
	v := url.Values{}
	for _, m := range hiddenRE.FindAllStringSubmatch(body, -1) {
		v.Set(m[1], m[2])
	}
	if v.Get("csrf") == "" {
		t.Fatalf("the page has no CSRF field:\n%s", body)
	}
	return v
}

const (
	nativeRedirect = "http://127.0.0.1:40123/callback"
	webRedirect    = "https://app.example/oauth/callback"
)

// register registers a client by DCR and returns its id and secret.
func (h *harness) register(meta map[string]any) (string, string) {
	h.t.Helper()
	status, body, _ := h.postJSON("/oauth/register", meta)
	if status != http.StatusCreated {
		h.t.Fatalf("register: %d %v", status, body)
	}
	id, _ := body["client_id"].(string)
	secret, _ := body["client_secret"].(string)
	return id, secret
}

// publicClient registers a native public client with nativeRedirect.
func (h *harness) publicClient(name string) string {
	id, _ := h.register(map[string]any{
		"client_name": name, "redirect_uris": []string{nativeRedirect}, "application_type": "native",
		"token_endpoint_auth_method": "none", "grant_types": []string{"authorization_code", "refresh_token"},
	})
	return id
}

func (h *harness) postJSON(path string, v any) (int, map[string]any, http.Header) {
	h.t.Helper()
	b, _ := json.Marshal(v)
	req, _ := http.NewRequest(http.MethodPost, h.issuer+path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	return h.doJSON(req)
}

func (h *harness) doJSON(req *http.Request) (int, map[string]any, http.Header) {
	h.t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var body map[string]any
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &body); err != nil {
			h.t.Fatalf("%s %s: %d, body is not JSON: %q", req.Method, req.URL, resp.StatusCode, raw)
		}
	}
	return resp.StatusCode, body, resp.Header
}

// tokenCall posts a form to the token (or revocation) endpoint; basic sets
// client_secret_basic credentials when non-nil.
func (h *harness) tokenCall(path string, form url.Values, basic ...string) (int, map[string]any, http.Header) {
	h.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, h.issuer+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if len(basic) == 2 {
		req.SetBasicAuth(url.QueryEscape(basic[0]), url.QueryEscape(basic[1]))
	}
	return h.doJSON(req)
}

// authzURL is an authorization request for clientID with testChallenge.
func (h *harness) authzURL(clientID, redirect string, mods ...func(url.Values)) string {
	v := url.Values{
		"response_type": {"code"}, "client_id": {clientID}, "redirect_uri": {redirect},
		"code_challenge": {testChallenge}, "code_challenge_method": {"S256"}, "state": {"st-123"},
	}
	for _, m := range mods {
		m(v)
	}
	return h.issuer + "/oauth/authorize?" + v.Encode()
}

func withParam(k, val string) func(url.Values) {
	return func(v url.Values) {
		if val == "" {
			delete(v, k)
			return
		}
		v.Set(k, val)
	}
}

// signIn follows an authorization URL through the dev sign-in as user and returns
// the consent page's response.
func (b *browser) signIn(t *testing.T, authz, user string) response {
	t.Helper()
	r := b.get(authz)
	if r.status != http.StatusFound {
		t.Fatalf("authorize: %d\n%s", r.status, r.body)
	}
	signin := r.location(t)
	if signin.Path != "/oauth/signin" {
		t.Fatalf("authorize sent the browser to %s, want the dev sign-in", signin)
	}
	page := b.get(signin.String())
	if page.status != http.StatusOK {
		t.Fatalf("sign-in page: %d\n%s", page.status, page.body)
	}
	f := hidden(t, page.body)
	f.Set("user", user)
	r = b.post("/oauth/signin", f)
	if r.status != http.StatusSeeOther {
		t.Fatalf("sign-in POST: %d\n%s", r.status, r.body)
	}
	return b.get(r.location(t).String())
}

// consent submits the consent page with the given action, scopes and workspace.
func (b *browser) consent(t *testing.T, page response, action, workspace string, scopes ...string) response {
	t.Helper()
	if page.status != http.StatusOK {
		t.Fatalf("consent page: %d\n%s", page.status, page.body)
	}
	f := hidden(t, page.body)
	f.Set("action", action)
	if workspace != "" {
		f.Set("workspace", workspace)
	}
	f["scope"] = scopes
	return b.post("/oauth/consent", f)
}

// authorize runs the whole browser leg and returns the code.
func (b *browser) authorize(t *testing.T, clientID, redirect, user, workspace string, scopes ...string) string {
	t.Helper()
	mods := []func(url.Values){}
	if len(scopes) > 0 {
		mods = append(mods, withParam("scope", strings.Join(scopes, " ")))
	}
	page := b.signIn(t, b.h.authzURL(clientID, redirect, mods...), user)
	r := b.consent(t, page, "allow", workspace, scopes...)
	if r.status != http.StatusSeeOther {
		t.Fatalf("consent POST: %d\n%s", r.status, r.body)
	}
	u := r.location(t)
	q := u.Query()
	if q.Get("code") == "" || q.Get("state") != "st-123" || q.Get("iss") != b.h.issuer {
		t.Fatalf("consent redirect %s lacks code, state or iss", u)
	}
	if got := u.Scheme + "://" + u.Host + u.Path; got != redirect {
		t.Fatalf("consent redirected to %s, want %s", got, redirect)
	}
	return q.Get("code")
}

// redeem exchanges a code with testVerifier.
func (h *harness) redeem(clientID, code, redirect string, extra ...string) (int, map[string]any) {
	h.t.Helper()
	f := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirect},
		"code_verifier": {testVerifier}, "client_id": {clientID}}
	for i := 0; i+1 < len(extra); i += 2 {
		f.Set(extra[i], extra[i+1])
	}
	status, body, hdr := h.tokenCall("/oauth/token", f)
	if hdr.Get("Cache-Control") != "no-store" {
		h.t.Errorf("token response Cache-Control = %q, want no-store", hdr.Get("Cache-Control"))
	}
	return status, body
}

func (h *harness) refresh(clientID, refresh string, extra ...string) (int, map[string]any) {
	h.t.Helper()
	f := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}, "client_id": {clientID}}
	for i := 0; i+1 < len(extra); i += 2 {
		f.Set(extra[i], extra[i+1])
	}
	status, body, _ := h.tokenCall("/oauth/token", f)
	return status, body
}

func str(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

// mustVerify checks that the MCP endpoint's verifier accepts an access token.
func (h *harness) mustVerify(token string) auth.Principal {
	h.t.Helper()
	p, err := h.verifier().Verify(context.Background(), token)
	if err != nil {
		h.t.Fatalf("the verifier refuses a token just issued: %v", err)
	}
	return p
}

func (h *harness) mustRefuse(token string, why string) {
	h.t.Helper()
	if _, err := h.verifier().Verify(context.Background(), token); err == nil {
		h.t.Fatalf("the verifier still accepts the access token after %s", why)
	}
}

func sameRows(t *testing.T, before, after map[string]int, what string) {
	t.Helper()
	for k, v := range after {
		if before[k] != v {
			t.Errorf("%s changed table %s from %d to %d rows", what, k, before[k], v)
		}
	}
}

func contains(t *testing.T, body string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(body, w) {
			t.Errorf("page lacks %q:\n%s", w, body)
		}
	}
}
