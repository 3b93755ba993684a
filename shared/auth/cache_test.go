package auth

import (
	"sync"
	"testing"
	"time"
)

func TestCachedVerifier(t *testing.T) {
	ts := newMemTokens()
	clk := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	v := &Verifier{Store: ts, Now: clk.Now}
	ctx := t.Context()
	secret, rec := issue(t, ts, clk.Now(), "ws_a", "alice", time.Hour, "issues:read")

	c := NewCachedVerifier(v, 30*time.Second, 0)
	p, err := c.Verify(ctx, secret)
	if err != nil || p.TokenID != rec.TokenID {
		t.Fatalf("first Verify: %+v %v", p, err)
	}
	p.Scopes[0] = "tampered" // a caller editing its copy must not edit the cache
	base := ts.count()
	p, err = c.Verify(ctx, secret)
	if err != nil || ts.count() != base || p.Scopes[0] != "issues:read" {
		t.Errorf("second Verify within the TTL: lookups %d -> %d, scopes %v, err %v", base, ts.count(), p.Scopes, err)
	}

	// Revocation takes effect once the entry expires, never later than the TTL.
	if _, err := ts.UpdateTokenRevoked(ctx, rec.TokenID, clk.Now()); err != nil {
		t.Fatal(err)
	}
	clk.Add(29 * time.Second)
	if _, err := c.Verify(ctx, secret); err != nil {
		t.Errorf("within the TTL the cached answer stands: %v", err)
	}
	clk.Add(2 * time.Second)
	_, err = c.Verify(ctx, secret)
	checkRejected(t, "revoked after the TTL", err, ReasonRevoked, secret)

	// Failures are not cached: each one asks the store.
	unknown, _, _ := Mint()
	before := ts.count()
	for range 3 {
		_, err := c.Verify(ctx, unknown)
		checkRejected(t, "unknown", err, ReasonUnknown, unknown)
	}
	if got := ts.count() - before; got != 3 {
		t.Errorf("3 failed verifications made %d lookups, want 3 (failures are not cached)", got)
	}
	// Malformed secrets never reach the store.
	before = ts.count()
	_, err = c.Verify(ctx, "aac_nope")
	checkRejected(t, "malformed", err, ReasonMalformed, "")
	if ts.count() != before {
		t.Error("a malformed secret caused a lookup")
	}
}

func TestCachedVerifierHonoursTokenExpiry(t *testing.T) {
	ts := newMemTokens()
	clk := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	c := NewCachedVerifier(&Verifier{Store: ts, Now: clk.Now}, time.Minute, 0)
	secret, _ := issue(t, ts, clk.Now(), "ws_a", "alice", 10*time.Second, "issues:read")
	if _, err := c.Verify(t.Context(), secret); err != nil {
		t.Fatal(err)
	}
	clk.Add(11 * time.Second) // past the token's expiry, well within the cache TTL
	_, err := c.Verify(t.Context(), secret)
	checkRejected(t, "expired while cached", err, ReasonExpired, secret)
}

func TestCachedVerifierBounds(t *testing.T) {
	ts := newMemTokens()
	clk := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	c := NewCachedVerifier(&Verifier{Store: ts, Now: clk.Now}, time.Hour, 3)
	if c.ttl != MaxCacheTTL {
		t.Errorf("ttl %v was not clamped to %v", c.ttl, MaxCacheTTL)
	}
	var secrets []string
	for range 5 {
		s, _ := issue(t, ts, clk.Now(), "ws_a", "alice", time.Hour, "issues:read")
		secrets = append(secrets, s)
		if _, err := c.Verify(t.Context(), s); err != nil {
			t.Fatal(err)
		}
		if c.Len() > 3 {
			t.Fatalf("cache holds %d entries, bound is 3", c.Len())
		}
	}
	// The oldest entries were evicted: verifying the first again needs a lookup, the
	// newest does not.
	before := ts.count()
	if _, err := c.Verify(t.Context(), secrets[4]); err != nil || ts.count() != before {
		t.Errorf("newest entry was not cached (lookups %d -> %d, %v)", before, ts.count(), err)
	}
	if _, err := c.Verify(t.Context(), secrets[0]); err != nil || ts.count() != before+1 {
		t.Errorf("oldest entry was not evicted (lookups %d -> %d, %v)", before, ts.count(), err)
	}
}

// TestCachedVerifierConcurrent: callers hitting, missing and re-verifying expired
// entries at once (run with -race) each get their own principal, and an expired
// entry is replaced, not duplicated.
func TestCachedVerifierConcurrent(t *testing.T) {
	ts := newMemTokens()
	clk := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	c := NewCachedVerifier(&Verifier{Store: ts, Now: clk.Now}, 10*time.Second, 0)
	type token struct{ secret, user string }
	var tokens []token
	for _, user := range []string{"alice", "bob", "carol"} {
		s, _ := issue(t, ts, clk.Now(), "ws_a", user, time.Hour, "issues:read", "issues:write")
		tokens = append(tokens, token{s, user})
	}
	for round := range 3 {
		var wg sync.WaitGroup
		for g := range 12 {
			wg.Go(func() {
				for i := range 50 {
					tok := tokens[(g+i)%len(tokens)]
					p, err := c.Verify(t.Context(), tok.secret)
					if err != nil || p.UserID != tok.user || len(p.Scopes) != 2 {
						t.Errorf("round %d: Verify for %s = %+v, %v", round, tok.user, p, err)
						return
					}
					p.Scopes[0] = "tampered" // must not reach the cache or another caller
				}
			})
		}
		wg.Wait()
		if c.Len() != len(tokens) {
			t.Errorf("round %d: cache holds %d entries, want %d", round, c.Len(), len(tokens))
		}
		clk.Add(11 * time.Second) // every entry expires before the next round
	}
}

func TestCachedVerifierForget(t *testing.T) {
	ts := newMemTokens()
	clk := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	c := NewCachedVerifier(&Verifier{Store: ts, Now: clk.Now}, MaxCacheTTL, 0)
	ctx := t.Context()
	gone, goneRec := issue(t, ts, clk.Now(), "ws_a", "alice", time.Hour, "issues:read")
	kept, _ := issue(t, ts, clk.Now(), "ws_a", "bob", time.Hour, "issues:read")
	for _, s := range []string{gone, kept} {
		if _, err := c.Verify(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ts.UpdateTokenRevoked(ctx, goneRec.TokenID, clk.Now()); err != nil {
		t.Fatal(err)
	}
	c.Forget(goneRec.TokenID, "tok_never_cached")
	// Forgotten: the next use asks the store and sees the revocation, well within the TTL.
	_, err := c.Verify(ctx, gone)
	checkRejected(t, "a forgotten revoked token", err, ReasonRevoked, gone)
	before := ts.count()
	if _, err := c.Verify(ctx, kept); err != nil || ts.count() != before {
		t.Errorf("another token's entry was dropped too: lookups %d -> %d, err %v", before, ts.count(), err)
	}
	c.Forget() // nothing to forget is a no-op
}
