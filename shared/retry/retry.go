// Package retry runs an operation a bounded number of times with exponential,
// optionally jittered, backoff. It is the one retry loop of the code base: every
// caller states its attempts, delays and retryable errors as a Policy.
package retry

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// Policy says how often and how patiently an operation is retried. The zero value
// tries once.
type Policy struct {
	// Attempts is how many times the operation runs at most, the first included
	// (values below 1 count as 1).
	Attempts int
	// Base is the wait before the first retry; it doubles before each later one.
	Base time.Duration
	// Max caps every wait, Base's doubling and a server's After hint alike; 0 is
	// no cap. A hint beyond Max ends the retries: waiting that long would outlive
	// the caller.
	Max time.Duration
	// Jitter is the random share of each wait, in [0, 1]: the wait is uniform in
	// [d·(1-Jitter), d]. Some jitter keeps many clients throttled together from
	// retrying in step; drawing only downwards keeps Max a true bound.
	Jitter float64
	// Retryable reports whether another attempt may succeed after err; nil
	// retries every error.
	Retryable func(err error) bool
	// Sleep waits d or until ctx ends, returning ctx's error then; nil uses a
	// timer. Tests inject one to run without waiting.
	Sleep func(ctx context.Context, d time.Duration) error
}

// after carries a wait the other side asked for (an HTTP Retry-After).
type after struct {
	error
	d time.Duration
}

func (a *after) Unwrap() error { return a.error }

// After wraps err with the wait the server asked for before the next attempt; Do
// waits exactly d instead of its backoff (no jitter: the server chose the time).
// A d of 0 or less is no hint.
func After(err error, d time.Duration) error {
	if err == nil || d <= 0 {
		return err
	}
	return &after{error: err, d: d}
}

// Do calls op with attempt = 1, 2, ... until it returns nil, returns an error that
// is not retryable, or has run p.Attempts times; it then returns op's last error.
//
// It also stops, without waiting, when ctx is done or its deadline would pass
// during the wait (an attempt that cannot start in time is not worth waiting for);
// the error then joins op's last error with ctx's (context.DeadlineExceeded for a
// deadline still ahead).
func Do(ctx context.Context, p Policy, op func(attempt int) error) error {
	for attempt := 1; ; attempt++ {
		err := op(attempt)
		if err == nil || attempt >= p.Attempts || (p.Retryable != nil && !p.Retryable(err)) {
			return err
		}
		wait, ok := p.wait(attempt, err)
		if !ok {
			return err
		}
		if ctx.Err() != nil {
			return errors.Join(err, ctx.Err())
		}
		if dl, has := ctx.Deadline(); has && time.Until(dl) <= wait {
			return errors.Join(err, context.DeadlineExceeded)
		}
		sleep := p.Sleep
		if sleep == nil {
			sleep = sleepTimer
		}
		if serr := sleep(ctx, wait); serr != nil {
			return errors.Join(err, serr)
		}
	}
}

// Delay is the wait before retry n (1-based) without jitter or hint: Base doubled
// n-1 times, capped at Max. It also serves loops that retry for as long as they run
// (a background flush, an accept loop), which Do's bounded attempts do not fit.
func (p Policy) Delay(n int) time.Duration {
	d := max(p.Base, 0)
	for i := 1; i < n && d > 0; i++ {
		if p.Max > 0 && d >= p.Max {
			break
		}
		if d > time.Duration(1<<62) { // doubling would overflow
			break
		}
		d *= 2
	}
	if p.Max > 0 {
		d = min(d, p.Max)
	}
	return d
}

// wait is the pause before retry n after err; false when a hint exceeds Max.
func (p Policy) wait(n int, err error) (time.Duration, bool) {
	if a, ok := errors.AsType[*after](err); ok {
		return a.d, p.Max <= 0 || a.d <= p.Max
	}
	d := p.Delay(n)
	if j := min(max(p.Jitter, 0), 1); j > 0 && d > 0 {
		span := time.Duration(float64(d) * j)
		d -= rand.N(span + 1)
	}
	return d, true
}

func sleepTimer(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
