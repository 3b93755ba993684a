package clientmeta

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"
)

const (
	defaultTimeout  = 5 * time.Second
	defaultMaxBytes = 5120 // the draft's recommended limit, "5 kilobytes"
	maxCacheAge     = 24 * time.Hour
	// defaultTTL applies when a document carries no freshness information. Five
	// minutes keeps a burst of authorizations to one fetch, and a changed or withdrawn
	// document takes effect soon.
	defaultTTL = 5 * time.Minute
	// maxCacheEntries bounds memory: every distinct client_id that reaches the fetcher
	// can take one slot.
	maxCacheEntries = 1024
	// maxInflight bounds distinct fetches under way at once, so a flood of
	// authorization requests with fresh client ids cannot open unbounded connections.
	maxInflight = 64
	// StaleOnOutage is how long past its expiry a cached document stays usable when
	// it cannot be fetched again because its host is unreachable or answers 5xx (RFC
	// 5861's stale-if-error). Vendors' metadata endpoints have outages, and a client
	// people use daily should not stop working with them. A document the host answers
	// for with 4xx, a redirect or an invalid body is withdrawn or broken, not down: it
	// is refused at once. A first fetch that fails is always refused.
	StaleOnOutage = 24 * time.Hour
	// staleRetry is how long a stale copy is served without trying the host again
	// after a refresh failed, so that each request during an outage does not wait
	// out a fetch timeout first.
	staleRetry = time.Minute
)

// Options configure a Fetcher. Zero values take the defaults.
type Options struct {
	AllowLoopback bool           // --dev: loopback addresses allowed (tests serve documents)
	Timeout       time.Duration  // default 5 s
	MaxBytes      int64          // default 5 KB (5120)
	MaxAge        time.Duration  // default and cap 24 h
	RootCAs       *x509.CertPool // nil: the system pool (honours SSL_CERT_FILE)
	Now           func() time.Time
	Logger        *slog.Logger // nil: slog.Default(); warns when a stale copy is used
}

// Fetcher fetches, validates and caches Client ID Metadata Documents. It is safe for
// concurrent use. Successful documents are cached for their HTTP freshness lifetime
// (Cache-Control max-age, else Expires, else 5 minutes), never longer than MaxAge;
// no-store and no-cache mean not cached. Failures are never cached: the draft's
// "Metadata Caching" section forbids caching error responses and invalid documents.
// An expired document whose refresh meets an outage stays usable for StaleOnOutage.
// Concurrent fetches of one URL share one request.
type Fetcher struct {
	opts   Options
	dialer *guardedDialer
	http   *http.Client

	mu       sync.Mutex
	cache    map[string]cacheEntry
	inflight map[string]*call
}

// cacheEntry is fresh until expires, then usable only when a refresh meets an
// outage, until expires+StaleOnOutage. retryAt, set by such a refresh, is when the
// host is next tried.
type cacheEntry struct {
	client           Client
	expires, retryAt time.Time
}

// call is one fetch under way; waiters counts the callers sharing it.
type call struct {
	done    chan struct{}
	client  Client
	err     error
	waiters int
}

