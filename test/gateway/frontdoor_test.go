package gateway

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aacworkflow/aacmcp/shared/gateway"
	"github.com/aacworkflow/aacmcp/test/lambda/lambdatest"
)

var (
	viaValue  = regexp.MustCompile(`^1\.1 [0-9a-f]{32}\.cloudfront\.net \(CloudFront\)$`)
	cfIDValue = regexp.MustCompile(`^[A-Za-z0-9_-]{54}==$`)
)

// origin records the requests it gets and answers with the headers it is given.
type origin struct {
	mu   sync.Mutex
	seen []*http.Request
	srv  *httptest.Server
}

func newOrigin(t *testing.T, answer http.Header, status int) *origin {
	o := &origin{}
	o.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		o.seen = append(o.seen, r)
		o.mu.Unlock()
		for k, vs := range answer {
			w.Header()[k] = vs
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, "origin body")
	}))
	t.Cleanup(o.srv.Close)
	return o
}

func (o *origin) last(t *testing.T) *http.Request {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.seen) == 0 {
		t.Fatal("the origin got no request")
	}
	return o.seen[len(o.seen)-1]
}

func frontDoorTo(t *testing.T, originURL, originPath string) string {
	t.Helper()
	u, err := url.Parse(originURL)
	if err != nil {
		t.Fatal(err)
	}
	fd := httptest.NewServer(gateway.FrontDoor(gateway.Distribution{
		Origin: u, OriginPath: originPath, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}))
	t.Cleanup(fd.Close)
	return fd.URL
}

// viewerGet sends a request with headers and returns the answer and the local
// address of the connection it went on (the viewer's address and port).
func viewerGet(t *testing.T, target string, headers map[string]string) (*http.Response, string) {
	t.Helper()
	var local string
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
		GotConn: func(ci httptrace.GotConnInfo) { local = ci.Conn.LocalAddr().String() },
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp, local
}

// TestFrontDoorOriginRequest: what the distribution sends its origin. The origin
// path goes before the path, the query is kept, Host is the origin's, the viewer's
// address is appended to X-Forwarded-For and given with its port in
// CloudFront-Viewer-Address, and Via and X-Amz-Cf-Id are CloudFront's. Copies of
// CloudFront's headers a viewer sends are not what the origin reads.
func TestFrontDoorOriginRequest(t *testing.T) {
	for _, tt := range []struct {
		name, originPath, path, wantPath string
		viewerXFF, wantXFFPrefix         string
	}{
		{name: "stage origin path", originPath: "/prod", path: "/mcp?x=1", wantPath: "/prod/mcp?x=1"},
		{name: "well-known at the root reaches the stage", originPath: "/prod/", path: "/.well-known/oauth-authorization-server", wantPath: "/prod/.well-known/oauth-authorization-server"},
		{name: "escaped path", originPath: "/prod", path: "/tools/a%2Fb", wantPath: "/prod/tools/a%2Fb"},
		{name: "no origin path", originPath: "", path: "/healthz", wantPath: "/healthz"},
		{name: "viewer sent X-Forwarded-For", originPath: "/prod", path: "/mcp", wantPath: "/prod/mcp", viewerXFF: "203.0.113.9", wantXFFPrefix: "203.0.113.9, "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := newOrigin(t, nil, http.StatusOK)
			fd := frontDoorTo(t, o.srv.URL, tt.originPath)
			h := map[string]string{
				"Authorization":             "Bearer aac_x",
				"CloudFront-Viewer-Address": "198.51.100.1:1234",
				"X-Amz-Cf-Id":               "forged",
			}
			if tt.viewerXFF != "" {
				h["X-Forwarded-For"] = tt.viewerXFF
			}
			resp, local := viewerGet(t, fd+tt.path, h)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d", resp.StatusCode)
			}
			r := o.last(t)
			if got := r.URL.RequestURI(); got != tt.wantPath {
				t.Errorf("origin path %q, want %q", got, tt.wantPath)
			}
			if r.Host != strings.TrimPrefix(o.srv.URL, "http://") {
				t.Errorf("Host %q, want the origin's %q", r.Host, o.srv.URL)
			}
			ip, port, _ := net.SplitHostPort(local)
			if got := r.Header.Values("X-Forwarded-For"); len(got) != 1 || got[0] != tt.wantXFFPrefix+ip {
				t.Errorf("X-Forwarded-For %q, want %q", got, tt.wantXFFPrefix+ip)
			}
			if got := r.Header.Values(gateway.HeaderViewerAddress); len(got) != 1 || got[0] != ip+":"+port {
				t.Errorf("CloudFront-Viewer-Address %q, want the viewer's %s:%s", got, ip, port)
			}
			if id := r.Header.Get(gateway.HeaderCfID); !cfIDValue.MatchString(id) {
				t.Errorf("X-Amz-Cf-Id %q is not CloudFront's", id)
			}
			if via := r.Header.Get("Via"); !viaValue.MatchString(via) {
				t.Errorf("Via %q", via)
			}
			if r.Header.Get("Authorization") != "Bearer aac_x" {
				t.Errorf("Authorization not forwarded: %q", r.Header.Get("Authorization"))
			}
			// The answer names the same request.
			if resp.Header.Get(gateway.HeaderCfID) != r.Header.Get(gateway.HeaderCfID) || resp.Header.Get("X-Cache") != "Miss from cloudfront" || !viaValue.MatchString(resp.Header.Get("Via")) {
				t.Errorf("answer headers: Via %q X-Cache %q X-Amz-Cf-Id %q (origin saw %q)", resp.Header.Get("Via"), resp.Header.Get("X-Cache"), resp.Header.Get(gateway.HeaderCfID), r.Header.Get(gateway.HeaderCfID))
			}
		})
	}
}

