package auth

import (
	"context"
	"errors"
	"github.com/aacworkflow/aacmcp/shared/store"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/apperr"
)

// memTokens is an in-memory TokenStore that counts lookups (the cache tests need that).
type memTokens struct {
	mu      sync.Mutex
	byHash  map[string]TokenRecord
	lookups int
	fail    error
}

func newMemTokens() *memTokens { return &memTokens{byHash: map[string]TokenRecord{}} }

func (m *memTokens) CreateToken(_ context.Context, t TokenRecord) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.byHash {
		if r.TokenID == t.TokenID {
			return store.Errorf(store.ErrAlreadyExists, "token exists")
		}
	}
	if _, ok := m.byHash[t.Hash]; ok {
		return store.Errorf(store.ErrAlreadyExists, "token exists")
	}
	m.byHash[t.Hash] = t
	return nil
}

func (m *memTokens) GetTokenByHash(_ context.Context, hash string) (TokenRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lookups++
	if m.fail != nil {
		return TokenRecord{}, m.fail
	}
	r, ok := m.byHash[hash]
	if !ok {
		return TokenRecord{}, store.NotFound("token")
	}
	return r, nil
}

func (m *memTokens) ListTokens(_ context.Context, ws string) ([]TokenRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []TokenRecord
	for _, r := range m.byHash {
		if ws == "" || r.WorkspaceID == ws {
			out = append(out, r)
		}
	}
	return out, nil
}

func (m *memTokens) UpdateTokenRevoked(_ context.Context, id string, at time.Time) (TokenRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for h, r := range m.byHash {
		if r.TokenID == id {
			if r.RevokedAt == nil {
				r.RevokedAt = &at
				m.byHash[h] = r
			}
			return r, nil
		}
	}
	return TokenRecord{}, store.NotFound("token")
}

func (m *memTokens) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lookups
}

// clock is a settable time source.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func issue(t *testing.T, ts TokenStore, now time.Time, ws, user string, ttl time.Duration, scopes ...string) (string, TokenRecord) {
	t.Helper()
	secret, rec, err := IssueToken(t.Context(), ts, TokenRequest{WorkspaceID: ws, UserID: user, Name: "t", Scopes: scopes, TTL: ttl}, now)
	if err != nil {
		t.Fatalf("IssueToken: %v", err)
	}
	return secret, rec
}

func TestVerify(t *testing.T) {
	ts := newMemTokens()
	clk := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	v := &Verifier{Store: ts, Now: clk.Now}
	ctx := t.Context()

	good, goodRec := issue(t, ts, clk.Now(), "ws_a", "alice", time.Hour, "issues:write", "issues:read")
	otherWS, _ := issue(t, ts, clk.Now(), "ws_b", "bob", time.Hour, "comments:read")
	short, _ := issue(t, ts, clk.Now(), "ws_a", "alice", time.Minute, "issues:read")
	revoked, revokedRec := issue(t, ts, clk.Now(), "ws_a", "alice", time.Hour, "issues:read")
	if _, err := ts.UpdateTokenRevoked(ctx, revokedRec.TokenID, clk.Now()); err != nil {
		t.Fatal(err)
	}
	unknown, _, _ := Mint()
	// A record without expiry must not verify: every token expires (fail closed).
	noExpiry, noExpiryHash, _ := Mint()
	if err := ts.CreateToken(ctx, TokenRecord{Hash: noExpiryHash, TokenID: NewTokenID(), WorkspaceID: "ws_a", UserID: "alice", Scopes: []string{"issues:read"}}); err != nil {
		t.Fatal(err)
	}
	clk.Add(2 * time.Minute) // short is now expired

	p, err := v.Verify(ctx, good)
	if err != nil {
		t.Fatalf("Verify(good): %v", err)
	}
	want := Principal{WorkspaceID: "ws_a", UserID: "alice", TokenID: goodRec.TokenID, Scopes: []string{"issues:read", "issues:write"}}
	if p.WorkspaceID != want.WorkspaceID || p.UserID != want.UserID || p.TokenID != want.TokenID || !slices.Equal(p.Scopes, want.Scopes) {
		t.Errorf("Verify(good) = %+v, want %+v", p, want)
	}
	// The principal comes from the token's record: another workspace's token yields
	// that workspace, whatever the caller would like.
	p, err = v.Verify(ctx, otherWS)
	if err != nil || p.WorkspaceID != "ws_b" || p.UserID != "bob" || !p.Has("comments:read") || p.Has("issues:read") {
		t.Errorf("Verify(other workspace) = %+v, %v", p, err)
	}

	tests := []struct {
		name   string
		secret string
		reason Reason
	}{
		{"expired", short, ReasonExpired},
		{"revoked", revoked, ReasonRevoked},
		{"unknown", unknown, ReasonUnknown},
		{"no expiry", noExpiry, ReasonExpired},
		{"malformed", "aac_short", ReasonMalformed},
		{"bad checksum", badChecksum(good), ReasonMalformed},
		{"empty", "", ReasonMalformed},
	}
	for _, tc := range tests {
		p, err := v.Verify(ctx, tc.secret)
		if p.WorkspaceID != "" || p.UserID != "" || p.TokenID != "" || p.Scopes != nil {
			t.Errorf("%s: non-empty principal %+v on failure", tc.name, p)
		}
		checkRejected(t, tc.name, err, tc.reason, tc.secret)
	}

	// A store outage is internal_error, not a bad token.
	ts.fail = errors.New("dynamodb: throttled")
	_, err = v.Verify(ctx, good)
	if apperr.CodeOf(err) != apperr.InternalError || RejectReason(err) != "" {
		t.Errorf("Verify during an outage = %v, want internal_error", err)
	}
}