// NewFetcher returns a Fetcher with o's limits.
func NewFetcher(o Options) *Fetcher {
	if o.Timeout <= 0 {
		o.Timeout = defaultTimeout
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = defaultMaxBytes
	}
	if o.MaxAge <= 0 || o.MaxAge > maxCacheAge {
		o.MaxAge = maxCacheAge
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	d := &guardedDialer{allowLoopback: o.AllowLoopback, lookup: defaultLookup, timeout: o.Timeout}
	tr := &http.Transport{
		// No proxy: a proxy would make the connection, and the address checks would
		// apply to the proxy instead of the document's host.
		Proxy:                  nil,
		DialContext:            d.DialContext,
		TLSClientConfig:        &tls.Config{RootCAs: o.RootCAs, MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    o.Timeout,
		ResponseHeaderTimeout:  o.Timeout,
		MaxResponseHeaderBytes: 16 << 10,
		MaxIdleConns:           32,
		MaxIdleConnsPerHost:    2,
		IdleConnTimeout:        30 * time.Second,
	}
	return &Fetcher{
		opts:   o,
		dialer: d,
		http: &http.Client{
			Transport: tr,
			// The draft: the AS "MUST NOT automatically follow HTTP redirects".
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
			// Covers connect, TLS, headers and the whole body, so a slow drip fails too.
			Timeout: o.Timeout,
		},
		cache:    map[string]cacheEntry{},
		inflight: map[string]*call{},
	}
}

func defaultLookup(ctx context.Context, network, host string) ([]netip.Addr, error) {
	return net.DefaultResolver.LookupNetIP(ctx, network, host)
}

// Fetch returns the validated document of a CIMD client id, from cache when fresh.
// Failures are *Error with code invalid_client; when ctx ends first, Fetch returns
// ctx.Err() and the shared fetch carries on for the other callers.
func (f *Fetcher) Fetch(ctx context.Context, clientID string) (Client, error) {
	if !IsMetadataURL(clientID) {
		return Client{}, invalidClient(descNotMetadataURL)
	}
	f.mu.Lock()
	e, cached := f.cache[clientID]
	if cached {
		now := f.opts.Now()
		switch {
		case now.Before(e.expires), now.Before(e.retryAt):
			f.mu.Unlock()
			return e.client.clone(), nil
		case !now.Before(e.expires.Add(StaleOnOutage)):
			delete(f.cache, clientID)
			cached = false
		}
	}
	c, ok := f.inflight[clientID]
	if !ok {
		if len(f.inflight) >= maxInflight {
			defer f.mu.Unlock()
			// A flood of new client ids must not lock out a client this server
			// already knows: its copy stands in as during an outage.
			if cached {
				f.useStale(clientID, e, descBusy)
				return e.client.clone(), nil
			}
			return Client{}, invalidClient(descBusy)
		}
		c = &call{done: make(chan struct{})}
		f.inflight[clientID] = c
		// The fetch runs detached from ctx: one caller giving up must not fail the
		// others waiting on the same document. It is bounded by Options.Timeout.
		go f.run(clientID, c)
	}
	c.waiters++
	f.mu.Unlock()

	select {
	case <-c.done:
		if c.err != nil {
			return Client{}, c.err
		}
		return c.client.clone(), nil
	case <-ctx.Done():
		f.mu.Lock()
		c.waiters--
		f.mu.Unlock()
		return Client{}, ctx.Err()
	}
}

func (f *Fetcher) run(clientID string, c *call) {
	client, ttl, err := f.fetch(clientID)
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.inflight, clientID)
	now := f.opts.Now()
	switch e, cached := f.cache[clientID]; {
	case err == nil && ttl > 0:
		f.store(clientID, client, now.Add(ttl))
	case err == nil:
		delete(f.cache, clientID) // the new document may not be stored
	case !cached:
	case !err.outage, !now.Before(e.expires.Add(StaleOnOutage)):
		// The host answered, and what it said replaces the copy: a withdrawn or
		// broken document takes effect at once. (Or the copy is too old to use.)
		delete(f.cache, clientID)
	default:
		f.useStale(clientID, e, err.Description)
		client, err = e.client, nil
	}
	c.client = client
	if err != nil {
		c.err = err.Error
	}
	close(c.done)
}

// useStale records that the expired copy e stands in for clientID's document, which
// could not be fetched for reason: it is served without asking the host again for
// staleRetry, and the log says so. f.mu must be held.
func (f *Fetcher) useStale(clientID string, e cacheEntry, reason string) {
	until := e.expires.Add(StaleOnOutage)
	e.retryAt = f.opts.Now().Add(staleRetry)
	if e.retryAt.After(until) {
		e.retryAt = until
	}
	f.cache[clientID] = e
	f.opts.Logger.Warn("oauth: the client metadata document could not be fetched again; using the copy that expired",
		"client_id", clientID, "expired", e.expires, "usable_until", until, "reason", reason)
}

// store adds an entry, making room first: entries past any use go, then the one
// that expired first or expires soonest. The scan is O(n) only when the cache is full.
func (f *Fetcher) store(clientID string, c Client, expires time.Time) {
	if _, ok := f.cache[clientID]; !ok && len(f.cache) >= maxCacheEntries {
		now := f.opts.Now()
		var victim string
		var soonest time.Time
		for k, e := range f.cache {
			if !now.Before(e.expires.Add(StaleOnOutage)) {
				delete(f.cache, k)
				continue
			}
			if victim == "" || e.expires.Before(soonest) {
				victim, soonest = k, e.expires
			}
		}
		if len(f.cache) >= maxCacheEntries {
			delete(f.cache, victim)
		}
	}
	f.cache[clientID] = cacheEntry{client: c, expires: expires}
}

// fetchError is a failed fetch. outage: the host could not be reached, or answered
// 5xx, 408 or 429, so a copy that expired may stand in (StaleOnOutage).
type fetchError struct {
	*Error
	outage bool
}

func refused(desc string) *fetchError { return &fetchError{Error: invalidClient(desc)} }

func outage(e *Error) *fetchError { return &fetchError{Error: e, outage: true} }

// fetch does one GET and returns the validated client and how long it may be cached.
func (f *Fetcher) fetch(clientID string) (Client, time.Duration, *fetchError) {
	body, h, ferr := f.getJSON(clientID)
	if ferr != nil {
		return Client{}, 0, ferr
	}
	c, err := parseDocument(clientID, body)
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			e = invalidClient(err.Error())
		}
		return Client{}, 0, &fetchError{Error: e}
	}
	return c, freshness(h, f.opts.Now(), min(defaultTTL, f.opts.MaxAge), f.opts.MaxAge), nil
}

