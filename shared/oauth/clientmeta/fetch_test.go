package clientmeta

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// docFor is a valid document for the URL the request was made to, so a test server
// serves a matching client_id whatever host name the fetcher used.
func docFor(r *http.Request, name string) string {
	return `{"client_id":"https://` + r.Host + r.URL.Path + `","client_name":"` + name + `","redirect_uris":["http://127.0.0.1:3000/callback"],"grant_types":["authorization_code","refresh_token"],"token_endpoint_auth_method":"none"}`
}

// padTo pads a JSON object with spaces before its closing brace to exactly n bytes.
func padTo(doc string, n int) string {
	return doc[:len(doc)-1] + strings.Repeat(" ", n-len(doc)) + "}"
}

// docServer is an HTTPS server on 127.0.0.1 whose certificate is trusted through the
// returned pool only; hits counts requests per path.
type docServer struct {
	*httptest.Server
	pool *x509.CertPool
	mu   sync.Mutex
	hits map[string]int
}

func newDocServer(t *testing.T, routes map[string]http.HandlerFunc) *docServer {
	t.Helper()
	s := &docServer{hits: map[string]int{}}
	mux := http.NewServeMux()
	for p, h := range routes {
		mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
			s.mu.Lock()
			s.hits[r.URL.Path]++
			s.mu.Unlock()
			h(w, r)
		})
	}
	s.Server = httptest.NewUnstartedServer(mux)
	// The untrusted-certificate test makes the server log a failed handshake; that is
	// the expected outcome, not noise worth printing.
	s.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.StartTLS()
	t.Cleanup(s.Close)
	s.pool = x509.NewCertPool()
	s.pool.AddCert(s.Certificate())
	return s
}

func (s *docServer) hitsOf(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}

func serveJSON(header http.Header, body func(*http.Request) string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for k, v := range header {
			w.Header()[k] = v
		}
		if w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", "application/json")
		}
		_, _ = w.Write([]byte(body(r)))
	}
}

