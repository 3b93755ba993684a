package conformance

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// TestAuthProxyAddsOnlyTheToken checks what the conformance run relies on: the
// token is added (replacing any the client sent), and Host, Origin, method, path
// and body reach the server as the client sent them, with no forwarding headers.
func TestAuthProxyAddsOnlyTheToken(t *testing.T) {
	type seen struct {
		Method, Path, Host, Origin, Authorization, Body, XForwardedFor, XForwardedHost string
	}
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b strings.Builder
		buf := make([]byte, 512)
		for {
			n, err := r.Body.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				break
			}
		}
		_ = json.NewEncoder(w).Encode(seen{r.Method, r.URL.Path, r.Host, r.Header.Get("Origin"), r.Header.Get("Authorization"), b.String(),
			r.Header.Get("X-Forwarded-For"), r.Header.Get("X-Forwarded-Host")})
	}))
	t.Cleanup(backend.Close)
	target, err := url.Parse(backend.URL)
	if err != nil {
		t.Fatal(err)
	}
	p, err := StartAuthProxy(target, "aac_secret")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })

	tests := []struct {
		name, host, origin, clientAuth string
	}{
		{"plain", "", "", ""},
		{"foreign host and origin pass through", "evil.example.com", "http://evil.example.com", ""},
		{"loopback origin", "127.0.0.1:9", "http://127.0.0.1:9", ""},
		{"a client token is replaced", "", "", "Bearer aac_other"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, p.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
			if err != nil {
				t.Fatal(err)
			}
			if tt.host != "" {
				req.Host = tt.host
			}
			if tt.origin != "" {
				req.Header.Set("Origin", tt.origin)
			}
			if tt.clientAuth != "" {
				req.Header.Set("Authorization", tt.clientAuth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var got seen
			if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
				t.Fatal(err)
			}
			wantHost := tt.host
			if wantHost == "" {
				wantHost = strings.TrimPrefix(p.URL, "http://")
			}
			want := seen{http.MethodPost, "/mcp", wantHost, tt.origin, "Bearer aac_secret", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, "", ""}
			if got != want {
				t.Errorf("the server saw %+v, want %+v", got, want)
			}
		})
	}
}
