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

// readCache holds members and issues tagged with the clock value read before they
// were read from the database. An entry is good only while nothing that may have
// changed it has moved the clock since: a write makes the older entries it covers a
// miss at once, without walking the maps.
//
// Members have one generation (memberGen) for all of them: an entry is good while
// memberGen still equals its tag, and only writes that may touch members move it
// (Store.write).
//
// Issues are judged one by one. Issue writes are most of a busy server's
// transactions (one every few hundred microseconds in make soak), and with one
// generation for every issue each of them made every cached issue a miss: get_issue
// nearly always went back to SQLite. An issue-side write transaction (Store.
// writeIssue) instead records, under mu, for each issue it names, the value it
// moves issueClock to (issueWrites, by workspace and issue id). Every other write
// transaction (Store.write), an external writer's session, and a full issueWrites
// raise issueFloor to a new clock value instead, which every issue entry is judged
// against too. An entry is good while its tag is at least both.
//
// Why that is exact: a read loads issueClock before it reads the database and tags
// what it read with that value; a write moves the clock after its commit, before it
// returns. An entry whose tag is at least the value a write moved the clock to was
// read after that write committed. An entry read before the commit has a smaller
// tag and is never served once the write has returned. The one window left, a read
// served the old copy between a commit and the move of the clock, is a read that ran
// concurrently with that write, which may see either. Issues are named by id in
// issueWrites whatever name (id or key) the entry was read under: an entry knows its
// issue's id, and a key names one issue for good (keys are never reused).
type readCache struct {
	memberGen  atomic.Uint64
	issueClock atomic.Uint64
	external   atomic.Int32 // external writer sessions open: read the database, fill nothing
	max        int          // entries per map (members, issues, issueWrites)
	maxBytes   int          // issueBytes bound

	mu          sync.RWMutex
	members     map[cacheKey]cachedMember
	issues      map[cacheKey]cachedIssue
	issueBytes  int                 // sum of the issues' size
	issueWrites map[cacheKey]uint64 // {ws, issue id}: the clock after its last write
	issueFloor  uint64              // issue entries tagged below it are stale
}

type cacheKey struct{ ws, id string }

type cachedMember struct {
	gen uint64
	m   store.Member
}

type cachedIssue struct {
	tag  uint64
	is   store.Issue
	size int
}

func newReadCache(max, maxBytes int) *readCache {
	return &readCache{max: max, maxBytes: maxBytes, members: map[cacheKey]cachedMember{},
		issues: map[cacheKey]cachedIssue{}, issueWrites: map[cacheKey]uint64{}}
}

// snapshot returns the clock (issueClock or memberGen) a read is tagged with, and
// false when an external writer's session is open (then nothing is served from
// memory or stored in it). The clock is read first: a session that opens after that
// moves both, so whatever this read stores is never served.
func (c *readCache) snapshot(clock *atomic.Uint64) (uint64, bool) {
	g := clock.Load()
	return g, c.external.Load() == 0
}

// invalidate makes every member and every issue kept so far stale: called after
// every write transaction that may have touched members, committed or not.
func (c *readCache) invalidate() {
	c.memberGen.Add(1)
	c.invalidateIssues()
}

// invalidateIssues makes every issue kept so far stale (invalidate's half for the
// issues).
func (c *readCache) invalidateIssues() {
	c.mu.Lock()
	c.issueFloor = c.issueClock.Add(1)
	c.mu.Unlock()
}

// touchIssue makes what is kept of issue id of ws stale: called after every write
// transaction that changed it or what an issue read returns of it (its comment
// count), committed or not. Past max issues written, it forgets them all and raises
// the floor instead, which is what invalidateIssues does to every issue.
func (c *readCache) touchIssue(ws, id string) {
	c.mu.Lock()
	v := c.issueClock.Add(1)
	if len(c.issueWrites) >= c.max {
		clear(c.issueWrites)
		c.issueFloor = v
	} else {
		c.issueWrites[cacheKey{ws, id}] = v
	}
	c.mu.Unlock()
}

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
func (c *readCache) issue(k cacheKey) (store.Issue, bool) {
	c.mu.RLock()
	e, ok := c.issues[k]
	fresh := ok && e.tag >= c.issueFloor && e.tag >= c.issueWrites[cacheKey{k.ws, e.is.ID}]
	c.mu.RUnlock()
	if !fresh {
		return store.Issue{}, false
	}
	return e.is.Clone(), true
}

// putIssue keeps is under k with tag g, the clock read before is was read. A tag
// already stale is kept too: issue never serves it, and the next read replaces it.
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
	c.issues[k] = cachedIssue{tag: g, is: is, size: size}
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
	// Moving the clocks once, here, is enough: what was kept before is never served
	// again, and a read that snapshots a clock before this and the open session after
	// it fills under a stale tag. A read that sees the session closed read the
	// database after the other process's writes.
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
	return s.cache.snapshot(&s.cache.issueClock)
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
