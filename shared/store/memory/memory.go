// Package memory is an in-memory store backend: the same contract as the SQLite and
// DynamoDB backends (it runs the storetest conformance suite), with no files, no
// emulator and no background work. It backs unit tests of the layers above the
// store (guard, catalog), so those tests exercise the contract rather than one
// engine's quirks.
//
// One mutex guards everything: the backend is for tests and small tools, and a
// single lock makes every method trivially atomic, which is what the conformance
// suite's concurrency tests check. Values are copied on the way in and out, so a
// caller that mutates a returned slice cannot change what the store holds.
package memory

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// Retention of rows that only answer repeats, as in the other backends.
const (
	TombstoneTTL   = 25 * time.Hour
	IdempotencyTTL = 24 * time.Hour
)

const dateLayout = "2006-01-02"

// maxCallerID bounds caller-chosen comment and run ids, as the other backends do.
const maxCallerID = 128

var (
	_ store.Queries   = (*Store)(nil)
	_ auth.TokenStore = (*Store)(nil)
)

// Store is the in-memory backend. The zero value is not usable; call New.
type Store struct {
	now func() time.Time

	mu         sync.Mutex
	workspaces map[string]*workspace
	tokens     map[string]auth.TokenRecord // by hash
	tokenIDs   map[string]string           // token id -> hash
	idem       map[store.IdempotencyKey]store.IdempotencyRecord
	rates      map[rateKey]int64
	usage      map[usageKey]store.UsageRow
	events     map[eventKey]bool           // usage event ids already counted
	nonces     map[nonceKey]time.Time      // used confirmation nonces -> expiry
	approvals  map[nonceKey]store.Approval // by workspace and binding
	oauth      oauth
}

// Option configures a Store.
type Option func(*Store)

