package memory

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/aacworkflow/aacmcp/shared/store"
)

var _ store.OAuthStore = (*Store)(nil)

// oauth is the authorization server's state. Expired records stay in the maps
// until a create reuses their key; every reader leaves them out, as the interface
// requires of a backend that drops them lazily.
type oauth struct {
	clients map[string]store.OAuthClient
	pending map[string]store.OAuthPending
	codes   map[string]store.OAuthCode  // by hash
	grants  map[string]store.OAuthGrant // by id
	// rotated maps a refresh hash a grant has rotated away from to that grant.
	rotated map[string]string
	// assertions maps a used client assertion's hash to when it may be used again.
	assertions map[string]time.Time
	policy     *store.OAuthPolicy
}

func newOAuth() oauth {
	return oauth{clients: map[string]store.OAuthClient{}, pending: map[string]store.OAuthPending{},
		codes: map[string]store.OAuthCode{}, grants: map[string]store.OAuthGrant{}, rotated: map[string]string{},
		assertions: map[string]time.Time{}}
}

// The copies that keep callers from sharing the store's slices.

func copyClient(c store.OAuthClient) store.OAuthClient {
	c.RedirectURIs, c.GrantTypes = slices.Clone(c.RedirectURIs), slices.Clone(c.GrantTypes)
	return c
}

func copyPending(p store.OAuthPending) store.OAuthPending {
	p.Scopes, p.Accounts = cloneOrEmpty(p.Scopes), slices.Clone(p.Accounts)
	if p.Accounts == nil {
		p.Accounts = []store.OAuthAccount{}
	}
	return p
}

func copyCode(c store.OAuthCode) store.OAuthCode {
	c.Scopes = cloneOrEmpty(c.Scopes)
	if c.UsedAt != nil {
		at := *c.UsedAt
		c.UsedAt = &at
	}
	return c
}

func copyGrant(g store.OAuthGrant) store.OAuthGrant {
	g.Scopes, g.AccessTokenIDs = cloneOrEmpty(g.Scopes), cloneOrEmpty(g.AccessTokenIDs)
	if g.RevokedAt != nil {
		at := *g.RevokedAt
		g.RevokedAt = &at
	}
	return g
}

func cloneOrEmpty(v []string) []string {
	if v == nil {
		return []string{}
	}
	return slices.Clone(v)
}

// ---- clients ----

// clientLive reports whether c has been used within store.OAuthClientLapse.
func (s *Store) clientLive(c store.OAuthClient) bool {
	return c.LastUsedAt.After(s.now().Add(-store.OAuthClientLapse))
}

// CreateOAuthClient implements store.OAuthStore. LastUsedAt defaults to CreatedAt,
// which defaults to now; a lapsed client's id may be registered again.
func (s *Store) CreateOAuthClient(_ context.Context, c store.OAuthClient) error {
	if c.ClientID == "" {
		return store.Invalid("client id is required")
	}
	c.CreatedAt, c.LastUsedAt = store.UseTimes(s.now(), c.CreatedAt, c.LastUsedAt)
	s.mu.Lock()
	defer s.mu.Unlock()
	return putNew(s.oauth.clients, c.ClientID, copyClient(c), s.clientLive, "client")
}

// GetOAuthClient implements store.OAuthStore; a lapsed client is not_found.
func (s *Store) GetOAuthClient(_ context.Context, clientID string) (store.OAuthClient, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := liveIn(s.oauth.clients, clientID, s.clientLive)
	if !ok {
		return store.OAuthClient{}, notFound("client")
	}
	return copyClient(c), nil
}

// UpdateOAuthClientUsed implements store.OAuthStore.
func (s *Store) UpdateOAuthClientUsed(_ context.Context, clientID string, at time.Time) error {
	at = s.orNow(at)
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := liveIn(s.oauth.clients, clientID, s.clientLive)
	if !ok {
		return notFound("client")
	}
	if at.After(c.LastUsedAt) {
		c.LastUsedAt = at
		s.oauth.clients[clientID] = c
	}
	return nil
}

// DeleteOAuthClient implements store.OAuthStore; an absent or lapsed client is
// not_found.
func (s *Store) DeleteOAuthClient(_ context.Context, clientID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := liveIn(s.oauth.clients, clientID, s.clientLive)
	if !ok {
		return notFound("client")
	}
	delete(s.oauth.clients, clientID)
	return nil
}

// ListOAuthClients implements store.OAuthStore: newest first, lapsed ones left out.
func (s *Store) ListOAuthClients(context.Context) ([]store.OAuthClient, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []store.OAuthClient{}
	for _, c := range s.oauth.clients {
		if s.clientLive(c) {
			out = append(out, copyClient(c))
		}
	}
	slices.SortFunc(out, func(a, b store.OAuthClient) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), strings.Compare(b.ClientID, a.ClientID))
	})
	return out, nil
}

