package server

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// plainPool is an HTTP/1.1 client with one keep-alive connection per caller: the
// caller that takes a connection writes its request and reads the answer itself.
//
// It exists for the soak, whose load generator shares the machine's two cores with
// the server it measures. net/http's Transport runs two goroutines per connection
// and hands every request and answer between them and the caller; under make
// soak's load that cost about half of the generator's processor time, about 0.55
// of the 2 cores, and every core it takes is one the server waits for. The calls
// are the same bytes on the same sockets: docs/decisions.md ("The soak's load
// generator writes its own requests") has the comparison, and `-client net/http` runs the soak with the Transport again.
type plainPool struct {
	host string

	mu   sync.Mutex
	idle []*plainConn // most recently used last
	max  int
}

// plainConn is one connection and its buffers.
type plainConn struct {
	nc       net.Conn
	br       *bufio.Reader
	bw       *bufio.Writer
	lastUsed time.Time
}

// Limits of the pool. idleFor stays well under the server's IdleTimeout (2 minutes,
// cmd/aacmcp serve): a connection idle longer is closed rather than reused, so a
// request is never written to a connection the server may be closing, which the
// client could not tell from a server that took the request and died.
const (
	plainIdleFor = 30 * time.Second
	plainTimeout = 2 * time.Minute // as NewClient's http.Client
)

// errHeader refuses a header that would change the request's framing.
var errHeader = errors.New("plain client: header name or value with a control character")

func newPlainPool(host string, conns int) *plainPool {
	return &plainPool{host: host, max: conns}
}

// get returns an idle connection young enough to reuse, or dials one.
func (p *plainPool) get(ctx context.Context) (*plainConn, error) {
	now := time.Now()
	p.mu.Lock()
	for len(p.idle) > 0 {
		c := p.idle[len(p.idle)-1]
		p.idle = p.idle[:len(p.idle)-1]
		if now.Sub(c.lastUsed) < plainIdleFor {
			p.mu.Unlock()
			return c, nil
		}
		c.nc.Close()
	}
	p.mu.Unlock()
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", p.host)
	if err != nil {
		return nil, err
	}
	return &plainConn{nc: nc, br: bufio.NewReaderSize(nc, 16<<10), bw: bufio.NewWriterSize(nc, 8<<10)}, nil
}

// put returns c to the pool, or closes it when the pool is full.
func (p *plainPool) put(c *plainConn) {
	c.lastUsed = time.Now()
	p.mu.Lock()
	if len(p.idle) < p.max {
		p.idle = append(p.idle, c)
		c = nil
	}
	p.mu.Unlock()
	if c != nil {
		c.nc.Close()
	}
}

// closeIdle closes every idle connection.
func (p *plainPool) closeIdle() {
	p.mu.Lock()
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, c := range idle {
		c.nc.Close()
	}
}

// do POSTs body to u with hdr and the headers net/http's client adds on its own,
// and returns the answer with its body read. A connection that failed is closed,
// never reused; the request is not retried, since the server may have applied it.
func (p *plainPool) do(ctx context.Context, u *url.URL, body []byte, hdr http.Header) (*http.Response, []byte, error) {
	if u.Scheme != "http" || u.Host != p.host {
		return nil, nil, fmt.Errorf("plain client: %q is not on http://%s", u, p.host)
	}
	for k, vs := range hdr {
		if !validHeader(k) {
			return nil, nil, errHeader
		}
		for _, v := range vs {
			if !validHeader(v) {
				return nil, nil, errHeader
			}
		}
	}
	c, err := p.get(ctx)
	if err != nil {
		return nil, nil, err
	}
	deadline := time.Now().Add(plainTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	c.nc.SetDeadline(deadline)
	if ctx.Done() != nil {
		// A cancelled caller gets its error now, as with http.Client: the deadline
		// in the past ends the read or write in progress.
		stop := context.AfterFunc(ctx, func() { c.nc.SetDeadline(time.Unix(1, 0)) })
		defer stop()
	}
	resp, b, err := c.roundTrip(u, body, hdr)
	if err != nil {
		c.nc.Close()
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return nil, nil, err
	}
	if resp.Close {
		c.nc.Close()
	} else {
		p.put(c)
	}
	return resp, b, nil
}

func (c *plainConn) roundTrip(u *url.URL, body []byte, hdr http.Header) (*http.Response, []byte, error) {
	w := c.bw
	w.WriteString("POST ")
	w.WriteString(u.RequestURI())
	w.WriteString(" HTTP/1.1\r\nHost: ")
	w.WriteString(u.Host)
	// The headers net/http's client adds on its own, so that the server does the
	// same work for either client; Post's requestHeader gives the rest.
	w.WriteString("\r\nUser-Agent: Go-http-client/1.1\r\nAccept-Encoding: gzip\r\nContent-Length: ")
	w.WriteString(strconv.Itoa(len(body)))
	w.WriteString("\r\n")
	for k, vs := range hdr {
		for _, v := range vs {
			w.WriteString(k)
			w.WriteString(": ")
			w.WriteString(v)
			w.WriteString("\r\n")
		}
	}
	w.WriteString("\r\n")
	w.Write(body)
	if err := w.Flush(); err != nil {
		return nil, nil, err
	}
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	if ce := resp.Header.Get("Content-Encoding"); ce != "" {
		// The server never compresses (net/http's client would undo it; this one
		// does not), so the answer is not what the soak checks.
		return nil, nil, fmt.Errorf("plain client: unexpected Content-Encoding %q", ce)
	}
	var buf bytes.Buffer
	if resp.ContentLength > 0 {
		buf.Grow(int(resp.ContentLength))
	}
	if _, err := io.Copy(&buf, resp.Body); err != nil {
		return nil, nil, err
	}
	return resp, buf.Bytes(), nil
}

// validHeader reports whether s is free of the bytes that end a header line.
func validHeader(s string) bool {
	return !strings.ContainsAny(s, "\r\n\x00")
}
