package storetest

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// racers is how many goroutines contend for one single-use record.
const racers = 16

// race runs fn in racers goroutines released at once and returns their errors.
func race(fn func(i int) error) []error {
	errs := make([]error, racers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range racers {
		wg.Go(func() {
			<-start
			errs[i] = fn(i)
		})
	}
	close(start)
	wg.Wait()
	return errs
}

// oneWinner fails unless exactly one error is nil and every other has code loser.
func oneWinner(t *testing.T, what string, errs []error, loser error) (winner int) {
	t.Helper()
	winner = -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Errorf("%s: callers %d and %d both succeeded, want exactly one", what, winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, loser):
			t.Errorf("%s: caller %d got %v, want %s", what, i, err, loser)
		}
	}
	if winner < 0 {
		t.Fatalf("%s: no caller succeeded, want exactly one", what)
	}
	return winner
}

func utcPtr(p *time.Time) *time.Time {
	if p == nil {
		return nil
	}
	return ptr(p.UTC())
}

func normClient(c store.OAuthClient) store.OAuthClient {
	c.CreatedAt, c.LastUsedAt = c.CreatedAt.UTC(), c.LastUsedAt.UTC()
	return c
}

func normPending(p store.OAuthPending) store.OAuthPending {
	p.CreatedAt, p.ExpiresAt = p.CreatedAt.UTC(), p.ExpiresAt.UTC()
	if p.Accounts == nil {
		p.Accounts = []store.OAuthAccount{}
	}
	if p.Scopes == nil {
		p.Scopes = []string{}
	}
	return p
}

func normCode(c store.OAuthCode) store.OAuthCode {
	c.CreatedAt, c.ExpiresAt, c.UsedAt = c.CreatedAt.UTC(), c.ExpiresAt.UTC(), utcPtr(c.UsedAt)
	return c
}

func normGrant(g store.OAuthGrant) store.OAuthGrant {
	g.CreatedAt, g.LastUsedAt, g.ExpiresAt = g.CreatedAt.UTC(), g.LastUsedAt.UTC(), g.ExpiresAt.UTC()
	g.RevokedAt = utcPtr(g.RevokedAt)
	if g.AccessTokenIDs == nil {
		g.AccessTokenIDs = []string{}
	}
	return g
}

func sameValue[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n got  %+v\n want %+v", what, got, want)
	}
}

func testOAuthClients(t *testing.T, b OAuthBackend) {
	ctx, s := t.Context(), b.OAuth
	at := baseTime()
	mk := func(created time.Time) store.OAuthClient {
		return store.OAuthClient{ClientID: uid("client"), SecretHash: sha(uid("secret")), Name: "Client <b>&</b>",
			RedirectURIs: []string{"https://app.example/cb", "http://127.0.0.1:8976/cb"}, ApplicationType: "web",
			TokenEndpointAuthMethod: "client_secret_basic", GrantTypes: []string{"authorization_code", "refresh_token"},
			ClientURI: "https://app.example", SourceIP: "192.0.2.7", CreatedAt: created, LastUsedAt: created}
	}
	c1, c2 := mk(at), mk(at.Add(time.Minute))
	c2.SecretHash, c2.TokenEndpointAuthMethod, c2.ApplicationType = "", "none", "native"
	c1.TokenEndpointAuthMethod, c1.SecretHash, c1.JWKSURI, c1.SigningAlg = "private_key_jwt", "", "https://app.example/jwks.json", "RS256"
	c2.JWKS = `{"keys":[{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]}`
	for _, c := range []store.OAuthClient{c1, c2} {
		must(t, "CreateOAuthClient", s.CreateOAuthClient(ctx, c))
	}
	got, err := s.GetOAuthClient(ctx, c1.ClientID)
	must(t, "GetOAuthClient", err)
	sameValue(t, "GetOAuthClient", normClient(got), normClient(c1))
	got, err = s.GetOAuthClient(ctx, c2.ClientID)
	must(t, "GetOAuthClient (public)", err)
	sameValue(t, "GetOAuthClient (public)", normClient(got), normClient(c2))

	dup := mk(at)
	dup.ClientID = c1.ClientID
	wantErr(t, "CreateOAuthClient of an existing id", s.CreateOAuthClient(ctx, dup), store.ErrAlreadyExists)
	if got, _ := s.GetOAuthClient(ctx, c1.ClientID); got.JWKSURI != c1.JWKSURI {
		t.Errorf("refused CreateOAuthClient changed the original: %+v", got)
	}
	_, err = s.GetOAuthClient(ctx, uid("client"))
	wantErr(t, "GetOAuthClient of an unknown id", err, store.ErrNotFound)

	later := at.Add(30 * time.Minute)
	must(t, "UpdateOAuthClientUsed", s.UpdateOAuthClientUsed(ctx, c1.ClientID, later))
	must(t, "UpdateOAuthClientUsed (earlier)", s.UpdateOAuthClientUsed(ctx, c1.ClientID, at.Add(time.Minute)))
	got, err = s.GetOAuthClient(ctx, c1.ClientID)
	must(t, "GetOAuthClient after use", err)
	if !got.LastUsedAt.Equal(later) || !got.CreatedAt.Equal(at) {
		t.Errorf("after uses at +30m then +1m: last used %v created %v, want %v %v (never moved back)",
			got.LastUsedAt, got.CreatedAt, later, at)
	}
	wantErr(t, "UpdateOAuthClientUsed of an unknown id", s.UpdateOAuthClientUsed(ctx, uid("client"), later), store.ErrNotFound)

	// A registration unused for the lapse reads as unknown everywhere.
	lapsed := mk(time.Now().Add(-store.OAuthClientLapse - time.Hour).Truncate(time.Millisecond))
	must(t, "CreateOAuthClient (lapsed)", s.CreateOAuthClient(ctx, lapsed))
	_, err = s.GetOAuthClient(ctx, lapsed.ClientID)
	wantErr(t, "GetOAuthClient of a lapsed client", err, store.ErrNotFound)
	wantErr(t, "UpdateOAuthClientUsed of a lapsed client", s.UpdateOAuthClientUsed(ctx, lapsed.ClientID, at), store.ErrNotFound)

	list, err := s.ListOAuthClients(ctx)
	must(t, "ListOAuthClients", err)
	var ours []string
	for _, c := range list {
		if c.ClientID == c1.ClientID || c.ClientID == c2.ClientID || c.ClientID == lapsed.ClientID {
			ours = append(ours, c.ClientID)
		}
		if c.ClientID == c2.ClientID {
			sameValue(t, "listed client", normClient(c), normClient(c2))
		}
	}
	if want := []string{c2.ClientID, c1.ClientID}; !slices.Equal(ours, want) {
		t.Errorf("ListOAuthClients holds %v of ours, want newest first, lapsed left out: %v", ours, want)
	}

	must(t, "DeleteOAuthClient", s.DeleteOAuthClient(ctx, c1.ClientID))
	_, err = s.GetOAuthClient(ctx, c1.ClientID)
	wantErr(t, "GetOAuthClient after delete", err, store.ErrNotFound)
	wantErr(t, "DeleteOAuthClient again", s.DeleteOAuthClient(ctx, c1.ClientID), store.ErrNotFound)
	if _, err := s.GetOAuthClient(ctx, c2.ClientID); err != nil {
		t.Errorf("deleting one client removed another: %v", err)
	}
}

