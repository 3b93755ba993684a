package auth

import (
	"container/list"
	"context"
	"slices"
	"sync"
	"time"
)

// MaxCacheTTL is the longest a verified token is trusted without a lookup. It matches
// the API Gateway authorizer cache, so a revocation takes effect within the same bound
// locally and on AWS.
const MaxCacheTTL = 60 * time.Second

// DefaultCacheSize bounds a CachedVerifier created with size <= 0.
const DefaultCacheSize = 1024

// CachedVerifier remembers successful verifications for a short TTL, keyed by the
// secret's hash. Failures are never cached: a token that is created or fixed works at
// once, and a flood of bad tokens cannot evict good entries. Safe for concurrent use.
type CachedVerifier struct {
	v    *Verifier
	ttl  time.Duration
	size int

	mu      sync.Mutex
	entries map[string]*list.Element // hash -> element holding *cacheEntry
	order   *list.List               // front = oldest insertion
}

type cacheEntry struct {
	hash    string
	p       Principal
	expires time.Time
}

// NewCachedVerifier wraps v. ttl is clamped to (0, MaxCacheTTL]; size <= 0 means
// DefaultCacheSize.
func NewCachedVerifier(v *Verifier, ttl time.Duration, size int) *CachedVerifier {
	if ttl <= 0 || ttl > MaxCacheTTL {
		ttl = MaxCacheTTL
	}
	if size <= 0 {
		size = DefaultCacheSize
	}
	return &CachedVerifier{v: v, ttl: ttl, size: size, entries: make(map[string]*list.Element), order: list.New()}
}

// Verify answers from the cache when it holds an unexpired success for this secret,
// and otherwise asks the Verifier.
func (c *CachedVerifier) Verify(ctx context.Context, secret string) (Principal, error) {
	if !ValidFormat(secret) {
		return Principal{}, reject(ReasonMalformed, "")
	}
	h := Hash(secret)
	now := c.v.now()
	if p, ok := c.get(h, now); ok {
		return p, nil
	}
	p, tokenExpiry, err := c.v.verify(ctx, secret)
	if err != nil {
		return Principal{}, err
	}
	expires := now.Add(c.ttl)
	if tokenExpiry.Before(expires) {
		expires = tokenExpiry // never serve a token past its own expiry
	}
	c.put(h, p, expires, now)
	return p, nil
}

func (c *CachedVerifier) get(h string, now time.Time) (Principal, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[h]
	if !ok {
		return Principal{}, false
	}
	e := el.Value.(*cacheEntry)
	if !now.Before(e.expires) {
		c.remove(el)
		return Principal{}, false
	}
	p := e.p
	p.Scopes = slices.Clone(p.Scopes) // callers must not be able to edit the cache
	return p, true
}

func (c *CachedVerifier) put(h string, p Principal, expires, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[h]; ok {
		c.remove(el)
	}
	// Entries are inserted with the same TTL, so the oldest insertion expires first:
	// dropping from the front removes expired entries, then the oldest live one.
	for c.order.Len() > 0 {
		front := c.order.Front()
		if c.order.Len() < c.size && now.Before(front.Value.(*cacheEntry).expires) {
			break
		}
		c.remove(front)
	}
	p.Scopes = slices.Clone(p.Scopes)
	c.entries[h] = c.order.PushBack(&cacheEntry{hash: h, p: p, expires: expires})
}

func (c *CachedVerifier) remove(el *list.Element) {
	delete(c.entries, el.Value.(*cacheEntry).hash)
	c.order.Remove(el)
}

// Len is the number of cached entries (for tests and metrics).
func (c *CachedVerifier) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