// ---- pending authorizations ----

func (s *Store) live(expires time.Time) bool { return expires.After(s.now()) }

func (s *Store) pendingLive(p store.OAuthPending) bool { return s.live(p.ExpiresAt) }
func (s *Store) codeLive(c store.OAuthCode) bool       { return s.live(c.ExpiresAt) }
func (s *Store) grantLive(g store.OAuthGrant) bool     { return s.live(g.ExpiresAt) }

// A record in the OAuth maps counts only while live says so (a client until it
// lapses, the others until they expire): one that is not is absent, though still in
// the map, and its key may be taken again.

// liveIn returns m's record under k if it is live.
func liveIn[T any](m map[string]T, k string, live func(T) bool) (T, bool) {
	v, ok := m[k]
	return v, ok && live(v)
}

// putNew stores v under k unless a live record holds k (already_exists: "<what>
// already exists").
func putNew[T any](m map[string]T, k string, v T, live func(T) bool, what string) error {
	if _, ok := liveIn(m, k, live); ok {
		return store.Errorf(store.ErrAlreadyExists, "%s already exists", what)
	}
	m[k] = v
	return nil
}

func (s *Store) checkPending(p *store.OAuthPending) error {
	if p.ID == "" {
		return store.Invalid("pending authorization id is required")
	}
	if p.ExpiresAt.IsZero() {
		return store.Invalid("pending authorization needs an expiry")
	}
	p.CreatedAt, p.ExpiresAt = s.orNow(p.CreatedAt), p.ExpiresAt.UTC()
	return nil
}

// CreateOAuthPending implements store.OAuthStore.
func (s *Store) CreateOAuthPending(_ context.Context, p store.OAuthPending) error {
	if err := s.checkPending(&p); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return putNew(s.oauth.pending, p.ID, copyPending(p), s.pendingLive, "pending authorization")
}

// GetOAuthPending implements store.OAuthStore.
func (s *Store) GetOAuthPending(_ context.Context, id string) (store.OAuthPending, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := liveIn(s.oauth.pending, id, s.pendingLive)
	if !ok {
		return store.OAuthPending{}, notFound("pending authorization")
	}
	return copyPending(p), nil
}

// UpdateOAuthPending implements store.OAuthStore.
func (s *Store) UpdateOAuthPending(_ context.Context, p store.OAuthPending) error {
	if err := s.checkPending(&p); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := liveIn(s.oauth.pending, p.ID, s.pendingLive); !ok {
		return notFound("pending authorization")
	}
	s.oauth.pending[p.ID] = copyPending(p)
	return nil
}

// DeleteOAuthPending implements store.OAuthStore. It runs under the store's one
// lock, so of concurrent callers only the first finds the record.
func (s *Store) DeleteOAuthPending(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := liveIn(s.oauth.pending, id, s.pendingLive)
	if !ok {
		return notFound("pending authorization")
	}
	delete(s.oauth.pending, id)
	return nil
}

// ---- codes ----

// CreateOAuthCode implements store.OAuthStore.
func (s *Store) CreateOAuthCode(_ context.Context, c store.OAuthCode) error {
	if c.Hash == "" || c.ExpiresAt.IsZero() {
		return store.Invalid("authorization code needs a hash and an expiry")
	}
	c.CreatedAt, c.ExpiresAt = s.orNow(c.CreatedAt), c.ExpiresAt.UTC()
	s.mu.Lock()
	defer s.mu.Unlock()
	return putNew(s.oauth.codes, c.Hash, copyCode(c), s.codeLive, "authorization code")
}

// ConsumeOAuthCode implements store.OAuthStore: under the one lock, exactly one of
// concurrent redemptions sees UsedAt nil. The first redemption's time is kept.
func (s *Store) ConsumeOAuthCode(_ context.Context, hash string, at time.Time) (store.OAuthCode, error) {
	at = s.orNow(at)
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := liveIn(s.oauth.codes, hash, s.codeLive)
	if !ok {
		return store.OAuthCode{}, notFound("authorization code")
	}
	out := copyCode(c)
	if c.UsedAt == nil {
		c.UsedAt = &at
		s.oauth.codes[hash] = c
	}
	return out, nil
}

// ---- client assertions ----

// assertionSweep is the map size past which a create first drops expired
// assertions: unlike the other records, every one of them is written once and
// never read again, so left alone they would only grow.
const assertionSweep = 1024