func newPending(at time.Time) store.OAuthPending {
	return store.OAuthPending{ID: uid("pend"), Purpose: "authorize", BrowserHash: sha(uid("browser")), CSRFHash: sha(uid("csrf")),
		ClientID: "https://client.example/meta.json", ClientName: "Client", RedirectURI: "https://client.example/cb",
		State: "st<ate>", CodeChallenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", Resource: "https://mcp.example/mcp",
		Scopes: []string{"issues:read", "issues:write"}, UpstreamNonce: "nonce-1", UpstreamVerifier: "verifier-1",
		CreatedAt: at, ExpiresAt: at.Add(2 * time.Hour)}
}

func testOAuthPending(t *testing.T, b OAuthBackend) {
	ctx, s := t.Context(), b.OAuth
	at := baseTime()
	p := newPending(at)
	must(t, "CreateOAuthPending", s.CreateOAuthPending(ctx, p))
	got, err := s.GetOAuthPending(ctx, p.ID)
	must(t, "GetOAuthPending", err)
	sameValue(t, "GetOAuthPending", normPending(got), normPending(p))
	wantErr(t, "CreateOAuthPending of an existing id", s.CreateOAuthPending(ctx, p), store.ErrAlreadyExists)

	// Sign-in fills in who the person is, and may leave the scopes to the person.
	signed := p
	signed.Scopes = nil
	signed.Subject, signed.Email = "https://idp.example 248289761001", "alice@example.com"
	signed.Accounts = []store.OAuthAccount{{WorkspaceID: uid("ws"), UserID: "alice", Role: store.RoleAdmin},
		{WorkspaceID: uid("ws"), UserID: "alice", Role: store.RoleViewer}}
	signed.UpstreamNonce, signed.UpstreamVerifier = "", ""
	must(t, "UpdateOAuthPending", s.UpdateOAuthPending(ctx, signed))
	got, err = s.GetOAuthPending(ctx, p.ID)
	must(t, "GetOAuthPending after update", err)
	sameValue(t, "GetOAuthPending after update", normPending(got), normPending(signed))

	wantErr(t, "UpdateOAuthPending of an unknown id", s.UpdateOAuthPending(ctx, newPending(at)), store.ErrNotFound)
	_, err = s.GetOAuthPending(ctx, uid("pend"))
	wantErr(t, "GetOAuthPending of an unknown id", err, store.ErrNotFound)

	expired := newPending(at.Add(-2 * time.Hour))
	must(t, "CreateOAuthPending (expired)", s.CreateOAuthPending(ctx, expired))
	_, err = s.GetOAuthPending(ctx, expired.ID)
	wantErr(t, "GetOAuthPending of an expired request", err, store.ErrNotFound)
	revived := expired
	revived.ExpiresAt = at.Add(3 * time.Hour)
	wantErr(t, "UpdateOAuthPending of an expired request", s.UpdateOAuthPending(ctx, revived), store.ErrNotFound)
	wantErr(t, "DeleteOAuthPending of an expired request", s.DeleteOAuthPending(ctx, expired.ID), store.ErrNotFound)

	must(t, "DeleteOAuthPending", s.DeleteOAuthPending(ctx, p.ID))
	_, err = s.GetOAuthPending(ctx, p.ID)
	wantErr(t, "GetOAuthPending after delete", err, store.ErrNotFound)
	wantErr(t, "DeleteOAuthPending again", s.DeleteOAuthPending(ctx, p.ID), store.ErrNotFound)
	wantErr(t, "UpdateOAuthPending after delete", s.UpdateOAuthPending(ctx, signed), store.ErrNotFound)
}

// testOAuthPendingSingleUse: a consent form posted many times at once is answered once.
func testOAuthPendingSingleUse(t *testing.T, b OAuthBackend) {
	ctx, s := t.Context(), b.OAuth
	for round := range 3 {
		p := newPending(baseTime())
		must(t, "CreateOAuthPending", s.CreateOAuthPending(ctx, p))
		errs := race(func(int) error { return s.DeleteOAuthPending(ctx, p.ID) })
		oneWinner(t, fmt.Sprintf("round %d: concurrent DeleteOAuthPending", round), errs, store.ErrNotFound)
		_, err := s.GetOAuthPending(ctx, p.ID)
		wantErr(t, "GetOAuthPending after the race", err, store.ErrNotFound)
	}
}