// WithClock sets the clock used for times a caller leaves zero and for expiry.
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// New returns an empty store.
func New(opts ...Option) *Store {
	s := &Store{
		now:        time.Now,
		workspaces: map[string]*workspace{},
		tokens:     map[string]auth.TokenRecord{},
		tokenIDs:   map[string]string{},
		idem:       map[store.IdempotencyKey]store.IdempotencyRecord{},
		rates:      map[rateKey]int64{},
		usage:      map[usageKey]store.UsageRow{},
		events:     map[eventKey]bool{},
		nonces:     map[nonceKey]time.Time{},
		approvals:  map[nonceKey]store.Approval{},
		oauth:      newOAuth(),
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

type workspace struct {
	w        store.Workspace
	seq      int64
	members  map[string]store.Member
	agents   map[string]store.Agent
	issues   map[string]store.Issue // by id
	seqs     map[string]int64       // issue id -> seq
	bySeq    map[int64]string       // seq -> issue id
	comments map[string]store.Comment
	tombs    map[tombKey]tomb
	runs     map[string]store.AutopilotRun
	// confirmation is the destructive-confirmation policy; "" reads as flag.
	confirmation string
}

type tombKey struct{ kind, id string }

type tomb struct {
	seq     int64 // issues only
	owner   string
	deleted time.Time
	expires time.Time
}

type usageKey struct{ ws, date, tool string }

type eventKey struct{ ws, id string }

type rateKey struct {
	ws, key string
	start   int64
}

func notFound(what string) error { return store.NotFound(what) }

func (s *Store) orNow(t time.Time) time.Time {
	if t.IsZero() {
		return s.now().UTC()
	}
	return t.UTC()
}

// ---- workspaces, members, agents ----

func (s *Store) GetWorkspace(_ context.Context, ws string) (store.Workspace, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.workspaces[ws]
	if !ok {
		return store.Workspace{}, notFound("workspace")
	}
	return w.w, nil
}

func (s *Store) CreateWorkspace(_ context.Context, w store.Workspace) (store.Workspace, error) {
	if err := store.CheckWorkspace(w); err != nil {
		return store.Workspace{}, err
	}
	w.CreatedAt = s.orNow(w.CreatedAt)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.workspaces[w.ID]; ok {
		return store.Workspace{}, store.Errorf(store.ErrAlreadyExists, "workspace %q already exists", w.ID)
	}
	s.workspaces[w.ID] = &workspace{
		w:        w,
		members:  map[string]store.Member{},
		agents:   map[string]store.Agent{},
		issues:   map[string]store.Issue{},
		seqs:     map[string]int64{},
		bySeq:    map[int64]string{},
		comments: map[string]store.Comment{},
		tombs:    map[tombKey]tomb{},
		runs:     map[string]store.AutopilotRun{},
	}
	return w, nil
}

func (s *Store) GetMember(_ context.Context, ws, user string) (store.Member, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w, ok := s.workspaces[ws]; ok {
		if m, ok := w.members[user]; ok {
			return m, nil
		}
	}
	return store.Member{}, notFound("member")
}

func (s *Store) UpdateMember(_ context.Context, m store.Member) (store.Member, error) {
	if m.UserID == "" {
		return store.Member{}, store.Invalid("user id is required")
	}
	if !m.Role.Valid() {
		return store.Member{}, store.Invalid("role must be viewer, member or admin")
	}
	m.CreatedAt = s.orNow(m.CreatedAt)
	m.Email = strings.ToLower(m.Email)
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.workspaces[m.WorkspaceID]
	if !ok {
		return store.Member{}, notFound("workspace")
	}
	if old, ok := w.members[m.UserID]; ok {
		m.CreatedAt = old.CreatedAt // an update keeps when the membership began
	}
	w.members[m.UserID] = m
	return m, nil
}

func (s *Store) DeleteMember(_ context.Context, ws, user string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.workspaces[ws]
	if !ok {
		return notFound("member")
	}
	if _, ok := w.members[user]; !ok {
		return notFound("member")
	}
	delete(w.members, user)
	return nil
}

func (s *Store) GetAgent(_ context.Context, ws, agent string) (store.Agent, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w, ok := s.workspaces[ws]; ok {
		if a, ok := w.agents[agent]; ok {
			return a, nil
		}
	}
	return store.Agent{}, notFound("agent")
}

func (s *Store) ListAgents(_ context.Context, ws string) ([]store.Agent, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []store.Agent{}
	if w, ok := s.workspaces[ws]; ok {
		for _, a := range w.agents {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(a, b store.Agent) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

func (s *Store) CreateAgent(_ context.Context, a store.Agent) (store.Agent, error) {
	if a.ID == "" {
		return store.Agent{}, store.Invalid("agent id is required")
	}
	a.CreatedAt = s.orNow(a.CreatedAt)
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.workspaces[a.WorkspaceID]
	if !ok {
		return store.Agent{}, notFound("workspace")
	}
	if old, ok := w.agents[a.ID]; ok {
		a.CreatedAt = old.CreatedAt // re-creating renames
	}
	w.agents[a.ID] = a
	return a, nil
}

// ---- tokens ----

func cloneToken(t auth.TokenRecord) auth.TokenRecord {
	t.Scopes = slices.Clone(t.Scopes)
	if t.Scopes == nil {
		t.Scopes = []string{}
	}
	if t.RevokedAt != nil {
		at := t.RevokedAt.UTC()
		t.RevokedAt = &at
	}
	return t
}

func (s *Store) CreateToken(_ context.Context, t auth.TokenRecord) error {
	if t.Hash == "" || t.TokenID == "" {
		return store.Invalid("token needs a hash and an id")
	}
	t = cloneToken(t)
	t.CreatedAt = s.orNow(t.CreatedAt)
	if !t.ExpiresAt.IsZero() { // zero stays zero: the verifier treats it as expired
		t.ExpiresAt = t.ExpiresAt.UTC()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, dupHash := s.tokens[t.Hash]
	_, dupID := s.tokenIDs[t.TokenID]
	if dupHash || dupID {
		return store.Errorf(store.ErrAlreadyExists, "token already exists")
	}
	s.tokens[t.Hash] = t
	s.tokenIDs[t.TokenID] = t.Hash
	return nil
}

func (s *Store) GetTokenByHash(_ context.Context, hash string) (auth.TokenRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tokens[hash]
	if !ok {
		return auth.TokenRecord{}, notFound("token")
	}
	return cloneToken(t), nil
}

func (s *Store) ListTokens(_ context.Context, ws string) ([]auth.TokenRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []auth.TokenRecord{}
	for _, t := range s.tokens {
		if ws == "" || t.WorkspaceID == ws {
			out = append(out, cloneToken(t))
		}
	}
	slices.SortFunc(out, func(a, b auth.TokenRecord) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.TokenID, a.TokenID)
	})
	return out, nil
}

func (s *Store) UpdateTokenRevoked(_ context.Context, tokenID string, at time.Time) (auth.TokenRecord, error) {
	at = s.orNow(at)
	s.mu.Lock()
	defer s.mu.Unlock()
	hash, ok := s.tokenIDs[tokenID]
	if !ok {
		return auth.TokenRecord{}, notFound("token")
	}
	t := s.tokens[hash]
	if t.RevokedAt == nil { // a second revoke keeps the first time
		t.RevokedAt = &at
		s.tokens[hash] = t
	}
	return cloneToken(t), nil
}

// ---- autopilot runs ----

func (s *Store) CreateAutopilotRun(_ context.Context, ws string, r store.AutopilotRun) (store.AutopilotRun, error) {
	if len(r.ID) > maxCallerID {
		return store.AutopilotRun{}, store.Invalid("run id is too long")
	}
	r = r.WithDefaults(s.now())
	s.mu.Lock()
	defer s.mu.Unlock()
	w, is, err := s.issue(ws, r.IssueID)
	if err != nil {
		return store.AutopilotRun{}, err
	}
	if _, ok := w.runs[r.ID]; ok {
		return store.AutopilotRun{}, store.Errorf(store.ErrAlreadyExists, "run id already used")
	}
	r.IssueID, r.IssueKey = is.ID, is.Key
	w.runs[r.ID] = r
	return r, nil
}

func (s *Store) UpdateAutopilotRun(_ context.Context, ws string, r store.AutopilotRun) (store.AutopilotRun, error) {
	updated := s.orNow(r.UpdatedAt)
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.workspaces[ws]
	if !ok {
		return store.AutopilotRun{}, notFound("autopilot run")
	}
	cur, ok := w.runs[r.ID]
	if !ok {
		return store.AutopilotRun{}, notFound("autopilot run")
	}
	cur.Status, cur.Attempts, cur.Error, cur.UpdatedAt = r.Status, r.Attempts, r.Error, updated
	w.runs[r.ID] = cur
	return cur, nil
}

// ---- usage and rate counters ----

func validDate(d string) bool {
	_, err := time.Parse(dateLayout, d)
	return err == nil
}

func (s *Store) UpdateUsage(_ context.Context, u store.UsageIncrement) error {
	denied, errs, err := u.Counts()
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if u.EventID != "" {
		ek := eventKey{u.WorkspaceID, u.EventID}
		if s.events[ek] {
			return nil // a retried call counts once
		}
		s.events[ek] = true
	}
	k := usageKey{u.WorkspaceID, u.Date, u.Tool}
	row := s.usage[k]
	row.Date, row.Tool = u.Date, u.Tool
	row.Calls++
	row.Denied += denied
	row.Errors += errs
	s.usage[k] = row
	return nil
}

func (s *Store) ListUsage(_ context.Context, ws, from, to string) ([]store.UsageRow, error) {
	if !validDate(from) || !validDate(to) {
		return nil, store.Invalid("dates must be YYYY-MM-DD")
	}
	if from > to {
		return nil, store.Invalid("from must not be after to")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []store.UsageRow{}
	for k, r := range s.usage {
		if k.ws == ws && k.date >= from && k.date <= to {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b store.UsageRow) int {
		if c := strings.Compare(a.Date, b.Date); c != 0 {
			return c
		}
		return strings.Compare(a.Tool, b.Tool)
	})
	return out, nil
}

func (s *Store) UpdateRateCounter(_ context.Context, ws, key string, windowStart time.Time, window time.Duration) (int64, error) {
	if window <= 0 {
		return 0, store.Invalid("rate window must be positive")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := rateKey{ws, key, windowStart.UnixNano()}
	s.rates[k]++
	return s.rates[k], nil
}