// getJSON does one GET of a JSON resource a client published (its document or its
// key set) under the fetcher's limits, and returns the body and the headers.
func (f *Fetcher) getJSON(rawURL string) ([]byte, http.Header, *fetchError) {
	ctx, cancel := context.WithTimeout(context.Background(), f.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, nil, refused(descNotMetadataURL)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "aacmcp-oauth-client-metadata")
	resp, err := f.http.Do(req)
	if err != nil {
		return nil, nil, outage(transportError(err))
	}
	defer func() { _ = resp.Body.Close() }()

	switch s := resp.StatusCode; {
	case s >= 300 && s < 400:
		return nil, nil, refused(descRedirect(s))
	case s >= 500, s == http.StatusRequestTimeout, s == http.StatusTooManyRequests:
		return nil, nil, outage(invalidClient(descStatus(s)))
	case s != http.StatusOK:
		return nil, nil, refused(descStatus(s))
	}
	if !isJSONMediaType(resp.Header.Get("Content-Type")) {
		return nil, nil, refused(descContentType)
	}
	if resp.ContentLength > f.opts.MaxBytes {
		return nil, nil, refused(descTooLarge(f.opts.MaxBytes))
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, f.opts.MaxBytes+1))
	// When the deadline cuts a body short, net/http can report a clean EOF instead of
	// the deadline (seen in about one run in four here); the truncated bytes would then
	// be judged as a malformed document. A read that ends after the deadline is a
	// timeout, whatever the reader said.
	if ctx.Err() != nil {
		return nil, nil, outage(invalidClient(descTimeout))
	}
	if err != nil {
		return nil, nil, outage(transportError(err))
	}
	if int64(len(body)) > f.opts.MaxBytes {
		return nil, nil, refused(descTooLarge(f.opts.MaxBytes))
	}
	return body, resp.Header, nil
}

