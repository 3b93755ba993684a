// Package conformance runs the official MCP conformance suite
// (@modelcontextprotocol/conformance 0.2, installed as conformance-next and pinned in test/package-lock.json) against
// `aacmcp serve`. The suite's CLI cannot send a token, so it talks to the server
// through AuthProxy, a loopback reverse proxy that adds the Authorization header
// and changes nothing else: authentication stays on, and the Host and Origin the
// suite sends reach the server as sent, so the DNS-rebinding scenario tests the
// server's own checks.
package conformance

import (
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
)

// AuthProxy forwards every request to a target server with
// `Authorization: Bearer <token>` set.
type AuthProxy struct {
	// URL is the proxy's base URL (http://127.0.0.1:PORT).
	URL string
	srv *http.Server
	ln  net.Listener
}

// StartAuthProxy listens on a loopback port the kernel picks.
func StartAuthProxy(target *url.URL, token string) (*AuthProxy, error) {
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			// SetURL rewrote Host to the target's: put the client's back, so the
			// server judges the Host the client sent. Origin is never touched, and
			// no X-Forwarded-* header is added (SetXForwarded is not called).
			r.Out.Host = r.In.Host
			r.Out.Header.Set("Authorization", "Bearer "+token)
		},
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &AuthProxy{URL: "http://" + ln.Addr().String(), srv: &http.Server{Handler: rp}, ln: ln}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// Close stops the proxy.
func (p *AuthProxy) Close() error { return p.srv.Close() }
