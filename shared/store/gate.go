package store

import "context"

type writeGateKey struct{}

// WithWriteGate returns a context whose store writes wait for gate first, and fail
// with its error. The guard uses it to run a write tool's handler beside the checks
// that decide whether the call may write at all (the rate limiter's count, the
// caller's member record): the handler's reads overlap those checks, which on
// DynamoDB saves a round trip of waiting, while no write, and no other effect the
// handler has outside the store, happens before the checks have passed.
//
// gate may be called many times and from many goroutines; it must return the same
// answer each time (the guard's waits on the checks' results).
func WithWriteGate(ctx context.Context, gate func() error) context.Context {
	return context.WithValue(ctx, writeGateKey{}, gate)
}

// AwaitWriteGate blocks until the context's write gate (WithWriteGate) has decided
// and returns its error; nil at once when ctx carries none. A backend whose writes
// are network calls calls it before each one; a handler calls it before any effect
// outside the store (an autopilot dispatch).
func AwaitWriteGate(ctx context.Context) error {
	if g, ok := ctx.Value(writeGateKey{}).(func() error); ok {
		return g()
	}
	return nil
}