// testOAuthAssertions: a client assertion's hash is taken once while it lives, by
// exactly one of concurrent callers; an expired one does not block a new use.
func testOAuthAssertions(t *testing.T, b OAuthBackend) {
	ctx, s := t.Context(), b.OAuth
	live := time.Now().Add(time.Hour)
	h := sha(uid("assertion"))
	must(t, "CreateOAuthAssertion", s.CreateOAuthAssertion(ctx, h, live))
	wantErr(t, "CreateOAuthAssertion replayed", s.CreateOAuthAssertion(ctx, h, live), store.ErrAlreadyExists)
	if err := s.CreateOAuthAssertion(ctx, sha(uid("assertion")), live); err != nil {
		t.Errorf("CreateOAuthAssertion of another hash after the first: %v", err)
	}

	expired := sha(uid("assertion"))
	must(t, "CreateOAuthAssertion (expired)", s.CreateOAuthAssertion(ctx, expired, time.Now().Add(-time.Minute)))
	must(t, "CreateOAuthAssertion over an expired one", s.CreateOAuthAssertion(ctx, expired, live))
	wantErr(t, "CreateOAuthAssertion (no expiry)", s.CreateOAuthAssertion(ctx, sha(uid("assertion")), time.Time{}), store.ErrInvalid)

	raced := sha(uid("assertion"))
	errs := race(func(int) error { return s.CreateOAuthAssertion(ctx, raced, live) })
	oneWinner(t, "concurrent CreateOAuthAssertion", errs, store.ErrAlreadyExists)
}

func newCode(at time.Time, ttl time.Duration) store.OAuthCode {
	return store.OAuthCode{Hash: sha(uid("code")), GrantID: uid("grant"), ClientID: "https://client.example/meta.json",
		RedirectURI: "https://client.example/cb", CodeChallenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
		Resource: "https://mcp.example/mcp", Scopes: []string{"issues:read"}, WorkspaceID: uid("ws"), UserID: "alice",
		CreatedAt: at, ExpiresAt: at.Add(ttl)}
}

func testOAuthCodes(t *testing.T, b OAuthBackend) {
	ctx, s := t.Context(), b.OAuth
	at := baseTime()
	c := newCode(at, 2*time.Hour)
	must(t, "CreateOAuthCode", s.CreateOAuthCode(ctx, c))
	wantErr(t, "CreateOAuthCode of an existing hash", s.CreateOAuthCode(ctx, c), store.ErrAlreadyExists)

	first := at.Add(time.Second)
	got, err := s.ConsumeOAuthCode(ctx, c.Hash, first)
	must(t, "ConsumeOAuthCode", err)
	sameValue(t, "first ConsumeOAuthCode (as it was: unused)", normCode(got), normCode(c))
	got, err = s.ConsumeOAuthCode(ctx, c.Hash, first.Add(time.Second))
	must(t, "ConsumeOAuthCode again", err)
	if got.UsedAt == nil || !got.UsedAt.Equal(first) {
		t.Errorf("second ConsumeOAuthCode: UsedAt %v, want the first redemption's %v", got.UsedAt, first)
	}
	if got.GrantID != c.GrantID {
		t.Errorf("second ConsumeOAuthCode: grant %q, want %q (the caller revokes it)", got.GrantID, c.GrantID)
	}
	got, err = s.ConsumeOAuthCode(ctx, c.Hash, first.Add(2*time.Second))
	must(t, "ConsumeOAuthCode a third time", err)
	if got.UsedAt == nil || !got.UsedAt.Equal(first) {
		t.Errorf("third ConsumeOAuthCode: UsedAt %v, want %v", got.UsedAt, first)
	}

	_, err = s.ConsumeOAuthCode(ctx, sha(uid("code")), first)
	wantErr(t, "ConsumeOAuthCode of an unknown code", err, store.ErrNotFound)
	expired := newCode(at.Add(-time.Minute), time.Minute)
	must(t, "CreateOAuthCode (expired)", s.CreateOAuthCode(ctx, expired))
	_, err = s.ConsumeOAuthCode(ctx, expired.Hash, first)
	wantErr(t, "ConsumeOAuthCode of an expired code", err, store.ErrNotFound)
}

// testOAuthCodeSingleUse: of concurrent redemptions of one code exactly one sees it
// unused; every other sees the winner's time.
func testOAuthCodeSingleUse(t *testing.T, b OAuthBackend) {
	ctx, s := t.Context(), b.OAuth
	at := baseTime()
	c := newCode(at, 2*time.Hour)
	must(t, "CreateOAuthCode", s.CreateOAuthCode(ctx, c))
	codes := make([]store.OAuthCode, racers)
	errs := race(func(i int) error {
		var err error
		codes[i], err = s.ConsumeOAuthCode(ctx, c.Hash, at.Add(time.Duration(i+1)*time.Second))
		if err == nil && codes[i].UsedAt != nil {
			return store.ErrConflict // a loser, as the server sees it
		}
		return err
	})
	w := oneWinner(t, "concurrent ConsumeOAuthCode", errs, store.ErrConflict)
	wantUsed := at.Add(time.Duration(w+1) * time.Second)
	for i, got := range codes {
		if i != w && (got.UsedAt == nil || !got.UsedAt.Equal(wantUsed)) {
			t.Errorf("caller %d: UsedAt %v, want the winner's %v", i, got.UsedAt, wantUsed)
		}
	}
}

