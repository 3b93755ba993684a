package guard

import (
	"context"
	"errors"
	"fmt"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/catalog"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// check is one of the pipeline's store-backed checks running on its own goroutine.
// wait blocks until it has decided and may be called any number of times, from any
// goroutine.
type check struct {
	done chan struct{}
	err  *apperr.Error
}

// goCheck runs f beside the caller. A panic in f is that check's internal_error.
func (g *Guard) goCheck(what string, f func() *apperr.Error) *check {
	k := &check{done: make(chan struct{})}
	go func() {
		defer close(k.done)
		defer func() {
			if r := recover(); r != nil {
				g.log.Error("panic in "+what, "panic", fmt.Sprint(r))
				k.err = apperr.Internal(fmt.Errorf("panic: %v", r))
			}
		}()
		k.err = f()
	}()
	return k
}

func (k *check) wait() *apperr.Error {
	if k == nil {
		return nil
	}
	<-k.done
	return k.err
}

// first waits for every check and returns the error of the earliest in pipeline
// order, so that a call failing two checks is refused by the earlier one, exactly
// as if they had run one after the other.
func first(ks ...*check) *apperr.Error {
	var out *apperr.Error
	for _, k := range ks {
		if err := k.wait(); err != nil && out == nil {
			out = err
		}
	}
	return out
}

// runOverlapped is run's second half on a store whose calls are network round trips
// (ConcurrentReads: DynamoDB). The rate limiter's count, the caller's member record
// and the handler are independent DynamoDB calls, so they are issued together and
// the call waits for one round trip where it waited for three:
//
//   - The limiter counts every call that reaches it, as before, and its verdict
//     still outranks every later check (first), so an over-limit call is refused as
//     rate_limited even if its arguments are also wrong.
//   - A read-only handler runs beside both; its result is used only if both pass
//     (see invokeRead: a read changes nothing, so having run it is harmless).
//   - A write handler runs beside both too, with a write gate on its context
//     (store.WithWriteGate): it may read, but its first write waits for both checks
//     and fails with the refusal if either refuses, so a refused call writes
//     nothing. Such a handler sees no Role, like a read-only one.
//   - A delete's handler also starts at once (runDestructive): its item reads
//     overlap the checks and the human confirmation, which its gate waits for too,
//     and the role it judges the item's owner by waits for the member check.
func (g *Guard) runOverlapped(ctx context.Context, c *call, p auth.Principal, t catalog.Tool, a *args) Result {
	var limit *check
	if g.limiter != nil {
		limit = g.goCheck("the rate limiter", func() *apperr.Error { return g.rateLimit(ctx, p, t.Name, c.now) })
	}
	if err := g.validate(t, a); err != nil {
		return Result{Err: first(limit, &check{done: closed, err: err})}
	}
	key := g.idempotencyKey(c, t, a)
	var role store.Role // set by member, read only after member.wait
	member := g.goCheck("the member check", func() *apperr.Error {
		var err *apperr.Error
		role, err = g.role(ctx, p, t)
		return err
	})
	// gate is what every write waits for: the limiter and the member check.
	gate := func() error {
		if err := first(limit, member); err != nil {
			return err
		}
		return nil
	}
	gctx := store.WithWriteGate(ctx, gate)
	tc := catalog.Call{Principal: p, Args: a.raw, Now: c.now, IdempotencyKey: key}
	if t.Annotations.Destructive {
		return g.runDestructive(ctx, gctx, c, p, t, a, tc, limit, member, &role)
	}

	res := g.runTool(gctx, c, tc)
	if err := first(limit, member); err != nil {
		// Refused: whatever the handler did was a read, and its result is dropped.
		return Result{Err: err}
	}
	return res
}

// errAsked is what a delete's writes fail with while a person has yet to be asked
// (the human confirmation answered InputRequired). The handler's error is dropped:
// the call's answer is the question.
var errAsked = errors.New("guard: the delete waits for a person's confirmation")

// runDestructive is runOverlapped for a delete. Its handler starts beside the
// limiter, the member check and the human confirmation: the item's reads (a lookup,
// then the item, then its tombstone) are most of a delete's round trips, and none
// of them needs a check's verdict. Two things do, and each waits for it:
//
//   - the permission rule (catalog's mayDelete) judges the item's owner by
//     tc.Role, which waits for the member check and gives no role if it refused;
//   - every write waits for a gate that passes only once the limiter, the member
//     check and the confirmation have passed and no person is to be asked
//     (errAsked). The confirmation's own write (spending the answer's nonce) waits
//     only for the first two (gctx), so it still happens before the delete.
//
// So a refused or unconfirmed delete writes nothing, and its answer is the earliest
// check's, exactly as in sequence; the handler's answer is used only if all passed.
func (g *Guard) runDestructive(ctx, gctx context.Context, c *call, p auth.Principal, t catalog.Tool, a *args, tc catalog.Call, limit, member *check, role *store.Role) Result {
	// roleOf is the member check's role, once it has decided; a refused check gives
	// none, so nobody is asked and no item is judged deletable.
	roleOf := func() store.Role {
		if member.wait() != nil {
			return ""
		}
		return *role
	}
	var ir *InputRequired
	confirmed := g.goCheck("the human confirmation", func() *apperr.Error {
		var err *apperr.Error
		ir, err = g.humanConfirmation(gctx, c, p, roleOf, t, a)
		return err
	})
	hctx := store.WithWriteGate(ctx, func() error {
		if err := first(limit, member, confirmed); err != nil {
			return err
		}
		if ir != nil {
			return errAsked
		}
		return nil
	})
	tc.Role = roleOf

	res := g.runTool(hctx, c, tc)
	if err := first(limit, member, confirmed); err != nil {
		return Result{Err: err}
	}
	if ir != nil {
		return Result{InputRequired: ir}
	}
	return res
}

// closed is a channel that is always ready, for a check decided on the spot.
var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()