// CreateOAuthAssertion implements store.OAuthStore.
func (s *Store) CreateOAuthAssertion(_ context.Context, hash string, expiresAt time.Time) error {
	if hash == "" || expiresAt.IsZero() {
		return store.Invalid("client assertion needs a hash and an expiry")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if exp, ok := s.oauth.assertions[hash]; ok && s.live(exp) {
		return store.Errorf(store.ErrAlreadyExists, "client assertion already exists")
	}
	if len(s.oauth.assertions) >= assertionSweep {
		for h, exp := range s.oauth.assertions {
			if !s.live(exp) {
				delete(s.oauth.assertions, h)
			}
		}
	}
	s.oauth.assertions[hash] = expiresAt.UTC()
	return nil
}

// ---- grants ----

// refreshHolder is the live grant whose current refresh hash is h, other than
// except; "" for none.
func (s *Store) refreshHolder(h, except string) string {
	for id, g := range s.oauth.grants {
		if id != except && g.RefreshHash == h && s.grantLive(g) {
			return id
		}
	}
	return ""
}

// CreateOAuthGrant implements store.OAuthStore. LastUsedAt defaults to CreatedAt,
// which defaults to now. A refresh hash held by another live grant is conflict.
func (s *Store) CreateOAuthGrant(_ context.Context, g store.OAuthGrant) error {
	if g.ID == "" || g.ExpiresAt.IsZero() {
		return store.Invalid("grant needs an id and an expiry")
	}
	g.CreatedAt, g.LastUsedAt = store.UseTimes(s.now(), g.CreatedAt, g.LastUsedAt)
	g.ExpiresAt = g.ExpiresAt.UTC()
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.liveGrant(g.ID); ok {
		return store.Errorf(store.ErrAlreadyExists, "grant already exists")
	}
	if g.RefreshHash != "" && s.refreshHolder(g.RefreshHash, g.ID) != "" {
		return store.Errorf(store.ErrAlreadyExists, "refresh token already belongs to a grant")
	}
	// An expired grant under this id goes with its rotated hashes: they belonged
	// to another grant.
	for h, id := range s.oauth.rotated {
		if id == g.ID {
			delete(s.oauth.rotated, h)
		}
	}
	s.oauth.grants[g.ID] = copyGrant(g)
	return nil
}

// GetOAuthGrant implements store.OAuthStore. A revoked grant is returned (with
// RevokedAt) until it expires.
func (s *Store) GetOAuthGrant(_ context.Context, id string) (store.OAuthGrant, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.liveGrant(id)
	if !ok {
		return store.OAuthGrant{}, notFound("grant")
	}
	return copyGrant(g), nil
}

func (s *Store) liveGrant(id string) (store.OAuthGrant, bool) {
	return liveIn(s.oauth.grants, id, s.grantLive)
}

// GetOAuthGrantByRefresh implements store.OAuthStore.
func (s *Store) GetOAuthGrantByRefresh(_ context.Context, refreshHash string) (store.OAuthGrant, bool, error) {
	if refreshHash == "" { // the refresh hash of a grant whose code is not redeemed yet
		return store.OAuthGrant{}, false, notFound("grant")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if id := s.refreshHolder(refreshHash, ""); id != "" {
		return copyGrant(s.oauth.grants[id]), true, nil
	}
	if id, ok := s.oauth.rotated[refreshHash]; ok {
		if g, ok := s.liveGrant(id); ok {
			return copyGrant(g), false, nil
		}
	}
	return store.OAuthGrant{}, false, notFound("grant")
}

// UpdateOAuthGrantRotate implements store.OAuthStore (store.OAuthRotation.Apply
// says what a rotation changes). The check and the write share the one lock, so of concurrent rotations
// from the same hash exactly one wins.
func (s *Store) UpdateOAuthGrantRotate(_ context.Context, r store.OAuthRotation) (store.OAuthGrant, error) {
	if err := r.Check(); err != nil {
		return store.OAuthGrant{}, err
	}
	r.At = s.orNow(r.At)
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.liveGrant(r.GrantID)
	if !ok {
		return store.OAuthGrant{}, notFound("grant")
	}
	g, err := r.Apply(copyGrant(cur))
	if err != nil {
		return store.OAuthGrant{}, err
	}
	if _, ok := s.oauth.rotated[r.OldRefreshHash]; ok && r.OldRefreshHash != "" {
		return store.OAuthGrant{}, store.Errorf(store.ErrConflict, "refresh token was rotated already")
	}
	if s.refreshHolder(r.NewRefreshHash, g.ID) != "" {
		return store.OAuthGrant{}, store.Errorf(store.ErrConflict, "refresh token already belongs to a grant")
	}
	// A hash that was current once may never be current again.
	if _, ok := s.oauth.rotated[r.NewRefreshHash]; ok {
		return store.OAuthGrant{}, store.Errorf(store.ErrConflict, "refresh token was rotated already")
	}
	if r.OldRefreshHash != "" {
		s.oauth.rotated[r.OldRefreshHash] = g.ID
	}
	s.oauth.grants[g.ID] = g
	return copyGrant(g), nil
}

// UpdateOAuthGrantRevoked implements store.OAuthStore; the first revocation's
// time is kept.
func (s *Store) UpdateOAuthGrantRevoked(_ context.Context, id string, at time.Time) (store.OAuthGrant, error) {
	at = s.orNow(at)
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.liveGrant(id)
	if !ok {
		return store.OAuthGrant{}, notFound("grant")
	}
	if g.RevokedAt == nil {
		g = copyGrant(g)
		g.RevokedAt = &at
		s.oauth.grants[id] = g
	}
	return copyGrant(g), nil
}

// ListOAuthGrants implements store.OAuthStore: newest first (created_at, then id),
// revoked grants included until they expire.
func (s *Store) ListOAuthGrants(_ context.Context, ws, user string) ([]store.OAuthGrant, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []store.OAuthGrant{}
	for _, g := range s.oauth.grants {
		if s.grantLive(g) && (ws == "" || g.WorkspaceID == ws) && (user == "" || g.UserID == user) {
			out = append(out, copyGrant(g))
		}
	}
	slices.SortFunc(out, func(a, b store.OAuthGrant) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), strings.Compare(b.ID, a.ID))
	})
	return out, nil
}