func newGrant(ws, user string, created time.Time) store.OAuthGrant {
	return store.OAuthGrant{ID: uid("grant"), ClientID: "https://client.example/meta.json", ClientName: "Client",
		WorkspaceID: ws, UserID: user, Scopes: []string{"comments:write", "issues:read", "issues:write"},
		Resource: "https://mcp.example/mcp", AccessTokenIDs: []string{}, CreatedAt: created, LastUsedAt: created,
		ExpiresAt: created.Add(30 * 24 * time.Hour)}
}

func testOAuthGrantRotation(t *testing.T, b OAuthBackend) {
	ctx, s := t.Context(), b.OAuth
	at := baseTime()
	g := newGrant(uid("ws"), "alice", at)
	must(t, "CreateOAuthGrant", s.CreateOAuthGrant(ctx, g))
	got, err := s.GetOAuthGrant(ctx, g.ID)
	must(t, "GetOAuthGrant", err)
	sameValue(t, "GetOAuthGrant", normGrant(got), normGrant(g))
	wantErr(t, "CreateOAuthGrant of an existing id", s.CreateOAuthGrant(ctx, g), store.ErrAlreadyExists)
	_, err = s.GetOAuthGrant(ctx, uid("grant"))
	wantErr(t, "GetOAuthGrant of an unknown id", err, store.ErrNotFound)
	_, _, err = s.GetOAuthGrantByRefresh(ctx, "")
	wantErr(t, `GetOAuthGrantByRefresh("") beside an unredeemed grant`, err, store.ErrNotFound)

	// The code redemption: from no refresh token to the first.
	h1, h2, h3 := sha(uid("refresh")), sha(uid("refresh")), sha(uid("refresh"))
	t1, t2, t3 := auth.NewTokenID(), auth.NewTokenID(), auth.NewTokenID()
	r1 := store.OAuthRotation{GrantID: g.ID, OldRefreshHash: "", NewRefreshHash: h1, Scopes: g.Scopes,
		AccessTokenID: t1, At: at.Add(time.Minute), ExpiresAt: at.Add(time.Minute + 30*24*time.Hour)}
	got, err = s.UpdateOAuthGrantRotate(ctx, r1)
	must(t, "UpdateOAuthGrantRotate (redemption)", err)
	want := g
	want.RefreshHash, want.AccessTokenIDs, want.LastUsedAt, want.ExpiresAt = h1, []string{t1}, r1.At, r1.ExpiresAt
	sameValue(t, "grant after the redemption", normGrant(got), normGrant(want))
	got, current, err := s.GetOAuthGrantByRefresh(ctx, h1)
	must(t, "GetOAuthGrantByRefresh", err)
	if !current || got.ID != g.ID {
		t.Errorf("GetOAuthGrantByRefresh(current) = %s current=%v, want %s true", got.ID, current, g.ID)
	}
	sameValue(t, "GetOAuthGrantByRefresh", normGrant(got), normGrant(want))

	// A refresh that narrows the scopes and prunes the expired access token.
	r2 := store.OAuthRotation{GrantID: g.ID, OldRefreshHash: h1, NewRefreshHash: h2, Scopes: []string{"issues:read"},
		AccessTokenID: t2, DropTokenIDs: []string{t1}, At: at.Add(2 * time.Hour), ExpiresAt: at.Add(2*time.Hour + 30*24*time.Hour)}
	got, err = s.UpdateOAuthGrantRotate(ctx, r2)
	must(t, "UpdateOAuthGrantRotate (refresh)", err)
	want.RefreshHash, want.Scopes, want.AccessTokenIDs = h2, []string{"issues:read"}, []string{t2}
	want.LastUsedAt, want.ExpiresAt = r2.At, r2.ExpiresAt
	sameValue(t, "grant after the refresh", normGrant(got), normGrant(want))
	if got, err := s.GetOAuthGrant(ctx, g.ID); err != nil || !reflect.DeepEqual(normGrant(got), normGrant(want)) {
		t.Errorf("GetOAuthGrant after the refresh = %+v %v, want %+v", got, err, want)
	}

	// The token it rotated away from stays findable, as not current: reuse is theft.
	got, current, err = s.GetOAuthGrantByRefresh(ctx, h1)
	must(t, "GetOAuthGrantByRefresh(rotated)", err)
	if current || got.ID != g.ID || got.RefreshHash != h2 {
		t.Errorf("GetOAuthGrantByRefresh(rotated) = %s current=%v refresh=%q, want %s false %q", got.ID, current, got.RefreshHash, g.ID, h2)
	}
	if _, current, err := s.GetOAuthGrantByRefresh(ctx, h2); err != nil || !current {
		t.Errorf("GetOAuthGrantByRefresh(new) current=%v err=%v, want true nil", current, err)
	}
	_, _, err = s.GetOAuthGrantByRefresh(ctx, sha(uid("refresh")))
	wantErr(t, "GetOAuthGrantByRefresh of an unknown hash", err, store.ErrNotFound)

	// A stale old hash loses, and changes nothing.
	stale := store.OAuthRotation{GrantID: g.ID, OldRefreshHash: h1, NewRefreshHash: h3, AccessTokenID: t3, At: at.Add(3 * time.Hour)}
	_, err = s.UpdateOAuthGrantRotate(ctx, stale)
	wantErr(t, "UpdateOAuthGrantRotate from a rotated hash", err, store.ErrConflict)
	stale.OldRefreshHash = ""
	_, err = s.UpdateOAuthGrantRotate(ctx, stale)
	wantErr(t, "UpdateOAuthGrantRotate from \"\" after the redemption", err, store.ErrConflict)
	if got, _ := s.GetOAuthGrant(ctx, g.ID); !reflect.DeepEqual(normGrant(got), normGrant(want)) {
		t.Errorf("refused rotations changed the grant: %+v, want %+v", got, want)
	}
	_, _, err = s.GetOAuthGrantByRefresh(ctx, h3)
	wantErr(t, "GetOAuthGrantByRefresh of a refused rotation's hash", err, store.ErrNotFound)
	_, err = s.UpdateOAuthGrantRotate(ctx, store.OAuthRotation{GrantID: uid("grant"), OldRefreshHash: h2, NewRefreshHash: h3})
	wantErr(t, "UpdateOAuthGrantRotate of an unknown grant", err, store.ErrNotFound)

	// nil Scopes keeps them.
	r3 := store.OAuthRotation{GrantID: g.ID, OldRefreshHash: h2, NewRefreshHash: h3, AccessTokenID: t3,
		At: at.Add(4 * time.Hour), ExpiresAt: at.Add(4*time.Hour + 30*24*time.Hour)}
	got, err = s.UpdateOAuthGrantRotate(ctx, r3)
	must(t, "UpdateOAuthGrantRotate (nil scopes)", err)
	if !slices.Equal(got.Scopes, []string{"issues:read"}) || !slices.Equal(got.AccessTokenIDs, []string{t2, t3}) {
		t.Errorf("after a rotation with nil scopes: scopes %v tokens %v, want [issues:read] [%s %s]", got.Scopes, got.AccessTokenIDs, t2, t3)
	}
	for _, h := range []string{h1, h2} {
		if _, current, err := s.GetOAuthGrantByRefresh(ctx, h); err != nil || current {
			t.Errorf("an older refresh hash: current=%v err=%v, want false nil", current, err)
		}
	}
}