func TestFetch(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	s := newDocServer(t, map[string]http.HandlerFunc{
		"/good.json": serveJSON(nil, func(r *http.Request) string { return docFor(r, `Good <b>App</b>\u0007`) }),
		"/charset.json": serveJSON(http.Header{"Content-Type": {"application/json; charset=utf-8"}},
			func(r *http.Request) string { return docFor(r, "Charset") }),
		"/vendor.json": serveJSON(http.Header{"Content-Type": {"application/vnd.example.client+json"}},
			func(r *http.Request) string { return docFor(r, "Vendor") }),
		"/mismatch.json": serveJSON(nil, func(r *http.Request) string {
			return `{"client_id":"https://` + r.Host + `/other.json","redirect_uris":["https://a.example/cb"]}`
		}),
		"/secret.json": serveJSON(nil, func(r *http.Request) string {
			return strings.Replace(docFor(r, "x"), `"none"`, `"client_secret_basic"`, 1)
		}),
		"/at-limit.json": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.(http.Flusher).Flush() // chunked: no Content-Length to check up front
			_, _ = w.Write([]byte(padTo(docFor(r, "x"), defaultMaxBytes)))
		},
		"/over-limit.json": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.(http.Flusher).Flush()
			_, _ = w.Write([]byte(padTo(docFor(r, "x"), defaultMaxBytes+1)))
		},
		"/over-length.json": serveJSON(nil, func(r *http.Request) string { return padTo(docFor(r, "x"), 64<<10) }),
		"/slow.json": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			doc := docFor(r, "x")
			_, _ = w.Write([]byte(doc[:10]))
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
			case <-release:
			}
		},
		"/redirect.json": func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/good.json", http.StatusFound)
		},
		"/html.json": serveJSON(http.Header{"Content-Type": {"text/html"}}, func(r *http.Request) string { return docFor(r, "x") }),
		"/no-type.json": func(w http.ResponseWriter, r *http.Request) {
			w.Header()["Content-Type"] = nil
			_, _ = w.Write([]byte(docFor(r, "x")))
		},
		"/missing.json": http.NotFound,
		"/garbage.json": serveJSON(nil, func(*http.Request) string { return "<html>" }),
	})

	wantGood := Client{
		ClientID: s.URL + "/good.json", Name: "Good <b>App</b>",
		RedirectURIs: []string{"http://127.0.0.1:3000/callback"}, TokenEndpointAuthMethod: "none",
		GrantTypes: []string{"authorization_code", "refresh_token"}, ApplicationType: "native",
	}
	for _, tc := range []struct {
		name, path string
		opts       Options
		want       *Client
		desc       string // exact description when want is nil
		notHit     string // a path the fetch must not reach
	}{
		{name: "good document", path: "/good.json", want: &wantGood},
		{name: "json with charset", path: "/charset.json"},
		{name: "vendor +json type", path: "/vendor.json"},
		{name: "exactly at the size limit", path: "/at-limit.json"},
		{name: "client_id mismatch", path: "/mismatch.json", desc: "the client metadata document is invalid: client_id in the document does not equal the URL it was fetched from"},
		{name: "shared secret method", path: "/secret.json", desc: `the client metadata document is invalid: token_endpoint_auth_method must be "none" or "private_key_jwt" for a client metadata document client`},
		{name: "oversize body", path: "/over-limit.json", desc: descTooLarge(defaultMaxBytes)},
		{name: "oversize content-length", path: "/over-length.json", desc: descTooLarge(defaultMaxBytes)},
		{name: "smaller MaxBytes", path: "/good.json", opts: Options{MaxBytes: 64}, desc: descTooLarge(64)},
		{name: "slow body past the timeout", path: "/slow.json", opts: Options{Timeout: 300 * time.Millisecond}, desc: descTimeout},
		{name: "redirect", path: "/redirect.json", desc: descRedirect(http.StatusFound), notHit: "/good.json"},
		{name: "wrong content type", path: "/html.json", desc: descContentType},
		{name: "no content type", path: "/no-type.json", desc: descContentType},
		{name: "not found", path: "/missing.json", desc: descStatus(http.StatusNotFound)},
		{name: "not json", path: "/garbage.json", desc: "the client metadata document is invalid: the body is not a valid JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.opts
			o.AllowLoopback, o.RootCAs = true, s.pool
			id := s.URL + tc.path
			before := s.hitsOf(tc.notHit)
			got, err := NewFetcher(o).Fetch(t.Context(), id)
			if tc.notHit != "" && s.hitsOf(tc.notHit) != before {
				t.Errorf("%s was fetched", tc.notHit)
			}
			if tc.desc == "" {
				if err != nil {
					t.Fatalf("Fetch: %v", err)
				}
				if tc.want != nil && !equalClient(got, *tc.want) {
					t.Fatalf("got %+v\nwant %+v", got, *tc.want)
				}
				if got.ClientID != id {
					t.Fatalf("client id %q", got.ClientID)
				}
				checkClientInvariants(t, got)
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.Code != CodeInvalidClient || e.Description != tc.desc {
				t.Fatalf("got %+v, %v; want invalid_client %q", got, err, tc.desc)
			}
		})
	}
}

func TestFetchRefusesNonPublicAddresses(t *testing.T) {
	s := newDocServer(t, map[string]http.HandlerFunc{
		"/good.json": serveJSON(nil, func(r *http.Request) string { return docFor(r, "x") }),
	})
	port := s.Listener.Addr().(interface{ AddrPort() netip.AddrPort }).AddrPort().Port()
	for _, id := range []string{
		s.URL + "/good.json",
		fmt.Sprintf("https://localhost:%d/good.json", port),
		fmt.Sprintf("https://[::ffff:127.0.0.1]:%d/good.json", port),
	} {
		f := NewFetcher(Options{RootCAs: s.pool})
		_, err := f.Fetch(t.Context(), id)
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeInvalidClient || e.Description != descBlocked {
			t.Errorf("Fetch(%s) = %v, want %q", id, err, descBlocked)
		}
	}
	if n := s.hitsOf("/good.json"); n != 0 {
		t.Errorf("the server was reached %d times", n)
	}

	// DNS answers are filtered one by one: a private answer is skipped, and only the
	// checked loopback address (allowed under AllowLoopback) is dialed.
	url := fmt.Sprintf("https://example.com:%d/good.json", port) // the httptest certificate covers example.com
	for _, tc := range []struct {
		name    string
		answers []string
		loop    bool
		ok      bool
	}{
		{"private then loopback, dev", []string{"10.0.0.1", "169.254.169.254", "127.0.0.1"}, true, true},
		{"only private", []string{"10.0.0.1", "fd00::1", "100.64.0.1"}, true, false},
		{"loopback without dev", []string{"127.0.0.1", "::1"}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := NewFetcher(Options{RootCAs: s.pool, AllowLoopback: tc.loop})
			f.dialer.lookup = func(context.Context, string, string) ([]netip.Addr, error) {
				var out []netip.Addr
				for _, a := range tc.answers {
					out = append(out, netip.MustParseAddr(a))
				}
				return out, nil
			}
			_, err := f.Fetch(t.Context(), url)
			if tc.ok && err != nil {
				t.Fatalf("Fetch: %v", err)
			}
			var e *Error
			if !tc.ok && (!errors.As(err, &e) || e.Description != descBlocked) {
				t.Fatalf("Fetch = %v, want %q", err, descBlocked)
			}
		})
	}
}

