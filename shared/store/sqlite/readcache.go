package sqlite

import (
	"sync"
	"sync/atomic"

	"github.com/aacworkflow/aacmcp/shared/store"
)

// WithReadCache makes GetMember and GetIssue answer from memory what this store
// read or wrote before, exactly: every write transaction this store runs on members
// or issues invalidates the copy when it ends, before the write returns, so a read
// that starts after a write returned sees it. That holds only while this store is the
// one writer of the database; another process that writes it must announce itself
// first (BeginExternalWrites), which aacmcp serve does for its admin commands.
//
// Why: on aacmcp serve these two reads run on every get_issue (the member record is
// read on every call so that a removed member or a lowered role takes effect at
// once), and through pure-Go SQLite they were the largest part of the call's CPU
// (bench/REPORT.md). Lambda (DynamoDB, many writers) has no such copy.
func WithReadCache() Option {
	return func(s *Store) { s.cache = newReadCache(readCacheEntries, readCacheIssueBytes) }
}

// The copy's bounds. Past them arbitrary entries make room: no list to maintain
// on the read path, and a miss costs only the read the copy saves.
const (
	// readCacheEntries bounds each of the two maps (members, issues).
	readCacheEntries = 1 << 15
	// readCacheIssueBytes bounds the issues' text: a description may hold 64 Ki
	// characters, so a count alone would let 32,768 large issues take gigabytes.
	readCacheIssueBytes = 64 << 20
)

// readCache holds members and issues tagged with the generation they were read in.
// A generation moves after every write transaction that may touch what it covers and
// around every external writer's session; an entry is good only while its
// generation still equals its tag, so a write makes every older entry a miss at
// once, without walking the maps.
//
// Members and issues have a generation each. Issue writes are most of a busy
// server's transactions (one every few hundred microseconds in make soak); with one
// generation for both, each of them also dropped every member, and the member read
// that every call makes went back to SQLite nearly always. Only writes that may
// touch members move memberGen (Store.write); the issue-side writes move gen alone
// (Store.writeIssues).
//
// A read snapshots gen before it reads the database and tags what it read with that
// snapshot: if a write commits meanwhile, gen moves after the commit and the entry,
// old or new, can never be served. The one window left, a read served the old copy
// between a commit and the move of gen, is a read that ran concurrently with that
// write, which may see either.
type readCache struct {
	gen       atomic.Uint64 // issues
	memberGen atomic.Uint64
	external  atomic.Int32 // external writer sessions open: read the database, fill nothing
	max       int          // entries per map
	maxBytes  int          // issueBytes bound

	mu         sync.RWMutex
	members    map[cacheKey]cachedMember
	issues     map[cacheKey]cachedIssue
	issueBytes int // sum of the issues' size
}

type cacheKey struct{ ws, id string }

type cachedMember struct {
	gen uint64
	m   store.Member
}

type cachedIssue struct {
	gen  uint64
	is   store.Issue
	size int
}

func newReadCache(max, maxBytes int) *readCache {
	return &readCache{max: max, maxBytes: maxBytes, members: map[cacheKey]cachedMember{}, issues: map[cacheKey]cachedIssue{}}
}

// snapshot returns the generation (gen or memberGen) a read is tagged with, and
// false when an external writer's session is open (then nothing is served from
// memory or stored in it). The generation is read first: a session that opens after
// that moves both, so whatever this read stores is never served.
func (c *readCache) snapshot(gen *atomic.Uint64) (uint64, bool) {
	g := gen.Load()
	return g, c.external.Load() == 0
}

// invalidate ends both generations: called after every write transaction that may
// have touched members, committed or not.
func (c *readCache) invalidate() {
	c.memberGen.Add(1)
	c.gen.Add(1)
}

// invalidateIssues ends the issues' generation: called after every write
// transaction that may have touched issues but cannot have touched members.
func (c *readCache) invalidateIssues() { c.gen.Add(1) }

func (c *readCache) member(g uint64, k cacheKey) (store.Member, bool) {
	c.mu.RLock()
	e, ok := c.members[k]
	c.mu.RUnlock()
	return e.m, ok && e.gen == g
}

func (c *readCache) putMember(g uint64, k cacheKey, m store.Member) {
	c.mu.Lock()
	if _, ok := c.members[k]; !ok && len(c.members) >= c.max {
		for victim := range c.members { // random: Go starts map iteration anywhere
			delete(c.members, victim)
			break
		}
	}
	c.members[k] = cachedMember{gen: g, m: m}
	c.mu.Unlock()
}

// issue returns a copy: callers own what a store returns and may change it.
func (c *readCache) issue(g uint64, k cacheKey) (store.Issue, bool) {
	c.mu.RLock()
	e, ok := c.issues[k]
	c.mu.RUnlock()
	if !ok || e.gen != g {
		return store.Issue{}, false
	}
	return e.is.Clone(), true
}

func (c *readCache) putIssue(g uint64, k cacheKey, is store.Issue) {
	size := issueSize(is)
	if size > c.maxBytes {
		return
	}
	is = is.Clone()
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.issues[k]; ok {
		delete(c.issues, k)
		c.issueBytes -= old.size
	}
	for victim, e := range c.issues { // random: Go starts map iteration anywhere
		if len(c.issues) < c.max && c.issueBytes+size <= c.maxBytes {
			break
		}
		delete(c.issues, victim)
		c.issueBytes -= e.size
	}
	c.issues[k] = cachedIssue{gen: g, is: is, size: size}
	c.issueBytes += size
}

// issueSize approximates the memory an issue holds: its strings, plus a fixed
// charge for the struct, the map entry and each label's header.
func issueSize(is store.Issue) int {
	n := 256 + len(is.ID) + len(is.Key) + len(is.Title) + len(is.Description) +
		len(is.Status) + len(is.Priority) + len(is.CreatedBy)
	for _, l := range is.Labels {
		n += 16 + len(l)
	}
	if is.Assignee != nil {
		n += 48 + len(is.Assignee.Type) + len(is.Assignee.ID)
	}
	return n
}

// BeginExternalWrites announces that another process is about to write the
// database, and returns the function to call once it has finished (or died). In
// between, GetMember and GetIssue read the database and keep nothing; when the
// session ends, everything kept before it is dropped. Without WithReadCache it does
// nothing. Sessions may overlap; each end function runs its effect once.
func (s *Store) BeginExternalWrites() (end func()) {
	c := s.cache
	if c == nil {
		return func() {}
	}
	c.external.Add(1)
	// Moving gen once, here, is enough: what was kept before is never served again,
	// and a read that snapshots gen before this and the open session after it fills
	// under the old tag. A read that sees the session closed read the database after
	// the other process's writes.
	c.invalidate()
	var once sync.Once
	return func() { once.Do(func() { c.external.Add(-1) }) }
}

// issueSnapshot is where GetIssue starts: use=false means read the database and
// keep nothing; otherwise look up and store under tag g.
func (s *Store) issueSnapshot() (g uint64, use bool) {
	if s.cache == nil {
		return 0, false
	}
	return s.cache.snapshot(&s.cache.gen)
}

// memberSnapshot is issueSnapshot for GetMember.
func (s *Store) memberSnapshot() (g uint64, use bool) {
	if s.cache == nil {
		return 0, false
	}
	return s.cache.snapshot(&s.cache.memberGen)
}

// cacheLen reports the read cache's entries (tests; zero without WithReadCache).
func (s *Store) cacheLen() (members, issues int) {
	if s.cache == nil {
		return 0, 0
	}
	s.cache.mu.RLock()
	defer s.cache.mu.RUnlock()
	return len(s.cache.members), len(s.cache.issues)
}