// testOAuthGrantRotationRace: two refreshes with one token race; exactly one wins, and
// the grant's refresh token is the winner's.
func testOAuthGrantRotationRace(t *testing.T, b OAuthBackend) {
	ctx, s := t.Context(), b.OAuth
	at := baseTime()
	g := newGrant(uid("ws"), "alice", at)
	g.RefreshHash = sha(uid("refresh"))
	must(t, "CreateOAuthGrant", s.CreateOAuthGrant(ctx, g))
	news := make([]string, racers)
	tokens := make([]string, racers)
	for i := range news {
		news[i], tokens[i] = sha(uid("refresh")), auth.NewTokenID()
	}
	errs := race(func(i int) error {
		_, err := s.UpdateOAuthGrantRotate(ctx, store.OAuthRotation{GrantID: g.ID, OldRefreshHash: g.RefreshHash,
			NewRefreshHash: news[i], AccessTokenID: tokens[i], At: at.Add(time.Minute), ExpiresAt: g.ExpiresAt})
		return err
	})
	w := oneWinner(t, "concurrent UpdateOAuthGrantRotate", errs, store.ErrConflict)
	got, err := s.GetOAuthGrant(ctx, g.ID)
	must(t, "GetOAuthGrant", err)
	if got.RefreshHash != news[w] || !slices.Equal(got.AccessTokenIDs, []string{tokens[w]}) {
		t.Errorf("after the race: refresh %q tokens %v, want the winner's %q [%s]", got.RefreshHash, got.AccessTokenIDs, news[w], tokens[w])
	}
	for i, h := range news {
		if i == w {
			continue
		}
		if _, _, err := s.GetOAuthGrantByRefresh(ctx, h); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("loser %d's refresh hash: %v, want not_found", i, err)
		}
	}
}

func testOAuthGrantRevocation(t *testing.T, b OAuthBackend) {
	ctx, s := t.Context(), b.OAuth
	at := baseTime()
	g := newGrant(uid("ws"), "alice", at)
	g.RefreshHash = sha(uid("refresh"))
	must(t, "CreateOAuthGrant", s.CreateOAuthGrant(ctx, g))

	first := at.Add(time.Minute)
	got, err := s.UpdateOAuthGrantRevoked(ctx, g.ID, first)
	must(t, "UpdateOAuthGrantRevoked", err)
	want := g
	want.RevokedAt = &first
	sameValue(t, "UpdateOAuthGrantRevoked", normGrant(got), normGrant(want))
	got, err = s.UpdateOAuthGrantRevoked(ctx, g.ID, first.Add(time.Hour))
	must(t, "UpdateOAuthGrantRevoked again", err)
	if got.RevokedAt == nil || !got.RevokedAt.Equal(first) {
		t.Errorf("second revoke: RevokedAt %v, want the first %v", got.RevokedAt, first)
	}
	got, err = s.GetOAuthGrant(ctx, g.ID)
	must(t, "GetOAuthGrant of a revoked grant", err)
	sameValue(t, "GetOAuthGrant of a revoked grant", normGrant(got), normGrant(want))
	got, current, err := s.GetOAuthGrantByRefresh(ctx, g.RefreshHash)
	must(t, "GetOAuthGrantByRefresh of a revoked grant", err)
	if !current || got.RevokedAt == nil {
		t.Errorf("GetOAuthGrantByRefresh of a revoked grant: current=%v revoked=%v, want true and set", current, got.RevokedAt)
	}

	newHash := sha(uid("refresh"))
	_, err = s.UpdateOAuthGrantRotate(ctx, store.OAuthRotation{GrantID: g.ID, OldRefreshHash: g.RefreshHash,
		NewRefreshHash: newHash, At: at.Add(2 * time.Minute)})
	wantErr(t, "UpdateOAuthGrantRotate of a revoked grant", err, store.ErrConflict)
	if got, _ := s.GetOAuthGrant(ctx, g.ID); got.RefreshHash != g.RefreshHash {
		t.Errorf("refused rotation of a revoked grant moved its refresh hash to %q", got.RefreshHash)
	}
	_, err = s.UpdateOAuthGrantRevoked(ctx, uid("grant"), first)
	wantErr(t, "UpdateOAuthGrantRevoked of an unknown grant", err, store.ErrNotFound)
}