func TestIssueTokenValidation(t *testing.T) {
	ts := newMemTokens()
	now := time.Now()
	tests := []struct {
		name string
		req  TokenRequest
	}{
		{"no workspace", TokenRequest{UserID: "u", Scopes: []string{"issues:read"}, TTL: time.Hour}},
		{"no user", TokenRequest{WorkspaceID: "w", Scopes: []string{"issues:read"}, TTL: time.Hour}},
		{"no scopes", TokenRequest{WorkspaceID: "w", UserID: "u", TTL: time.Hour}},
		{"unknown scope", TokenRequest{WorkspaceID: "w", UserID: "u", Scopes: []string{"issues:admin"}, TTL: time.Hour}},
		{"zero ttl", TokenRequest{WorkspaceID: "w", UserID: "u", Scopes: []string{"issues:read"}}},
		{"negative ttl", TokenRequest{WorkspaceID: "w", UserID: "u", Scopes: []string{"issues:read"}, TTL: -time.Hour}},
		{"ttl too long", TokenRequest{WorkspaceID: "w", UserID: "u", Scopes: []string{"issues:read"}, TTL: MaxTokenTTL + time.Hour}},
	}
	for _, tc := range tests {
		_, _, err := IssueToken(t.Context(), ts, tc.req, now)
		if apperr.CodeOf(err) != apperr.InvalidArguments {
			t.Errorf("%s: %v, want invalid_arguments", tc.name, err)
		}
	}
	secret, rec, err := IssueToken(t.Context(), ts, TokenRequest{WorkspaceID: "w", UserID: "u", Scopes: []string{"issues:write", "issues:read", "issues:write"}, TTL: time.Hour}, now)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rec.Scopes, []string{"issues:read", "issues:write"}) || rec.Hash != Hash(secret) || !rec.ExpiresAt.Equal(now.Add(time.Hour)) {
		t.Errorf("issued record %+v", rec)
	}
	stored, err := ts.GetTokenByHash(t.Context(), rec.Hash)
	if err != nil || stored.TokenID != rec.TokenID {
		t.Errorf("issued token not stored: %v", err)
	}
}

// badChecksum changes secret's last character, which the checksum covers. Always a
// different one: a fixed replacement equals the original once in as many tokens as
// the alphabet has characters, and the test then verified a good token as bad.
func badChecksum(secret string) string {
	last := secret[len(secret)-1]
	repl := byte('x')
	if last == repl {
		repl = 'y'
	}
	return secret[:len(secret)-1] + string(repl)
}
