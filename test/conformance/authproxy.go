// Package conformance runs the official MCP conformance suite
// (@modelcontextprotocol/conformance 0.2, installed as conformance-next and
// pinned in test/package-lock.json) against `aacmcp serve`. The suite's CLI
// cannot send a token, so it talks to the server through AuthProxy, a loopback
// proxy that adds the Authorization header and changes nothing else:
// authentication stays on, and the Host and Origin the suite sends reach the
// server as sent, so the DNS-rebinding scenario tests the server's own checks.
package conformance

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// AuthProxy forwards every request to a target server with
// `Authorization: Bearer <token>` set.
//
// Each exchange is buffered whole, both ways, on a fresh upstream connection
// that the client going away does not cancel: the suite's checks abort their
// own fetches once they have what they need, and some of its raw requests
// never handle an aborted response, so a streaming proxy that cut the upstream
// read short when one request was abandoned left another waiting for its whole
// scenario timeout. A server answer with Content-Type text/event-stream is the
// one thing streamed as it comes (a stream may not end).
type AuthProxy struct {
	// URL is the proxy's base URL (http://127.0.0.1:PORT).
	URL string
	srv *http.Server
	ln  net.Listener

	target *url.URL
	token  string
	client *http.Client

	mu  sync.Mutex
	log strings.Builder
}

// upstreamTimeout bounds one forwarded exchange.
const upstreamTimeout = 30 * time.Second

// StartAuthProxy listens on a loopback port the kernel picks.
func StartAuthProxy(target *url.URL, token string) (*AuthProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &AuthProxy{
		URL: "http://" + ln.Addr().String(), ln: ln, target: target, token: token,
		client: &http.Client{
			Transport: &http.Transport{DisableKeepAlives: true},
			// The suite judges the server's own redirects.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
	p.srv = &http.Server{Handler: http.HandlerFunc(p.forward), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// Log is what went wrong while forwarding, for failure messages.
func (p *AuthProxy) Log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

func (p *AuthProxy) logf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(&p.log, time.Now().UTC().Format("15:04:05.000 ")+format+"\n", args...)
}

func (p *AuthProxy) forward(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		p.logf("%s %s: read the request: %v", r.Method, r.URL.Path, err)
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), upstreamTimeout)
	defer cancel()
	u := *p.target
	u.Path, u.RawQuery = r.URL.Path, r.URL.RawQuery
	out, err := http.NewRequestWithContext(ctx, r.Method, u.String(), bytes.NewReader(body))
	if err != nil {
		p.logf("%s %s: %v", r.Method, r.URL.Path, err)
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	out.Header = r.Header.Clone()
	// The Host the client sent, so the server judges it; no X-Forwarded-*.
	out.Host = r.Host
	out.Header.Set("Authorization", "Bearer "+p.token)
	resp, err := p.client.Do(out)
	if err != nil {
		p.logf("%s %s: %v", r.Method, r.URL.Path, err)
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		w.WriteHeader(resp.StatusCode)
		p.stream(w, resp.Body)
		return
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		p.logf("%s %s: read the response: %v", r.Method, r.URL.Path, err)
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	w.Header().Del("Transfer-Encoding")
	w.Header().Set("Content-Length", fmt.Sprint(len(b)))
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(b)
}

// stream copies an event stream, flushing each read, until either side ends it.
func (p *AuthProxy) stream(w http.ResponseWriter, body io.Reader) {
	rc := http.NewResponseController(w)
	buf := make([]byte, 4096)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			_ = rc.Flush()
		}
		if err != nil {
			return
		}
	}
}

// Close stops the proxy.
func (p *AuthProxy) Close() error { return p.srv.Close() }