func testOAuthGrantExpiry(t *testing.T, b OAuthBackend) {
	ctx, s := t.Context(), b.OAuth
	at := baseTime()
	g := newGrant(uid("ws"), "alice", at.Add(-24*time.Hour))
	g.ExpiresAt = at
	g.RefreshHash = sha(uid("refresh"))
	must(t, "CreateOAuthGrant (expired)", s.CreateOAuthGrant(ctx, g))
	_, err := s.GetOAuthGrant(ctx, g.ID)
	wantErr(t, "GetOAuthGrant of an expired grant", err, store.ErrNotFound)
	_, _, err = s.GetOAuthGrantByRefresh(ctx, g.RefreshHash)
	wantErr(t, "GetOAuthGrantByRefresh of an expired grant", err, store.ErrNotFound)
	_, err = s.UpdateOAuthGrantRotate(ctx, store.OAuthRotation{GrantID: g.ID, OldRefreshHash: g.RefreshHash,
		NewRefreshHash: sha(uid("refresh")), At: at, ExpiresAt: at.Add(time.Hour)})
	wantErr(t, "UpdateOAuthGrantRotate of an expired grant", err, store.ErrNotFound)
	_, err = s.UpdateOAuthGrantRevoked(ctx, g.ID, at)
	wantErr(t, "UpdateOAuthGrantRevoked of an expired grant", err, store.ErrNotFound)
	list, err := s.ListOAuthGrants(ctx, g.WorkspaceID, "")
	must(t, "ListOAuthGrants", err)
	if len(list) != 0 {
		t.Errorf("ListOAuthGrants lists an expired grant: %+v", list)
	}

	// A grant that expires after a rotation: its rotated hash goes with it.
	live := newGrant(uid("ws"), "alice", at.Add(-time.Hour))
	live.RefreshHash = sha(uid("refresh"))
	must(t, "CreateOAuthGrant", s.CreateOAuthGrant(ctx, live))
	_, err = s.UpdateOAuthGrantRotate(ctx, store.OAuthRotation{GrantID: live.ID, OldRefreshHash: live.RefreshHash,
		NewRefreshHash: sha(uid("refresh")), At: at, ExpiresAt: at})
	must(t, "UpdateOAuthGrantRotate to a past expiry", err)
	_, _, err = s.GetOAuthGrantByRefresh(ctx, live.RefreshHash)
	wantErr(t, "GetOAuthGrantByRefresh of an expired grant's rotated hash", err, store.ErrNotFound)
}

func testOAuthListGrants(t *testing.T, b OAuthBackend) {
	ctx, s := t.Context(), b.OAuth
	at := baseTime()
	wsA, wsB := uid("ws"), uid("ws")
	alice, bob := uid("alice"), uid("bob")
	g1 := newGrant(wsA, alice, at)
	g2 := newGrant(wsA, bob, at.Add(time.Minute))
	g3 := newGrant(wsB, alice, at.Add(2*time.Minute))
	g4 := newGrant(wsA, alice, at.Add(3*time.Minute))
	// Same creation time as g4: the id breaks the tie, descending.
	g5 := newGrant(wsA, alice, at.Add(3*time.Minute))
	expired := newGrant(wsA, alice, at.Add(-time.Hour))
	expired.ExpiresAt = at
	for _, g := range []store.OAuthGrant{g1, g2, g3, g4, g5, expired} {
		must(t, "CreateOAuthGrant", s.CreateOAuthGrant(ctx, g))
	}
	_, err := s.UpdateOAuthGrantRevoked(ctx, g1.ID, at.Add(time.Hour))
	must(t, "UpdateOAuthGrantRevoked", err)
	g4g5 := []string{g5.ID, g4.ID}
	if g4.ID > g5.ID {
		g4g5 = []string{g4.ID, g5.ID}
	}
	mine := map[string]bool{g1.ID: true, g2.ID: true, g3.ID: true, g4.ID: true, g5.ID: true, expired.ID: true}
	for _, tc := range []struct {
		ws, user string
		want     []string
	}{
		{wsA, "", append(slices.Clone(g4g5), g2.ID, g1.ID)},
		{wsA, alice, append(slices.Clone(g4g5), g1.ID)},
		{wsA, bob, []string{g2.ID}},
		{wsB, "", []string{g3.ID}},
		{wsB, bob, []string{}},
		{"", alice, append(slices.Clone(g4g5), g3.ID, g1.ID)},
		{"", "", append(slices.Clone(g4g5), g3.ID, g2.ID, g1.ID)},
	} {
		list, err := s.ListOAuthGrants(ctx, tc.ws, tc.user)
		must(t, "ListOAuthGrants", err)
		if list == nil {
			t.Errorf("ListOAuthGrants(%q, %q) = nil, want a list", tc.ws, tc.user)
		}
		got := []string{}
		for _, g := range list {
			if mine[g.ID] {
				got = append(got, g.ID)
			}
			if g.ID == g1.ID && g.RevokedAt == nil {
				t.Errorf("listed revoked grant lacks RevokedAt: %+v", g)
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("ListOAuthGrants(ws %q, user %q) = %v, want newest first %v", tc.ws, tc.user, got, tc.want)
		}
	}
}

func testOAuthPolicy(t *testing.T, b OAuthBackend) {
	ctx, s := t.Context(), b.OAuth
	p, err := s.GetOAuthPolicy(ctx)
	must(t, "GetOAuthPolicy", err)
	if p.Mode != store.OAuthPolicyAny || len(p.Allowed) != 0 {
		t.Errorf("GetOAuthPolicy never set = %+v, want mode any and nothing allowed", p)
	}
	allow := store.OAuthPolicy{Mode: store.OAuthPolicyAllowlist,
		Allowed: []string{"https://claude.ai/oauth/mcp-oauth-client-metadata", uid("client")}}
	must(t, "UpdateOAuthPolicy", s.UpdateOAuthPolicy(ctx, allow))
	p, err = s.GetOAuthPolicy(ctx)
	must(t, "GetOAuthPolicy", err)
	sameValue(t, "GetOAuthPolicy after setting an allow-list", p, allow)

	wantErr(t, "UpdateOAuthPolicy with an unknown mode",
		s.UpdateOAuthPolicy(ctx, store.OAuthPolicy{Mode: "some"}), store.ErrInvalid)
	if p, _ := s.GetOAuthPolicy(ctx); !reflect.DeepEqual(p, allow) {
		t.Errorf("refused UpdateOAuthPolicy changed it to %+v", p)
	}

	must(t, "UpdateOAuthPolicy (any)", s.UpdateOAuthPolicy(ctx, store.OAuthPolicy{Mode: store.OAuthPolicyAny}))
	p, err = s.GetOAuthPolicy(ctx)
	must(t, "GetOAuthPolicy", err)
	if p.Mode != store.OAuthPolicyAny || len(p.Allowed) != 0 {
		t.Errorf("GetOAuthPolicy after going back to any = %+v", p)
	}
}

// memberKeys names members for comparing lists whose order is not pinned.
func memberKeys(ms []store.Member) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.WorkspaceID + "/" + m.UserID + "/" + string(m.Role) + "/" + m.Email
	}
	slices.Sort(out)
	return out
}