// TestFrontDoorRestoresChallenge: the origin-response function's rule, on the
// statuses a challenge comes with.
func TestFrontDoorRestoresChallenge(t *testing.T) {
	const challenge = `Bearer error="insufficient_scope", scope="issues:write"`
	for _, tt := range []struct {
		name          string
		status        int
		answer        http.Header
		want, wantRem string
	}{
		{"remapped 403 restored", 403, http.Header{"X-Amzn-Remapped-Www-Authenticate": {challenge}}, challenge, ""},
		{"remapped 401 restored", 401, http.Header{"X-Amzn-Remapped-Www-Authenticate": {challenge}}, challenge, ""},
		{"the origin's own header wins", 401, http.Header{"Www-Authenticate": {"Bearer own"}, "X-Amzn-Remapped-Www-Authenticate": {challenge}}, "Bearer own", ""},
		{"no challenge", 200, http.Header{"X-Amzn-Remapped-Date": {"Mon"}}, "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := newOrigin(t, tt.answer, tt.status)
			resp, _ := viewerGet(t, frontDoorTo(t, o.srv.URL, "/prod")+"/mcp", nil)
			if resp.StatusCode != tt.status || resp.Header.Get("WWW-Authenticate") != tt.want || resp.Header.Get("X-Amzn-Remapped-WWW-Authenticate") != tt.wantRem {
				t.Errorf("%d WWW-Authenticate %q remapped %q, want %d %q %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"),
					resp.Header.Get("X-Amzn-Remapped-WWW-Authenticate"), tt.status, tt.want, tt.wantRem)
			}
			if want := map[bool]string{true: "Error from cloudfront", false: "Miss from cloudfront"}[tt.status >= 400]; resp.Header.Get("X-Cache") != want {
				t.Errorf("X-Cache %q, want %q", resp.Header.Get("X-Cache"), want)
			}
		})
	}
}

// TestFrontDoorOriginDown: an origin that cannot be reached is CloudFront's 502.
func TestFrontDoorOriginDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	resp, _ := viewerGet(t, frontDoorTo(t, "http://"+addr, "/prod")+"/mcp", nil)
	if resp.StatusCode != http.StatusBadGateway || resp.Header.Get("X-Cache") != "Error from cloudfront" {
		t.Errorf("%d X-Cache %q, want 502 from CloudFront", resp.StatusCode, resp.Header.Get("X-Cache"))
	}
}

// TestFrontDoorServesStageAtRoot: with the distribution in front of the stage
// (origin path /prod) and its URL as the public URL, the discovery documents and
// the API are at the root of the distribution's URL, every link names it, and the
// authorizer and the function see the viewer as CloudFront reports it.
func TestFrontDoorServesStageAtRoot(t *testing.T) {
	url, authz := startWith(t, func(c *gateway.Config) { c.Stage, c.StageInPath = "prod", true }, true)
	for _, tt := range []struct {
		path   string
		status int
	}{
		{"/healthz", 200},
		{"/.well-known/oauth-protected-resource/mcp", 200},
		// The stage is the root now: a stage in the path is a route the API lacks.
		{"/prod/healthz", 403},
	} {
		resp, err := http.Get(url + tt.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != tt.status {
			t.Errorf("GET %s: %d %s, want %d", tt.path, resp.StatusCode, body, tt.status)
		}
		if tt.path == "/.well-known/oauth-protected-resource/mcp" {
			var md struct {
				Resource string `json:"resource"`
			}
			if err := json.Unmarshal(body, &md); err != nil || md.Resource != url+"/mcp" {
				t.Errorf("resource metadata %s: resource %q, want the distribution's %q", body, md.Resource, url+"/mcp")
			}
		}
	}
	// The gateway's own challenge (no token) names the public URL, as the stack's
	// static gateway response does.
	resp, err := http.Post(url+"/mcp", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if ch := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != 401 || ch != `Bearer resource_metadata="`+url+`/.well-known/oauth-protected-resource/mcp"` {
		t.Errorf("no token: %d %q", resp.StatusCode, ch)
	}

	// A call that reaches the authorizer: its event carries CloudFront's headers.
	mcpClient(t, url, lambdatest.SecretAdmin)
	p := authz.last.Load()
	if p == nil {
		t.Fatal("the authorizer was not called")
	}
	var ev events.APIGatewayCustomAuthorizerRequestTypeRequest
	if err := json.Unmarshal(*p, &ev); err != nil {
		t.Fatal(err)
	}
	// Header names in events keep no particular case: look it up as HTTP does.
	if va := http.Header(ev.MultiValueHeaders).Get(gateway.HeaderViewerAddress); !strings.HasPrefix(va, "127.0.0.1:") {
		t.Errorf("authorizer event CloudFront-Viewer-Address %q, want 127.0.0.1:<port>", va)
	}
	if ev.Path != "/mcp" || ev.RequestContext.Path != "/prod/mcp" || ev.RequestContext.Stage != "prod" {
		t.Errorf("authorizer event path %q, context path %q, stage %q: want the stage's /prod/mcp", ev.Path, ev.RequestContext.Path, ev.RequestContext.Stage)
	}
}
