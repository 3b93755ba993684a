package cpuslot

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// enter takes a slot for a request that arrived at at(ms), from the test's goroutine.
func enter(t *testing.T, g *Gate, ms int) (context.Context, func()) {
	t.Helper()
	ctx, done, err := g.Enter(context.Background(), at(ms))
	if err != nil {
		t.Fatal(err)
	}
	return ctx, done
}

// queued waits until n requests wait for a slot, so that a test's order of events
// is the order it means.
func queued(t *testing.T, g *Gate, n int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for g.Stats().Waiting != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d requests waiting for a slot, want %d", g.Stats().Waiting, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestOldestFirst: slots go to queued requests by arrival, not by the order they
// queued in.
func TestOldestFirst(t *testing.T) {
	g := New(1)
	_, done := enter(t, g, 0)
	var (
		mu    sync.Mutex
		order []int
		wg    sync.WaitGroup
	)
	// Queued newest first.
	arrivals := []int{50, 40, 30, 20, 10}
	for i, ms := range arrivals {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, d, err := g.Enter(context.Background(), at(ms))
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, ms)
			mu.Unlock()
			d()
		}()
		queued(t, g, i+1)
	}
	done()
	wg.Wait()
	want := []int{10, 20, 30, 40, 50}
	if len(order) != len(want) {
		t.Fatalf("order %v, want %v", order, want)
	}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("order %v, want %v", order, want)
		}
	}
	if s := g.Stats(); s.Free != 1 || s.Waiting != 0 {
		t.Fatalf("after every request ended: %+v, want 1 free and none waiting", s)
	}
}

// TestParkGivesTheSlotAndResumesAhead: a parked request lets a newer one run, and
// when its wait ends it goes ahead of requests newer than it that are still queued.
func TestParkGivesTheSlotAndResumesAhead(t *testing.T) {
	g := New(1)
	old, doneOld := enter(t, g, 0)
	resume := Park(old)           // the slot is free now
	_, doneNew := enter(t, g, 10) // the parked request's slot
	// A third, still newer, queues behind the second.
	thirdIn := make(chan struct{})
	go func() {
		_, d, err := g.Enter(context.Background(), at(20))
		if err != nil {
			t.Error(err)
			return
		}
		close(thirdIn)
		d()
	}()
	queued(t, g, 1)
	// The old request's wait ends: it queues, and is first.
	resumed := make(chan struct{})
	go func() {
		resume()
		close(resumed)
	}()
	queued(t, g, 2)
	doneNew()
	<-resumed
	// The one slot is the resumed request's, so the newest is still queued.
	if s := g.Stats(); s.Waiting != 1 || s.Free != 0 {
		t.Fatalf("after the resumed request got the slot: %+v, want the newest still waiting", s)
	}
	select {
	case <-thirdIn:
		t.Fatal("the newest request ran before the older, resumed one")
	default:
	}
	doneOld()
	<-thirdIn
}

// TestCancelWhileQueued: a request whose context ends while it waits leaves the
// queue and holds nothing.
func TestCancelWhileQueued(t *testing.T) {
	g := New(1)
	_, done := enter(t, g, 0)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, d, err := g.Enter(ctx, at(5))
		d()
		errc <- err
	}()
	queued(t, g, 1)
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Enter after cancel: %v, want context.Canceled", err)
	}
	if s := g.Stats(); s.Free != 0 || s.Waiting != 0 {
		t.Fatalf("after the cancelled request left: %+v, want 0 free (one held) and none waiting", s)
	}
	done()
	if s := g.Stats(); s.Free != 1 {
		t.Fatalf("after the holder ended: %+v, want 1 free", s)
	}
}

// TestResumeAfterEndTakesNothing: a goroutine of a request that ended while it was
// parked does not take a slot on resuming (nobody would give it back).
func TestResumeAfterEndTakesNothing(t *testing.T) {
	g := New(1)
	ctx, done := enter(t, g, 0)
	resume := Park(ctx)
	done()
	resume()
	if s := g.Stats(); s.Free != 1 {
		t.Fatalf("%+v, want the one slot free", s)
	}
}

