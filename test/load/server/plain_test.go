package server

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// seen is one request as the server received it.
type seen struct {
	Method, URI, Host string
	Header            http.Header
	Body              string
}

// recorder is a test server that keeps every request and answers with answer.
type recorder struct {
	*httptest.Server
	mu    sync.Mutex
	reqs  []seen
	conns atomic.Int32
}

func newRecorder(t *testing.T, answer http.HandlerFunc) *recorder {
	t.Helper()
	rec := &recorder{}
	rec.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rec.mu.Lock()
		rec.reqs = append(rec.reqs, seen{Method: r.Method, URI: r.RequestURI, Host: r.Host, Header: r.Header.Clone(), Body: string(b)})
		rec.mu.Unlock()
		answer(w, r)
	}))
	rec.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			rec.conns.Add(1)
		}
	}
	rec.Start()
	t.Cleanup(rec.Close)
	return rec
}

func (rec *recorder) last() seen {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.reqs[len(rec.reqs)-1]
}

func plainClient(t *testing.T, base string, conns int) *Client {
	t.Helper()
	c, err := NewPlainClient(base, conns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdle)
	return c
}

// The server must do the same work for either client, so it must receive the
// same request from both.
func TestPlainClientSendsWhatNetHTTPSends(t *testing.T) {
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/mcp" {
			io.WriteString(w, `{"jsonrpc":"2.0","id":"1","result":{"structuredContent":{"ok":true}}}`)
			return
		}
		io.WriteString(w, `{"ok":true}`)
	})
	for _, tc := range []struct {
		name, transport, token, tool, reqID string
		args                                any
	}{
		{name: "rest with token and request id", transport: REST, token: "tok-1", tool: "get_issue", reqID: "r-1", args: map[string]any{"issue_id": "I-1"}},
		{name: "mcp", transport: MCP, token: "tok-2", tool: "list_issues", reqID: "r-2", args: map[string]any{}},
		{name: "no token, no request id", transport: REST, tool: "list_issues", args: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got [2]seen
			for i, c := range []*Client{NewClient(rec.URL, 1), plainClient(t, rec.URL, 1)} {
				if _, err := c.Call(context.Background(), tc.transport, tc.token, tc.tool, tc.args, tc.reqID); err != nil {
					t.Fatalf("client %d: %v", i, err)
				}
				got[i] = rec.last()
			}
			if !reflect.DeepEqual(got[0], got[1]) {
				t.Errorf("net/http sent\n%+v\nthe plain client sent\n%+v", got[0], got[1])
			}
		})
	}
	t.Run("query string", func(t *testing.T) {
		var got [2]seen
		for i, c := range []*Client{NewClient(rec.URL, 1), plainClient(t, rec.URL, 1)} {
			if _, err := c.Post(context.Background(), rec.URL+"/tools/list_issues?access_token=x%20y", []byte(`{}`), nil); err != nil {
				t.Fatalf("client %d: %v", i, err)
			}
			got[i] = rec.last()
		}
		if got[0].URI != got[1].URI || got[1].URI != "/tools/list_issues?access_token=x%20y" {
			t.Errorf("request URIs %q and %q", got[0].URI, got[1].URI)
		}
	})
}

// Both clients must read every kind of answer the soak checks the same way.
func TestPlainClientDecodesAsNetHTTP(t *testing.T) {
	for _, tc := range []struct {
		name, path string
		answer     http.HandlerFunc
	}{
		{name: "rest success replayed", path: "/tools/create_issue", answer: func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Idempotent-Replay", "true")
			io.WriteString(w, `{"id":"I-9"}`)
		}},
		{name: "rest error with retry", path: "/tools/create_issue", answer: func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Retry-After", "3")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"error":"slow down","code":"rate_limited","retry_after_seconds":3}`)
		}},
		{name: "mcp result", path: "/mcp", answer: func(w http.ResponseWriter, _ *http.Request) {
			io.WriteString(w, `{"jsonrpc":"2.0","id":"1","result":{"content":[{"type":"text","text":"{}"}],"structuredContent":{"id":"I-1"},"_meta":{"aacmcp/idempotent_replay":true}}}`)
		}},
		{name: "mcp tool error", path: "/mcp", answer: func(w http.ResponseWriter, _ *http.Request) {
			io.WriteString(w, `{"jsonrpc":"2.0","id":"1","result":{"isError":true,"content":[{"type":"text","text":"{\"error\":\"no\",\"code\":\"not_found\"}"}]}}`)
		}},
		{name: "chunked body", path: "/tools/list_issues", answer: func(w http.ResponseWriter, _ *http.Request) {
			io.WriteString(w, `{"issues":[`)
			w.(http.Flusher).Flush() // no Content-Length: the body is chunked
			io.WriteString(w, `{"id":"I-1"}]}`)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRecorder(t, tc.answer)
			var got [2]Response
			for i, c := range []*Client{NewClient(rec.URL, 1), plainClient(t, rec.URL, 1)} {
				r, err := c.Post(context.Background(), rec.URL+tc.path, []byte(`{}`), nil)
				if err != nil {
					t.Fatalf("client %d: %v", i, err)
				}
				r.Header.Del("Date") // the one header that may differ between two answers
				got[i] = r
			}
			if !reflect.DeepEqual(got[0], got[1]) {
				t.Errorf("net/http decoded\n%+v\nthe plain client decoded\n%+v", got[0], got[1])
			}
		})
	}
}

