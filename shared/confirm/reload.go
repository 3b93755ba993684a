package confirm

import (
	"context"
	"crypto/cipher"
	"log/slog"
	"sync"
	"time"
)

// Reload policy of a keyring built from a source. A rotation puts a new
// AWSCURRENT; an instance that has not reloaded yet keeps sealing under the old
// key, which the others still open as AWSPREVIOUS, and opens the new key's
// states by reloading when it meets their unknown key id. The periodic reload
// makes every instance seal under the new key within RefreshEvery, so a second
// rotation more than Lifetime+RefreshEvery later never leaves a state sealed
// under a key nobody holds.
const (
	// RefreshEvery is how old the keys may get before the next Seal or Open
	// reloads them.
	RefreshEvery = Lifetime
	// RefreshMinInterval rate-limits reloads, so a stream of forged states with
	// made-up key ids cannot turn into a stream of Secrets Manager calls.
	RefreshMinInterval = 10 * time.Second
	// refreshTimeout bounds a reload made on the request path (Seal and Open
	// take no context: the guard calls them with its clock only).
	refreshTimeout = 3 * time.Second
)

// reloader re-reads the keys from their source. Reloads are serialised; a
// failed one keeps the keys in use (and is logged), so Secrets Manager being
// unreachable never refuses a confirmation the old keys can still answer.
type reloader struct {
	load func(ctx context.Context) (*keySet, error)
	log  *slog.Logger

	// mu guards the fields below and is held for the whole of a reload.
	mu sync.Mutex
	// loaded is when the keys in use were read; tried when a reload was last
	// attempted. Both are on the caller's clock (the now of Seal and Open), so a
	// test moves them without sleeping.
	loaded, tried time.Time
}

// keys returns the keys to use at now, reloading them first when they are
// older than RefreshEvery. Only one caller reloads: while it waits on Secrets
// Manager the others go on with the keys in use, which are still valid.
func (r *ring) keys(now time.Time) *keySet {
	if rl := r.reload; rl != nil && rl.mu.TryLock() {
		if rl.loaded.IsZero() {
			// The first use anchors the age on the caller's clock: the keys were
			// read at construction, just before.
			rl.loaded = now
		}
		if now.Sub(rl.loaded) >= RefreshEvery {
			r.refreshLocked(now)
		}
		rl.mu.Unlock()
	}
	return r.set.Load()
}

// keysFor is the AEAD of key id after a reload, for a state sealed under a key
// this instance does not hold yet. It waits for a reload in flight: that one
// may be bringing the key.
func (r *ring) keysFor(id string, now time.Time) (cipher.AEAD, bool) {
	if r.reload == nil {
		return nil, false
	}
	r.reload.mu.Lock()
	r.refreshLocked(now)
	r.reload.mu.Unlock()
	a, ok := r.set.Load().aeads[id]
	return a, ok
}

// refreshLocked reloads the keys unless a reload was tried less than
// RefreshMinInterval ago. The caller holds reload.mu.
func (r *ring) refreshLocked(now time.Time) {
	rl := r.reload
	if !rl.tried.IsZero() && now.Sub(rl.tried) < RefreshMinInterval {
		return
	}
	rl.tried = now
	ctx, cancel := context.WithTimeout(context.Background(), refreshTimeout)
	defer cancel()
	set, err := rl.load(ctx)
	if err != nil {
		rl.log.Warn("confirm: reloading the confirmation keys failed; the keys in use stay", "err", err)
		return
	}
	r.set.Store(set)
	rl.loaded = now
}