func TestFetchUntrustedCertificate(t *testing.T) {
	s := newDocServer(t, map[string]http.HandlerFunc{
		"/good.json": serveJSON(nil, func(r *http.Request) string { return docFor(r, "x") }),
	})
	_, err := NewFetcher(Options{AllowLoopback: true}).Fetch(t.Context(), s.URL+"/good.json")
	var e *Error
	if !errors.As(err, &e) || e.Description != descTLS {
		t.Fatalf("Fetch = %v, want %q", err, descTLS)
	}
}

func TestFetchRejectsNonMetadataURL(t *testing.T) {
	for _, id := range []string{"abc123", "http://127.0.0.1/x", "https://a.example/a/../b"} {
		_, err := NewFetcher(Options{AllowLoopback: true}).Fetch(t.Context(), id)
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeInvalidClient || e.Description != descNotMetadataURL {
			t.Errorf("Fetch(%q) = %v", id, err)
		}
	}
}

func TestAddrAllowed(t *testing.T) {
	for _, tc := range []struct {
		addr      string
		public    bool // allowed without AllowLoopback
		devAllows bool // allowed with AllowLoopback
	}{
		{"8.8.8.8", true, true},
		{"93.184.216.34", true, true},
		{"2606:4700:4700::1111", true, true},
		{"::ffff:8.8.8.8", true, true},
		{"127.0.0.1", false, true},
		{"127.8.9.10", false, true},
		{"::1", false, true},
		{"::ffff:127.0.0.1", false, true},
		{"0.0.0.0", false, false},
		{"0.1.2.3", false, false},
		{"::", false, false},
		{"10.0.0.1", false, false},
		{"172.16.5.4", false, false},
		{"172.31.255.255", false, false},
		{"192.168.1.1", false, false},
		{"100.64.0.1", false, false},
		{"100.127.255.254", false, false},
		{"169.254.169.254", false, false},
		{"192.0.0.8", false, false},
		{"198.18.0.1", false, false},
		{"224.0.0.1", false, false},
		{"255.255.255.255", false, false},
		{"::ffff:10.0.0.1", false, false},
		{"::ffff:169.254.169.254", false, false},
		{"::10.0.0.1", false, false},
		{"64:ff9b::a00:1", false, false},
		{"2002:a00:1::", false, false},
		{"2001:0:a00:1::", false, false},
		{"2001:db8::1", false, false},
		{"fc00::1", false, false},
		{"fd12:3456::1", false, false},
		{"fe80::1", false, false},
		{"fe80::1%eth0", false, false},
		{"fec0::1", false, false},
		{"ff02::1", false, false},
		{"4000::1", false, false},
	} {
		a := netip.MustParseAddr(tc.addr)
		if got := addrAllowed(a, false); got != tc.public {
			t.Errorf("addrAllowed(%s, false) = %v", tc.addr, got)
		}
		if got := addrAllowed(a, true); got != tc.devAllows {
			t.Errorf("addrAllowed(%s, true) = %v", tc.addr, got)
		}
	}
	if addrAllowed(netip.Addr{}, true) {
		t.Error("the zero address is allowed")
	}
}