func testOAuthMemberEmail(t *testing.T, b OAuthBackend) {
	ctx, q, s := t.Context(), b.Queries, b.OAuth
	a, other := newWorkspace(t, q, "AAC"), newWorkspace(t, q, "OTH")
	tag := uid("x")
	mixed := "Alice." + tag + "@Example.COM"
	lower := "alice." + tag + "@example.com"

	m, err := q.UpdateMember(ctx, store.Member{WorkspaceID: a.ID, UserID: "alice", Role: store.RoleAdmin, Email: mixed, CreatedAt: baseTime()})
	must(t, "UpdateMember with an e-mail", err)
	if m.Email != lower {
		t.Errorf("UpdateMember returned e-mail %q, want it lower-cased %q", m.Email, lower)
	}
	got, err := q.GetMember(ctx, a.ID, "alice")
	must(t, "GetMember", err)
	if got.Email != lower || got.Role != store.RoleAdmin {
		t.Errorf("GetMember = %+v, want e-mail %q", got, lower)
	}
	_, err = q.UpdateMember(ctx, store.Member{WorkspaceID: other.ID, UserID: "al", Role: store.RoleViewer, Email: lower, CreatedAt: baseTime()})
	must(t, "UpdateMember in another workspace", err)
	_, err = q.UpdateMember(ctx, store.Member{WorkspaceID: a.ID, UserID: "nomail", Role: store.RoleMember, CreatedAt: baseTime()})
	must(t, "UpdateMember without an e-mail", err)

	wantBoth := []string{a.ID + "/alice/admin/" + lower, other.ID + "/al/viewer/" + lower}
	slices.Sort(wantBoth)
	for _, query := range []string{lower, mixed, "ALICE." + tag + "@EXAMPLE.COM"} {
		list, err := s.ListMembersByEmail(ctx, query)
		must(t, "ListMembersByEmail", err)
		if got := memberKeys(list); !slices.Equal(got, wantBoth) {
			t.Errorf("ListMembersByEmail(%q) = %v, want %v", query, got, wantBoth)
		}
	}
	for _, query := range []string{"", "alice." + tag + "@example.co", "lice." + tag + "@example.com"} {
		list, err := s.ListMembersByEmail(ctx, query)
		must(t, "ListMembersByEmail", err)
		if list == nil || len(list) != 0 {
			t.Errorf("ListMembersByEmail(%q) = %v, want an empty list", query, memberKeys(list))
		}
	}

	// Unicode upper case folds as strings.ToLower does.
	uni := "ÅSA." + tag + "@EXAMPLE.COM"
	_, err = q.UpdateMember(ctx, store.Member{WorkspaceID: a.ID, UserID: "asa", Role: store.RoleMember, Email: uni, CreatedAt: baseTime()})
	must(t, "UpdateMember (Unicode e-mail)", err)
	list, err := s.ListMembersByEmail(ctx, "åsa."+tag+"@example.com")
	must(t, "ListMembersByEmail (Unicode)", err)
	if len(list) != 1 || list[0].UserID != "asa" || list[0].Email != "åsa."+tag+"@example.com" {
		t.Errorf("ListMembersByEmail (Unicode) = %v", memberKeys(list))
	}

	// Replacing the record replaces the e-mail: the old one finds nothing, and a
	// GetMember right after (through any cache) sees the new one.
	newer := "alice.new." + tag + "@example.com"
	_, err = q.UpdateMember(ctx, store.Member{WorkspaceID: a.ID, UserID: "alice", Role: store.RoleAdmin, Email: newer, CreatedAt: baseTime()})
	must(t, "UpdateMember (new e-mail)", err)
	if got, err := q.GetMember(ctx, a.ID, "alice"); err != nil || got.Email != newer {
		t.Errorf("GetMember after the e-mail changed = %+v %v, want %q", got, err, newer)
	}
	list, err = s.ListMembersByEmail(ctx, lower)
	must(t, "ListMembersByEmail (old)", err)
	if got, want := memberKeys(list), []string{other.ID + "/al/viewer/" + lower}; !slices.Equal(got, want) {
		t.Errorf("ListMembersByEmail(old e-mail) = %v, want %v", got, want)
	}
	_, err = q.UpdateMember(ctx, store.Member{WorkspaceID: a.ID, UserID: "alice", Role: store.RoleViewer, CreatedAt: baseTime()})
	must(t, "UpdateMember (no e-mail)", err)
	if got, err := q.GetMember(ctx, a.ID, "alice"); err != nil || got.Email != "" || got.Role != store.RoleViewer {
		t.Errorf("GetMember after the e-mail was cleared = %+v %v", got, err)
	}
	if list, _ := s.ListMembersByEmail(ctx, newer); len(list) != 0 {
		t.Errorf("ListMembersByEmail of a cleared e-mail = %v", memberKeys(list))
	}

	must(t, "DeleteMember", q.DeleteMember(ctx, other.ID, "al"))
	if list, _ := s.ListMembersByEmail(ctx, lower); len(list) != 0 {
		t.Errorf("ListMembersByEmail finds a deleted member: %v", memberKeys(list))
	}
}

