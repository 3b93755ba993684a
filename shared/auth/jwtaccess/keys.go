package jwtaccess

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/aacworkflow/aacmcp/shared/internal/cpuslot"
)

// maxDocument bounds a metadata or JWKS document: real ones are a few KiB.
const maxDocument = 1 << 20

// maxKeys bounds how many keys a JWKS may hold; more is a broken or hostile issuer.
const maxKeys = 100

// keySet is the issuer's JWKS, fetched lazily and kept in memory.
//
// Refreshes happen when the set is older than maxAge (so a key the issuer removed
// stops verifying within that bound) and when a token names an unknown kid (so a
// rotation is picked up at the first token signed with the new key). Either kind
// of refresh happens at most once per minRefresh, whatever arrives: a flood of
// tokens with random kids costs the issuer one request per interval, and the
// callers that arrive during a fetch wait for it instead of starting their own.
type keySet struct {
	cfg    *Config
	client *http.Client

	mu          sync.Mutex
	jwksURL     string // discovered once, then fixed
	keys        []jose.JSONWebKey
	fetchedAt   time.Time     // last successful fetch; zero before the first
	attemptedAt time.Time     // last attempt, successful or not
	inflight    chan struct{} // closed when the running fetch ends; nil when none
	lastErr     error
}

func newKeySet(cfg *Config) *keySet {
	client := cfg.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: 5 * time.Second}
	}
	// A redirect would move key material to a URL nobody configured or published.
	c := *client
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &keySet{cfg: cfg, client: &c, jwksURL: cfg.JWKSURL}
}

// errFetch marks a failure to reach the issuer: nothing was decided about the token.
var errFetch = errors.New("jwtaccess: the issuer's keys could not be fetched")

// lookup returns the keys that may have signed a token with this kid ("" when the
// token names none). It refreshes the set when it is stale or the kid is unknown
// and a refresh is allowed now. No keys and a nil error means no such key; an
// error means the issuer could not be asked and nothing is known (errFetch).
func (ks *keySet) lookup(ctx context.Context, kid string) ([]jose.JSONWebKey, error) {
	now := ks.cfg.now()
	ks.mu.Lock()
	stale := ks.fetchedAt.IsZero() || now.Sub(ks.fetchedAt) >= ks.cfg.KeysMaxAge
	if keys := match(ks.keys, kid); len(keys) > 0 && !stale {
		ks.mu.Unlock()
		return keys, nil
	}
	wait := ks.inflight
	switch {
	case wait != nil:
		ks.mu.Unlock()
		// The issuer's answer needs no core of this call's: under aacmcp serve's
		// CPU slots, a slow issuer must not hold every slot while the other calls,
		// whatever their tokens, wait for one (docs/architecture.md).
		resume := cpuslot.Park(ctx)
		select {
		case <-wait:
		case <-ctx.Done():
			resume()
			return nil, fmt.Errorf("%w: %v", errFetch, ctx.Err())
		}
		resume()
	case !ks.attemptedAt.IsZero() && now.Sub(ks.attemptedAt) < ks.cfg.MinRefreshInterval:
		// Too soon to ask the issuer again: answer from what we have.
		ks.mu.Unlock()
	default:
		wait = make(chan struct{})
		ks.inflight, ks.attemptedAt = wait, now
		ks.mu.Unlock()
		resume := cpuslot.Park(ctx) // as above: the fetch is a wait for the network
		ks.refresh(ctx, wait)
		resume()
	}
	ks.mu.Lock()
	defer ks.mu.Unlock()
	// Keys kept through an issuer outage are used for maxStale at most: past that,
	// a key the issuer may have withdrawn long ago is not trusted any more.
	if ks.fetchedAt.IsZero() || now.Sub(ks.fetchedAt) > maxStale {
		if ks.lastErr != nil {
			return nil, ks.lastErr
		}
		return nil, errFetch
	}
	return match(ks.keys, kid), nil
}

// maxStale is how long keys are used when every refresh since has failed.
const maxStale = 24 * time.Hour

// refresh fetches the set and publishes the result. It runs detached from the
// caller's cancellation (bounded by the client's timeout), so one impatient
// caller cannot fail the fetch the others wait for.
func (ks *keySet) refresh(ctx context.Context, done chan struct{}) {
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	keys, jwksURL, err := ks.fetch(fctx)
	ks.mu.Lock()
	defer ks.mu.Unlock()
	if jwksURL != "" {
		ks.jwksURL = jwksURL
	}
	if err != nil {
		// The previous keys stay (for maxStale at most): an issuer outage must not
		// turn every valid token into a refusal.
		ks.lastErr = fmt.Errorf("%w: %v", errFetch, err)
		ks.cfg.logger().WarnContext(ctx, "jwtaccess: fetching the issuer's keys failed", "issuer", ks.cfg.Issuer, "err", err)
	} else {
		ks.keys, ks.fetchedAt, ks.lastErr = keys, ks.cfg.now(), nil
	}
	ks.inflight = nil
	close(done)
}