// The Control hook sees the address of the socket being connected; it must refuse
// whatever the resolver said earlier.
func TestDialerControl(t *testing.T) {
	g := &guardedDialer{allowLoopback: true}
	for _, tc := range []struct {
		addr string
		ok   bool
	}{
		{"127.0.0.1:443", true},
		{"[::1]:443", true},
		{"10.1.2.3:443", false},
		{"[::ffff:10.1.2.3]:443", false},
		{"[fe80::1%25eth0]:443", false},
		{"169.254.169.254:80", false},
		{"not-an-address", false},
	} {
		err := g.control("tcp", tc.addr, nil)
		if (err == nil) != tc.ok {
			t.Errorf("control(%s) = %v", tc.addr, err)
		}
	}
}

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func TestFetchCache(t *testing.T) {
	var broken atomic.Bool
	s := newDocServer(t, map[string]http.HandlerFunc{
		"/max-age.json":  serveJSON(http.Header{"Cache-Control": {"public, max-age=60"}}, func(r *http.Request) string { return docFor(r, "x") }),
		"/no-store.json": serveJSON(http.Header{"Cache-Control": {"no-store"}}, func(r *http.Request) string { return docFor(r, "x") }),
		"/no-cache.json": serveJSON(http.Header{"Cache-Control": {"max-age=600, no-cache"}}, func(r *http.Request) string { return docFor(r, "x") }),
		"/default.json":  serveJSON(nil, func(r *http.Request) string { return docFor(r, "x") }),
		"/year.json":     serveJSON(http.Header{"Cache-Control": {"max-age=31536000"}}, func(r *http.Request) string { return docFor(r, "x") }),
		"/flaky.json": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Cache-Control", "max-age=3600")
			if broken.Load() {
				_, _ = w.Write([]byte(`{"client_id":"https://elsewhere.example/x","redirect_uris":["https://a.example/cb"]}`))
				return
			}
			_, _ = w.Write([]byte(docFor(r, "x")))
		},
	})
	type step struct {
		advance  time.Duration
		wantHits int
		wantErr  bool
		before   func()
	}
	for _, tc := range []struct {
		name   string
		path   string
		maxAge time.Duration
		steps  []step
	}{
		{"max-age honoured", "/max-age.json", 0, []step{{0, 1, false, nil}, {59 * time.Second, 1, false, nil}, {2 * time.Second, 2, false, nil}, {0, 2, false, nil}}},
		{"no-store", "/no-store.json", 0, []step{{0, 1, false, nil}, {0, 2, false, nil}, {0, 3, false, nil}}},
		{"no-cache", "/no-cache.json", 0, []step{{0, 1, false, nil}, {0, 2, false, nil}}},
		{"default five minutes", "/default.json", 0, []step{{0, 1, false, nil}, {4 * time.Minute, 1, false, nil}, {2 * time.Minute, 2, false, nil}}},
		{"capped at 24 h", "/year.json", 0, []step{{0, 1, false, nil}, {23 * time.Hour, 1, false, nil}, {2 * time.Hour, 2, false, nil}}},
		{"capped at MaxAge", "/year.json", time.Hour, []step{{0, 1, false, nil}, {59 * time.Minute, 1, false, nil}, {2 * time.Minute, 2, false, nil}}},
		{"default capped at MaxAge", "/default.json", time.Minute, []step{{0, 1, false, nil}, {61 * time.Second, 2, false, nil}}},
		{"failures are not cached", "/flaky.json", 0, []step{
			{0, 1, true, func() { broken.Store(true) }},
			{0, 2, false, func() { broken.Store(false) }},
			{0, 2, false, nil},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s.mu.Lock()
			s.hits = map[string]int{}
			s.mu.Unlock()
			clk := &clock{now: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
			f := NewFetcher(Options{AllowLoopback: true, RootCAs: s.pool, Now: clk.Now, MaxAge: tc.maxAge})
			for i, st := range tc.steps {
				if st.before != nil {
					st.before()
				}
				clk.Advance(st.advance)
				_, err := f.Fetch(t.Context(), s.URL+tc.path)
				if (err != nil) != st.wantErr {
					t.Fatalf("step %d: err = %v", i, err)
				}
				if n := s.hitsOf(tc.path); n != st.wantHits {
					t.Fatalf("step %d: %d server hits, want %d", i, n, st.wantHits)
				}
			}
		})
	}
}

func TestFetchReturnsCopies(t *testing.T) {
	s := newDocServer(t, map[string]http.HandlerFunc{
		"/good.json": serveJSON(nil, func(r *http.Request) string { return docFor(r, "x") }),
	})
	f := NewFetcher(Options{AllowLoopback: true, RootCAs: s.pool})
	a, err := f.Fetch(t.Context(), s.URL+"/good.json")
	if err != nil {
		t.Fatal(err)
	}
	a.RedirectURIs[0], a.GrantTypes[0] = "https://evil.example/cb", "implicit"
	b, err := f.Fetch(t.Context(), s.URL+"/good.json")
	if err != nil {
		t.Fatal(err)
	}
	if b.RedirectURIs[0] != "http://127.0.0.1:3000/callback" || b.GrantTypes[0] != "authorization_code" {
		t.Fatalf("the cached client was changed through a returned copy: %+v", b)
	}
}

func (f *Fetcher) waitersFor(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c := f.inflight[id]; c != nil {
		return c.waiters
	}
	return 0
}