func testOAuthMembersAcrossWorkspaces(t *testing.T, b OAuthBackend) {
	ctx, q, s := t.Context(), b.Queries, b.OAuth
	a, c, empty := newWorkspace(t, q, "AAC"), newWorkspace(t, q, "CCC"), newWorkspace(t, q, "EMP")
	alice, bob := uid("alice"), uid("bob")
	for _, m := range []store.Member{
		{WorkspaceID: a.ID, UserID: alice, Role: store.RoleAdmin, Email: alice + "@example.com"},
		{WorkspaceID: a.ID, UserID: bob, Role: store.RoleViewer},
		{WorkspaceID: c.ID, UserID: alice, Role: store.RoleMember},
	} {
		m.CreatedAt = baseTime()
		_, err := q.UpdateMember(ctx, m)
		must(t, "UpdateMember", err)
	}
	for _, tc := range []struct {
		what string
		list func() ([]store.Member, error)
		want []string
	}{
		{"ListMembersOfUser(alice)", func() ([]store.Member, error) { return s.ListMembersOfUser(ctx, alice) },
			[]string{a.ID + "/" + alice + "/admin/" + alice + "@example.com", c.ID + "/" + alice + "/member/"}},
		{"ListMembersOfUser(bob)", func() ([]store.Member, error) { return s.ListMembersOfUser(ctx, bob) },
			[]string{a.ID + "/" + bob + "/viewer/"}},
		{"ListMembersOfUser(nobody)", func() ([]store.Member, error) { return s.ListMembersOfUser(ctx, uid("nobody")) },
			[]string{}},
		{"ListMembers(a)", func() ([]store.Member, error) { return s.ListMembers(ctx, a.ID) },
			[]string{a.ID + "/" + alice + "/admin/" + alice + "@example.com", a.ID + "/" + bob + "/viewer/"}},
		{"ListMembers(c)", func() ([]store.Member, error) { return s.ListMembers(ctx, c.ID) },
			[]string{c.ID + "/" + alice + "/member/"}},
		{"ListMembers(empty)", func() ([]store.Member, error) { return s.ListMembers(ctx, empty.ID) }, []string{}},
	} {
		list, err := tc.list()
		must(t, tc.what, err)
		slices.Sort(tc.want)
		if got := memberKeys(list); list == nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s = %v (nil %v), want %v", tc.what, got, list == nil, tc.want)
		}
		for _, m := range list {
			if m.CreatedAt.IsZero() {
				t.Errorf("%s: member %s/%s lacks created_at", tc.what, m.WorkspaceID, m.UserID)
			}
		}
	}

	must(t, "DeleteMember", q.DeleteMember(ctx, c.ID, alice))
	list, err := s.ListMembersOfUser(ctx, alice)
	must(t, "ListMembersOfUser after delete", err)
	if got, want := memberKeys(list), []string{a.ID + "/" + alice + "/admin/" + alice + "@example.com"}; !slices.Equal(got, want) {
		t.Errorf("ListMembersOfUser after delete = %v, want %v", got, want)
	}
}

func testOAuthTokens(t *testing.T, b OAuthBackend) {
	ctx, ts := t.Context(), b.Tokens
	ws, at := uid("ws"), baseTime()
	mk := func(clientID, grantID string, created time.Time) auth.TokenRecord {
		id := auth.NewTokenID()
		return auth.TokenRecord{Hash: sha(id + "-secret"), TokenID: id, Name: "oauth " + clientID, WorkspaceID: ws, UserID: "alice",
			Scopes: []string{"issues:read"}, CreatedAt: created, ExpiresAt: created.Add(time.Hour), ClientID: clientID, GrantID: grantID}
	}
	oauthTok := mk("https://client.example/meta.json", uid("grant"), at.Add(time.Minute))
	personal := mk("", "", at)
	for _, r := range []auth.TokenRecord{personal, oauthTok} {
		must(t, "CreateToken", ts.CreateToken(ctx, r))
	}
	for _, r := range []auth.TokenRecord{personal, oauthTok} {
		got, err := ts.GetTokenByHash(ctx, r.Hash)
		must(t, "GetTokenByHash", err)
		sameValue(t, "GetTokenByHash", normToken(got), normToken(r))
	}
	list, err := ts.ListTokens(ctx, ws)
	must(t, "ListTokens", err)
	if len(list) != 2 {
		t.Fatalf("ListTokens = %d tokens, want 2", len(list))
	}
	sameValue(t, "ListTokens[0] (newest)", normToken(list[0]), normToken(oauthTok))
	sameValue(t, "ListTokens[1]", normToken(list[1]), normToken(personal))

	revokedAt := at.Add(time.Hour)
	got, err := ts.UpdateTokenRevoked(ctx, oauthTok.TokenID, revokedAt)
	must(t, "UpdateTokenRevoked", err)
	want := oauthTok
	want.RevokedAt = &revokedAt
	sameValue(t, "UpdateTokenRevoked", normToken(got), normToken(want))
}