func (ks *keySet) fetch(ctx context.Context) ([]jose.JSONWebKey, string, error) {
	ks.mu.Lock()
	jwksURL := ks.jwksURL
	ks.mu.Unlock()
	if jwksURL == "" {
		u, err := ks.discover(ctx)
		if err != nil {
			return nil, "", err
		}
		jwksURL = u
	}
	var set jose.JSONWebKeySet
	if err := ks.getJSON(ctx, jwksURL, &set); err != nil {
		return nil, jwksURL, err
	}
	if len(set.Keys) > maxKeys {
		return nil, jwksURL, fmt.Errorf("the JWKS at %s holds %d keys (at most %d)", jwksURL, len(set.Keys), maxKeys)
	}
	keys := make([]jose.JSONWebKey, 0, len(set.Keys))
	for _, k := range set.Keys {
		// Only public signing keys: a symmetric key in a JWKS is never ours to use
		// (that is the HS256-with-a-public-key confusion), and an encryption key
		// must not verify signatures.
		if !k.Valid() || !k.IsPublic() || (k.Use != "" && k.Use != "sig") {
			continue
		}
		if _, sym := k.Key.([]byte); sym {
			continue
		}
		keys = append(keys, k)
	}
	return keys, jwksURL, nil
}

// discover reads the issuer's metadata, RFC 8414 first and OpenID Connect
// Discovery second, and returns its jwks_uri. The document must name exactly the
// configured issuer (RFC 8414 section 3.3, OIDC Discovery section 4.3): a document
// that names another one is not this issuer's.
func (ks *keySet) discover(ctx context.Context) (string, error) {
	var errs []error
	for _, u := range metadataURLs(ks.cfg.Issuer) {
		var md struct {
			Issuer  string `json:"issuer"`
			JWKSURI string `json:"jwks_uri"`
		}
		if err := ks.getJSON(ctx, u, &md); err != nil {
			errs = append(errs, err)
			continue
		}
		if md.Issuer != ks.cfg.Issuer {
			return "", fmt.Errorf("the metadata at %s names issuer %q, not %q", u, md.Issuer, ks.cfg.Issuer)
		}
		if err := checkURL(md.JWKSURI); err != nil {
			return "", fmt.Errorf("the metadata at %s: jwks_uri: %w", u, err)
		}
		return md.JWKSURI, nil
	}
	return "", errors.Join(errs...)
}

// metadataURLs are where an issuer's metadata lives: RFC 8414 section 3.1 inserts
// the well-known segment before the issuer's path; OIDC Discovery appends it.
func metadataURLs(issuer string) []string {
	u, err := url.Parse(issuer)
	if err != nil {
		return nil
	}
	path := strings.TrimRight(u.Path, "/")
	rfc := *u
	rfc.Path = "/.well-known/oauth-authorization-server" + path
	oidc := *u
	oidc.Path = path + "/.well-known/openid-configuration"
	return []string{rfc.String(), oidc.String()}
}

func (ks *keySet) getJSON(ctx context.Context, u string, dst any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := ks.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDocument))
		return fmt.Errorf("GET %s: status %d", u, resp.StatusCode)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "" &&
		mt != "application/json" && mt != "application/jwk-set+json" && !strings.HasSuffix(mt, "+json") {
		return fmt.Errorf("GET %s: content type %q is not JSON", u, mt)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDocument+1))
	if err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	if len(body) > maxDocument {
		return fmt.Errorf("GET %s: the document is larger than %d bytes", u, maxDocument)
	}
	if err := json.Unmarshal(body, dst); err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	return nil
}

// match returns the keys a token with this kid may be checked against. A token
// without a kid is checked against the one key of the set only: trying every key
// would let a set of many keys multiply the work of each forged token.
func match(keys []jose.JSONWebKey, kid string) []jose.JSONWebKey {
	if kid == "" {
		if len(keys) == 1 {
			return keys
		}
		return nil
	}
	var out []jose.JSONWebKey
	for _, k := range keys {
		if k.KeyID == kid {
			out = append(out, k)
		}
	}
	return out
}

// checkURL accepts https, and http only on loopback (tests, a local issuer).
func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.User != nil || u.Fragment != "" {
		return fmt.Errorf("%q is not an absolute URL", s)
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if isLoopback(u.Hostname()) {
			return nil
		}
	}
	return fmt.Errorf("%q: want https (http only on loopback)", s)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