// isJSONMediaType accepts application/json and, as the draft allows, a more specific
// application/<something>+json.
func isJSONMediaType(v string) bool {
	mt, _, err := mime.ParseMediaType(v)
	if err != nil {
		return false
	}
	return mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
}

// freshness is the RFC 9111 §4.2.1 freshness lifetime minus the current age, capped:
// no-store and no-cache give 0 (this cache never revalidates, so no-cache means "do not
// reuse"); max-age wins over Expires; an invalid or repeated max-age, or an invalid
// Expires, means stale (§4.2.1, §5.3); neither gives def.
func freshness(h http.Header, now time.Time, def, limit time.Duration) time.Duration {
	var maxAge time.Duration
	haveMaxAge, stale := false, false
	for _, line := range h.Values("Cache-Control") {
		for d := range strings.SplitSeq(line, ",") {
			name, val, _ := strings.Cut(strings.TrimSpace(d), "=")
			switch strings.ToLower(strings.TrimSpace(name)) {
			case "no-store", "no-cache":
				return 0
			case "max-age":
				n, err := strconv.ParseInt(strings.Trim(strings.TrimSpace(val), `"`), 10, 64)
				if haveMaxAge || err != nil || n < 0 {
					stale = true
				}
				haveMaxAge = true
				maxAge = time.Duration(min(n, int64(limit/time.Second)+1)) * time.Second
			}
		}
	}
	var life time.Duration
	switch {
	case stale:
		return 0
	case haveMaxAge:
		life = maxAge
	case h.Get("Expires") != "":
		exp, err := http.ParseTime(h.Get("Expires"))
		if err != nil {
			return 0
		}
		base := now
		if d, err := http.ParseTime(h.Get("Date")); err == nil {
			base = d
		}
		life = exp.Sub(base)
	default:
		life = def
	}
	if age, err := strconv.ParseInt(h.Get("Age"), 10, 64); err == nil && age > 0 {
		life -= time.Duration(min(age, int64(limit/time.Second)+1)) * time.Second
	}
	return max(0, min(life, limit))
}

// Descriptions shown to clients. They name no address, certificate detail or internal
// error text: only what the client controls and can fix.
const (
	descNotMetadataURL = "client_id is not a valid client metadata document URL (https, with a path, and no fragment, userinfo or dot segments)"
	descBusy           = "too many client metadata documents are being fetched; try again shortly"
	descBlocked        = "the client metadata document host does not resolve to a public address"
	descDNS            = "the client metadata document host could not be resolved"
	descTimeout        = "fetching the client metadata document timed out"
	descTLS            = "the client metadata document server's TLS certificate is not trusted"
	descUnreachable    = "the client metadata document could not be fetched"
	descContentType    = "the client metadata document is not served as application/json"
)

func descRedirect(status int) string {
	return fmt.Sprintf("the client metadata document URL answered with a redirect (HTTP %d); redirects are not followed", status)
}

func descStatus(status int) string {
	return fmt.Sprintf("the client metadata document URL answered HTTP %d, not 200", status)
}

func descTooLarge(n int64) string {
	return fmt.Sprintf("the client metadata document is larger than %d bytes", n)
}

func invalidClient(desc string) *Error { return &Error{Code: CodeInvalidClient, Description: desc} }

// transportError maps a failed request or body read to a safe description.
func transportError(err error) *Error {
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var unknownCA x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var invalidCert x509.CertificateInvalidError
	var netErr net.Error
	switch {
	case errors.Is(err, errBlockedAddress):
		return invalidClient(descBlocked)
	case errors.As(err, &certErr), errors.As(err, &unknownCA), errors.As(err, &hostErr), errors.As(err, &invalidCert):
		return invalidClient(descTLS)
	case errors.As(err, &dnsErr):
		return invalidClient(descDNS)
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return invalidClient(descTimeout)
	}
	return invalidClient(descUnreachable)
}
