package auth

import (
	"container/list"
	"context"
	"crypto/sha256"
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
//
// Every request looks its token up here, so a hit is kept cheap: the key is the
// binary SHA-256 (the hex form Hash returns would cost two allocations per
// request), and lookups share a read lock, taking the write lock only to insert.
type CachedVerifier struct {
	v    *Verifier
	ttl  time.Duration
	size int

	mu      sync.RWMutex
	entries map[cacheKey]*list.Element // hash -> element holding *cacheEntry
	order   *list.List                 // front = oldest insertion
}

// cacheKey is the SHA-256 of a secret: the cache holds no secrets.
type cacheKey [sha256.Size]byte

// keyOf hashes a secret of the token format's length (the only secrets that reach
// the cache) through a buffer on the stack instead of a converted copy on the heap.
func keyOf(secret string) cacheKey {
	var buf [TokenLen]byte
	if len(secret) > len(buf) {
		return sha256.Sum256([]byte(secret))
	}
	return sha256.Sum256(append(buf[:0], secret...))
}

type cacheEntry struct {
	hash    cacheKey
	p       Principal // p.Scopes is the entry's own copy, never written after put
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
	return &CachedVerifier{v: v, ttl: ttl, size: size, entries: make(map[cacheKey]*list.Element), order: list.New()}
}

// Verify answers from the cache when it holds an unexpired success for this secret,
// and otherwise asks the Verifier.
func (c *CachedVerifier) Verify(ctx context.Context, secret string) (Principal, error) {
	if !ValidFormat(secret) {
		return Principal{}, reject(ReasonMalformed, "")
	}
	h := keyOf(secret)
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

// get answers from an unexpired entry. An expired one is left in place: the caller
// verifies the secret next and put replaces it, or eviction drops it; removing it
// here would make every lookup take the write lock.
func (c *CachedVerifier) get(h cacheKey, now time.Time) (Principal, bool) {
	c.mu.RLock()
	el, ok := c.entries[h]
	var (
		p       Principal
		expires time.Time
	)
	if ok {
		e := el.Value.(*cacheEntry)
		p, expires = e.p, e.expires
	}
	c.mu.RUnlock()
	if !ok || !now.Before(expires) {
		return Principal{}, false
	}
	// Cloned outside the lock: the entry's slice is never written after put.
	// Callers get their own copy so that they cannot edit the cache.
	p.Scopes = slices.Clone(p.Scopes)
	return p, true
}

func (c *CachedVerifier) put(h cacheKey, p Principal, expires, now time.Time) {
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
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.order.Len()
}

// Forget drops the cached answers for these token ids, so that a token revoked by this
// process is refused at its next use instead of within the TTL. Tokens are cached by
// secret hash, so this looks at every entry: the cache is bounded, and revocations are
// rare next to lookups.
func (c *CachedVerifier) Forget(tokenIDs ...string) {
	if len(tokenIDs) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for el := c.order.Front(); el != nil; {
		next := el.Next()
		if slices.Contains(tokenIDs, el.Value.(*cacheEntry).p.TokenID) {
			c.remove(el)
		}
		el = next
	}
}
