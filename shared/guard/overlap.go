package guard

import (
	"context"
	"fmt"

	"github.com/aacworkflow/aacmcp/shared/apperr"
)

// check is a round-trip step of the pipeline running on its own goroutine (runSteps,
// on a store with ConcurrentReads). wait blocks until it has decided and may be
// called any number of times, from any goroutine.
type check struct {
	done chan struct{}
	err  *apperr.Error
}

// goStep runs step s beside the caller. A panic in it is that step's internal_error.
func (g *Guard) goStep(ctx context.Context, s *step, c *call) *check {
	k := &check{done: make(chan struct{})}
	go func() {
		defer close(k.done)
		defer func() {
			if r := recover(); r != nil {
				g.log.Error("panic in the "+s.name+" step", "panic", fmt.Sprint(r))
				k.err = apperr.Internal(fmt.Errorf("panic: %v", r))
			}
		}()
		k.err = s.run(g, ctx, c)
	}()
	return k
}

// wait is the check's verdict once it has decided; nil for a step that did not run
// on a goroutine of its own (it has decided already, or does not apply).
func (k *check) wait() *apperr.Error {
	if k == nil {
		return nil
	}
	<-k.done
	return k.err
}