// TestGoroutinesShareOneSlot: a request's goroutines park and resume on one
// ticket; the slot is given up once and taken back once.
func TestGoroutinesShareOneSlot(t *testing.T) {
	g := New(1)
	ctx, done := enter(t, g, 0)
	r1 := Park(ctx)
	r2 := Park(ctx)
	if s := g.Stats(); s.Free != 1 {
		t.Fatalf("both goroutines parked: %+v, want the slot free", s)
	}
	r1()
	if s := g.Stats(); s.Free != 1 {
		t.Fatalf("one goroutine still parked: %+v, want the slot still free", s)
	}
	r2()
	if s := g.Stats(); s.Free != 0 {
		t.Fatalf("no goroutine parked: %+v, want the slot held", s)
	}
	done()
	if s := g.Stats(); s.Free != 1 {
		t.Fatalf("after the request ended: %+v, want the slot free", s)
	}
}

// TestNoTicket: without a gate, or outside a request, everything is a no-op.
func TestNoTicket(t *testing.T) {
	var g *Gate
	ctx, done := enter(t, g, 0)
	Park(ctx)()
	done()
	Park(context.Background())()
}

// TestBound: under contention, with requests parking and resuming from many
// goroutines, no more than n requests ever run at once, and every one finishes.
func TestBound(t *testing.T) {
	const slots, requests = 3, 400
	g := New(slots)
	var running, peak atomic.Int32
	enterRun := func() {
		n := running.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		if n > slots {
			t.Errorf("%d requests running at once with %d slots", n, slots)
		}
	}
	var wg sync.WaitGroup
	for i := range requests {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, done, err := g.Enter(context.Background(), at(i%37))
			if err != nil {
				t.Error(err)
				return
			}
			defer done()
			for range 3 {
				enterRun()
				time.Sleep(10 * time.Microsecond)
				running.Add(-1)
				resume := Park(ctx)
				time.Sleep(10 * time.Microsecond)
				resume()
			}
		}()
	}
	wg.Wait()
	if s := g.Stats(); s.Free != slots || s.Waiting != 0 {
		t.Fatalf("at the end: %+v, want %d free and none waiting", s, slots)
	}
	if peak.Load() < 2 {
		t.Fatalf("peak %d running at once: the test did not contend", peak.Load())
	}
}

// TestQueued: a request's queued time is what it waited for its slot, at Enter and
// after a Park, and nothing for a slot that was free.
func TestQueued(t *testing.T) {
	g := New(1)
	aCtx, aDone := enter(t, g, 0)
	if q := Queued(aCtx); q != 0 {
		t.Errorf("Queued of a request that found a free slot = %v, want 0", q)
	}
	if q := Queued(context.Background()); q != 0 {
		t.Errorf("Queued without a ticket = %v, want 0", q)
	}

	const hold = 20 * time.Millisecond
	type entered struct {
		ctx  context.Context
		done func()
	}
	got := make(chan entered)
	go func() {
		ctx, done, err := g.Enter(context.Background(), at(10))
		if err != nil {
			t.Error(err)
		}
		got <- entered{ctx, done}
	}()
	queued(t, g, 1)
	time.Sleep(hold) // a holds the slot: b's wait is at least this
	aDone()
	b := <-got
	first := Queued(b.ctx)
	if first < hold {
		t.Errorf("Queued after waiting behind a %v hold = %v, want at least that", hold, first)
	}

	// b parks; c, newer, takes the slot; b's resume waits until c is done.
	resume := Park(b.ctx)
	cCtx, cDone := enter(t, g, 20)
	resumed := make(chan struct{})
	go func() { resume(); close(resumed) }()
	queued(t, g, 1)
	time.Sleep(hold)
	cDone()
	<-resumed
	if q := Queued(b.ctx); q < first+hold {
		t.Errorf("Queued after a Park and a second %v wait = %v, want at least %v", hold, q, first+hold)
	}
	if q := Queued(cCtx); q != 0 {
		t.Errorf("Queued of c, which found the slot free = %v, want 0", q)
	}
	b.done()
}