func TestFetchCoalesces(t *testing.T) {
	release := make(chan struct{})
	var hits atomic.Int64
	s := newDocServer(t, map[string]http.HandlerFunc{
		// no-store: only coalescing, not the cache, can keep this to one request.
		"/doc.json": func(w http.ResponseWriter, r *http.Request) {
			hits.Add(1)
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Cache-Control", "no-store")
			_, _ = w.Write([]byte(docFor(r, "x")))
		},
	})
	id := s.URL + "/doc.json"
	f := NewFetcher(Options{AllowLoopback: true, RootCAs: s.pool})
	const n = 8
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := f.Fetch(t.Context(), id)
			errs <- err
		}()
	}
	// A caller that gives up gets its context's error; the others are unaffected.
	quitter, quit := context.WithCancel(t.Context())
	quitErr := make(chan error, 1)
	go func() {
		_, err := f.Fetch(quitter, id)
		quitErr <- err
	}()
	deadline, ok := t.Deadline()
	if !ok {
		deadline = time.Now().Add(20 * time.Second)
	}
	for f.waitersFor(id) < n+1 || hits.Load() == 0 {
		if hits.Load() > 1 || time.Now().After(deadline.Add(-time.Second)) {
			close(release)
			t.Fatalf("%d requests for %d concurrent callers", hits.Load(), n+1)
		}
		time.Sleep(time.Millisecond)
	}
	quit()
	if err := <-quitErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled caller got %v", err)
	}
	close(release)
	for range n {
		if err := <-errs; err != nil {
			t.Fatalf("Fetch: %v", err)
		}
	}
	if h := hits.Load(); h != 1 {
		t.Fatalf("%d requests for %d concurrent callers, want 1", h, n)
	}
}

func TestFreshness(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	date := now.Format(http.TimeFormat)
	for _, tc := range []struct {
		name string
		h    http.Header
		want time.Duration
	}{
		{"absent", http.Header{}, defaultTTL},
		{"max-age", http.Header{"Cache-Control": {"max-age=120"}}, 2 * time.Minute},
		{"quoted max-age", http.Header{"Cache-Control": {`max-age="120"`}}, 2 * time.Minute},
		{"max-age over the cap", http.Header{"Cache-Control": {"max-age=99999999999999999"}}, maxCacheAge},
		{"max-age=0", http.Header{"Cache-Control": {"max-age=0"}}, 0},
		{"invalid max-age", http.Header{"Cache-Control": {"max-age=soon"}}, 0},
		{"negative max-age", http.Header{"Cache-Control": {"max-age=-1"}}, 0},
		{"repeated max-age", http.Header{"Cache-Control": {"max-age=60", "max-age=120"}}, 0},
		{"no-store wins", http.Header{"Cache-Control": {"max-age=60, NO-STORE"}}, 0},
		{"no-cache", http.Header{"Cache-Control": {"no-cache"}}, 0},
		{"age subtracted", http.Header{"Cache-Control": {"max-age=120"}, "Age": {"100"}}, 20 * time.Second},
		{"older than max-age", http.Header{"Cache-Control": {"max-age=120"}, "Age": {"500"}}, 0},
		{"expires", http.Header{"Date": {date}, "Expires": {now.Add(time.Hour).Format(http.TimeFormat)}}, time.Hour},
		{"max-age beats expires", http.Header{"Cache-Control": {"max-age=60"}, "Expires": {now.Add(time.Hour).Format(http.TimeFormat)}}, time.Minute},
		{"invalid expires", http.Header{"Expires": {"0"}}, 0},
		{"past expires", http.Header{"Date": {date}, "Expires": {now.Add(-time.Hour).Format(http.TimeFormat)}}, 0},
	} {
		if got := freshness(tc.h, now, defaultTTL, maxCacheAge); got != tc.want {
			t.Errorf("%s: freshness = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestCacheIsBounded(t *testing.T) {
	clk := &clock{now: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	f := NewFetcher(Options{Now: clk.Now})
	for i := range maxCacheEntries + 10 {
		f.mu.Lock()
		f.store(fmt.Sprintf("https://c%d.example/x", i), Client{}, clk.Now().Add(time.Duration(i+1)*time.Second))
		f.mu.Unlock()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.cache) != maxCacheEntries {
		t.Fatalf("cache holds %d entries, want %d", len(f.cache), maxCacheEntries)
	}
	// The entries closest to expiry went first.
	if _, ok := f.cache["https://c0.example/x"]; ok {
		t.Error("the soonest-expiring entry was kept")
	}
	if _, ok := f.cache[fmt.Sprintf("https://c%d.example/x", maxCacheEntries+9)]; !ok {
		t.Error("the newest entry is missing")
	}
}