// ---- policy ----

// GetOAuthPolicy implements store.OAuthStore.
func (s *Store) GetOAuthPolicy(context.Context) (store.OAuthPolicy, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.oauth.policy == nil {
		return store.OAuthPolicy{Mode: store.OAuthPolicyAny, Allowed: []string{}}, nil
	}
	return store.OAuthPolicy{Mode: s.oauth.policy.Mode, Allowed: cloneOrEmpty(s.oauth.policy.Allowed)}, nil
}

// UpdateOAuthPolicy implements store.OAuthStore.
func (s *Store) UpdateOAuthPolicy(_ context.Context, p store.OAuthPolicy) error {
	if p.Mode != store.OAuthPolicyAny && p.Mode != store.OAuthPolicyAllowlist {
		return store.Errorf(store.ErrInvalid, "policy mode must be %q or %q", store.OAuthPolicyAny, store.OAuthPolicyAllowlist)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.oauth.policy = &store.OAuthPolicy{Mode: p.Mode, Allowed: cloneOrEmpty(p.Allowed)}
	return nil
}

// ---- members across workspaces ----

// members lists the member records keep selects, ordered by workspace then user.
func (s *Store) members(keep func(store.Member) bool) []store.Member {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []store.Member{}
	for _, w := range s.workspaces {
		for _, m := range w.members {
			if keep(m) {
				out = append(out, m)
			}
		}
	}
	slices.SortFunc(out, func(a, b store.Member) int {
		return cmp.Or(strings.Compare(a.WorkspaceID, b.WorkspaceID), strings.Compare(a.UserID, b.UserID))
	})
	return out
}

// ListMembersByEmail implements store.OAuthStore. "" matches nobody (members
// without an e-mail hold "").
func (s *Store) ListMembersByEmail(_ context.Context, email string) ([]store.Member, error) {
	if email == "" {
		return []store.Member{}, nil
	}
	email = strings.ToLower(email)
	return s.members(func(m store.Member) bool { return m.Email == email }), nil
}

// ListMembersOfUser implements store.OAuthStore, ordered by workspace.
func (s *Store) ListMembersOfUser(_ context.Context, user string) ([]store.Member, error) {
	return s.members(func(m store.Member) bool { return m.UserID == user }), nil
}

// ListMembers implements store.OAuthStore, ordered by user.
func (s *Store) ListMembers(_ context.Context, ws string) ([]store.Member, error) {
	return s.members(func(m store.Member) bool { return m.WorkspaceID == ws }), nil
}

// OAuthRecords counts the records of each OAuth table and of the tokens table,
// expired ones included, by the SQLite backend's table names: what a test compares
// before and after a request that must change nothing.
func (s *Store) OAuthRecords() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	policy := 0
	if s.oauth.policy != nil {
		policy = 1
	}
	return map[string]int{
		"oauth_clients": len(s.oauth.clients), "oauth_pending": len(s.oauth.pending),
		"oauth_codes": len(s.oauth.codes), "oauth_grants": len(s.oauth.grants),
		"oauth_rotated": len(s.oauth.rotated), "oauth_policy": policy, "tokens": len(s.tokens),
	}
}
