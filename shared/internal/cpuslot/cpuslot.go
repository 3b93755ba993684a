// Package cpuslot runs a server's requests oldest first.
//
// Go's scheduler shares the cores among every runnable goroutine. Under a load
// that fills the cores, a call that blocks several times (a write waiting for the
// SQLite writer, then for the audit log) queues for a core again after each wait,
// behind requests that arrived after it; the calls with the most waits make the
// tail. A Gate admits at most n requests to run at once and hands a free slot to
// the request that arrived first. A request gives its slot up while it waits on
// something that needs no core of its own (Park), and asks for it again, with its
// arrival time, when the wait ends: a call coming back from the writer goes ahead
// of calls that have not started. The waits themselves are not bounded, so group
// commits form from as many callers as before.
//
// docs/security.md has the measurement that motivated it.
package cpuslot

import (
	"container/heap"
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Gate hands out n slots, oldest request first. The zero value is not usable; a
// nil *Gate admits everything at once.
type Gate struct {
	mu      sync.Mutex
	free    int
	seq     uint64
	waiting waitHeap
}

// New returns a gate of n slots (at least 1).
func New(n int) *Gate {
	return &Gate{free: max(n, 1)}
}

// ticket is one request's claim on a slot. It is safe for concurrent use by the
// request's goroutines: they share the one slot.
type ticket struct {
	g       *Gate
	arrival int64
	mu      sync.Mutex
	held    bool
	// parked counts the request's goroutines inside Park; the slot is given up by
	// the first and asked for again when the last leaves.
	parked int
	// ended is set by done: a goroutine of the request that outlives it (and
	// resumes later) must not take a slot nobody will give back.
	ended bool
	// queued is the time, in nanoseconds, the request has waited for its slot so
	// far: at Enter and after each Park (see Queued).
	queued atomic.Int64
}

type ticketKey struct{}

// Enter waits for a slot for a request that arrived at arrival and returns a
// context carrying the ticket, for Park further down. done gives the slot back and
// must be called once when the request ends. If ctx ends first, Enter returns its
// error and holds nothing.
func (g *Gate) Enter(ctx context.Context, arrival time.Time) (_ context.Context, done func(), err error) {
	if g == nil {
		return ctx, func() {}, nil
	}
	t := &ticket{g: g, arrival: arrival.UnixNano()}
	if err := g.acquire(ctx, t); err != nil {
		return ctx, func() {}, err
	}
	t.held = true
	return context.WithValue(ctx, ticketKey{}, t), t.leave, nil
}

func (t *ticket) leave() {
	t.mu.Lock()
	held := t.held
	t.held, t.ended = false, true
	t.mu.Unlock()
	if held {
		t.g.release()
	}
}

// Park gives up the slot of ctx's request, if it holds one, for a wait that needs
// no core; call the function it returns when the wait ends, to queue for the slot
// again by the request's arrival. Without a ticket in ctx both are no-ops.
//
// Resuming does not fail: if ctx ends while the request is queued, it goes on
// without a slot (its work is near its end), rather than leaving a half-done call.
func Park(ctx context.Context) (resume func()) {
	t, _ := ctx.Value(ticketKey{}).(*ticket)
	if t == nil {
		return func() {}
	}
	t.mu.Lock()
	t.parked++
	give := t.held && t.parked == 1
	if give {
		t.held = false
	}
	t.mu.Unlock()
	if give {
		t.g.release()
	}
	return func() { t.resume(ctx) }
}

func (t *ticket) resume(ctx context.Context) {
	t.mu.Lock()
	t.parked--
	ask := t.parked == 0 && !t.held && !t.ended
	t.mu.Unlock()
	if !ask {
		return
	}
	if t.g.acquire(ctx, t) != nil {
		return
	}
	t.mu.Lock()
	if t.held || t.parked > 0 || t.ended {
		// While this goroutine queued, another of the request took the slot or
		// parked again, or the request ended: the slot is not needed.
		t.mu.Unlock()
		t.g.release()
		return
	}
	t.held = true
	t.mu.Unlock()
}

func (g *Gate) acquire(ctx context.Context, t *ticket) error {
	g.mu.Lock()
	if g.free > 0 && len(g.waiting) == 0 {
		g.free--
		g.mu.Unlock()
		return nil
	}
	g.seq++
	w := &waiter{arrival: t.arrival, seq: g.seq, ready: make(chan struct{})}
	heap.Push(&g.waiting, w)
	g.mu.Unlock()
	// Only a request that queues reads the clock: a free slot costs nothing more.
	start := time.Now()
	defer func() { t.queued.Add(int64(time.Since(start))) }()

	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		g.mu.Lock()
		if w.index < 0 {
			// Handed the slot just as ctx ended: pass it on.
			g.mu.Unlock()
			g.release()
			return ctx.Err()
		}
		heap.Remove(&g.waiting, w.index)
		g.mu.Unlock()
		return ctx.Err()
	}
}

func (g *Gate) release() {
	g.mu.Lock()
	if len(g.waiting) == 0 {
		g.free++
		g.mu.Unlock()
		return
	}
	w := heap.Pop(&g.waiting).(*waiter)
	g.mu.Unlock()
	close(w.ready)
}

// Queued reports how long the request of ctx has waited for its slot so far, at
// Enter and after every Park: the part of its latency that is the CPU queue, which
// a server logs to tell a full machine from a slow call. 0 without a ticket (or a
// nil ctx, for a request that never queued).
func Queued(ctx context.Context) time.Duration {
	if ctx == nil {
		return 0
	}
	t, _ := ctx.Value(ticketKey{}).(*ticket)
	if t == nil {
		return 0
	}
	return time.Duration(t.queued.Load())
}

// Stats is a gate's state at one moment.
type Stats struct {
	Free, Waiting int
}

// Stats reports the free slots and the requests queued for one.
func (g *Gate) Stats() Stats {
	g.mu.Lock()
	defer g.mu.Unlock()
	return Stats{Free: g.free, Waiting: len(g.waiting)}
}

type waiter struct {
	arrival int64
	seq     uint64 // among equal arrivals, first queued first
	index   int    // in the heap; -1 once popped
	ready   chan struct{}
}

type waitHeap []*waiter

func (h waitHeap) Len() int { return len(h) }
func (h waitHeap) Less(i, j int) bool {
	if h[i].arrival != h[j].arrival {
		return h[i].arrival < h[j].arrival
	}
	return h[i].seq < h[j].seq
}
func (h waitHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}
func (h *waitHeap) Push(x any) {
	w := x.(*waiter)
	w.index = len(*h)
	*h = append(*h, w)
}
func (h *waitHeap) Pop() any {
	old := *h
	w := old[len(old)-1]
	old[len(old)-1] = nil
	w.index = -1
	*h = old[:len(old)-1]
	return w
}