func TestPlainClientConnections(t *testing.T) {
	ok := func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, `{}`) }
	post := func(t *testing.T, c *Client, base string) error {
		t.Helper()
		_, err := c.Post(context.Background(), base+"/tools/list_issues", []byte(`{}`), nil)
		return err
	}
	// postOK makes n calls one after the other, each of which must succeed.
	postOK := func(t *testing.T, c *Client, base string, n int) {
		t.Helper()
		for range n {
			if err := post(t, c, base); err != nil {
				t.Fatal(err)
			}
		}
	}

	t.Run("one connection per concurrent caller", func(t *testing.T) {
		rec := newRecorder(t, ok)
		c := plainClient(t, rec.URL, 4)
		postOK(t, c, rec.URL, 5)
		if n := rec.conns.Load(); n != 1 {
			t.Fatalf("5 calls one after the other opened %d connections, want 1", n)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 40)
		for range 4 {
			wg.Go(func() {
				for range 10 {
					errs <- post(t, c, rec.URL)
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if n := rec.conns.Load(); n > 4 {
			t.Fatalf("4 concurrent callers opened %d connections in all, want at most 4", n)
		}
	})

	t.Run("connection close is honoured", func(t *testing.T) {
		rec := newRecorder(t, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Connection", "close")
			io.WriteString(w, `{}`)
		})
		c := plainClient(t, rec.URL, 1)
		postOK(t, c, rec.URL, 3)
		if n := rec.conns.Load(); n != 3 {
			t.Fatalf("3 answers with Connection: close used %d connections, want 3", n)
		}
	})

	t.Run("a connection idle too long is not reused", func(t *testing.T) {
		rec := newRecorder(t, ok)
		c := plainClient(t, rec.URL, 1)
		postOK(t, c, rec.URL, 1)
		c.plain.mu.Lock()
		c.plain.idle[0].lastUsed = time.Now().Add(-plainIdleFor)
		c.plain.mu.Unlock()
		postOK(t, c, rec.URL, 1)
		if n := rec.conns.Load(); n != 2 {
			t.Fatalf("after an idle of %v, %d connections, want a second one", plainIdleFor, n)
		}
	})

	t.Run("an answer cut short is an error and its connection is dropped", func(t *testing.T) {
		var cut atomic.Bool
		cut.Store(true)
		rec := newRecorder(t, func(w http.ResponseWriter, _ *http.Request) {
			if !cut.Swap(false) {
				io.WriteString(w, `{}`)
				return
			}
			conn, bw, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			bw.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"par")
			bw.Flush()
			conn.Close()
		})
		c := plainClient(t, rec.URL, 1)
		if err := post(t, c, rec.URL); err == nil {
			t.Fatal("an answer 95 bytes short was taken as whole")
		}
		if err := post(t, c, rec.URL); err != nil {
			t.Fatalf("the call after a cut answer: %v", err)
		}
		if n := rec.conns.Load(); n != 2 {
			t.Fatalf("%d connections, want 2: the cut one must not be reused", n)
		}
	})

	t.Run("a cancelled caller is answered at once", func(t *testing.T) {
		release := make(chan struct{})
		rec := newRecorder(t, func(w http.ResponseWriter, _ *http.Request) {
			<-release
			io.WriteString(w, `{}`)
		})
		defer close(release)
		c := plainClient(t, rec.URL, 1)
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() {
			_, err := c.Post(ctx, rec.URL+"/tools/list_issues", []byte(`{}`), nil)
			errc <- err
		}()
		for rec.conns.Load() == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
		select {
		case err := <-errc:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want context.Canceled", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Post did not return after its context was cancelled")
		}
	})
}

func TestPlainClientRefuses(t *testing.T) {
	rec := newRecorder(t, func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, `{}`) })
	c := plainClient(t, rec.URL, 1)
	for _, tc := range []struct {
		name, target string
		hdr          http.Header
	}{
		{name: "line break in a value", target: rec.URL + "/mcp", hdr: http.Header{"X-Request-Id": {"a\r\nX-Evil: 1"}}},
		{name: "line break in a name", target: rec.URL + "/mcp", hdr: http.Header{"X-A\nB": {"1"}}},
		{name: "another host", target: "http://127.0.0.1:1/mcp"},
		{name: "https", target: "https" + rec.URL[len("http"):] + "/mcp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := c.Post(context.Background(), tc.target, []byte(`{}`), tc.hdr); err == nil {
				t.Fatal("sent")
			}
		})
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.reqs) != 0 {
		t.Fatalf("the server received %d requests, want none", len(rec.reqs))
	}
	if _, err := NewPlainClient("https://127.0.0.1:1", 1); err == nil {
		t.Fatal("NewPlainClient took an https base")
	}
}
