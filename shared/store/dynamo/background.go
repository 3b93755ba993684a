package dynamo

import (
	"context"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// Background work: writes made after a method has answered, so that no caller waits
// for them. Only housekeeping goes here, writes whose loss costs a few bytes in an item
// and never a guarantee: clearing an operation's id from the guard set of a counter
// (usage, comment_count) once the SDK can no longer resend that operation's ADD.
//
// On Lambda the sandbox may be frozen as soon as the handler returns. A task caught
// by the freeze resumes when the next invocation thaws the sandbox, or never if the
// sandbox is shut down while frozen; either way nothing but its own cleanup is at
// stake. A task resumed after a freeze longer than bgTimeout finds its deadline
// passed, so a task whose deadline expired gets one more attempt on a fresh deadline
// (a slow DynamoDB is bounded the same way: at most bgAttempts x bgTimeout).

const (
	// bgTimeout bounds one attempt of a background task.
	bgTimeout = 5 * time.Second
	// bgAttempts is how many deadlines a task gets (see above: a freeze eats one).
	bgAttempts = 2
	// maxBackground bounds the tasks in flight. Beyond it a task runs before the
	// method returns: back pressure when DynamoDB is slower than the callers, rather
	// than an unbounded number of goroutines. On Lambda (one request per sandbox at a
	// time) the bound is never near.
	maxBackground = 256
)

// tasks tracks the background tasks of a Store.
type tasks struct {
	mu      sync.Mutex
	running int
	idle    chan struct{} // closed whenever running == 0
	closed  bool          // after Close no task goes to the background
}

func newTasks() *tasks {
	idle := make(chan struct{})
	close(idle)
	return &tasks{idle: idle}
}

// start reserves a slot for a background task; false means run it in the caller.
func (t *tasks) start() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed || t.running >= maxBackground {
		return false
	}
	if t.running == 0 {
		t.idle = make(chan struct{})
	}
	t.running++
	return true
}

func (t *tasks) done() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.running--
	if t.running == 0 {
		close(t.idle)
	}
}

// wait returns once no task is running, or with ctx's error.
func (t *tasks) wait(ctx context.Context) error {
	t.mu.Lock()
	idle := t.idle
	t.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// later runs task after the calling method returns, on a context that keeps ctx's
// values but not its cancellation or deadline: the request may end first. A failure is
// logged with what and args; the task itself must be safe to lose.
func (s *Store) later(ctx context.Context, what string, task func(ctx context.Context) error, args ...any) {
	ctx = context.WithoutCancel(ctx)
	if !s.bg.start() {
		s.runTask(ctx, what, task, args)
		return
	}
	go func() {
		defer s.bg.done()
		s.runTask(context.WithValue(ctx, backgroundKey{}, true), what, task, args)
	}()
}

// laterUpdate and laterDelete run one conditional write of the store's table as a
// task (see later). The condition names the state the write cleans up, so a failed
// condition means there is nothing left to clean (the item is gone, or a resent
// request already did it): the task is done, not failed.
func (s *Store) laterUpdate(ctx context.Context, what string, in dynamodb.UpdateItemInput, args ...any) {
	in.TableName = aws.String(s.table)
	s.later(ctx, what, func(ctx context.Context) error {
		in := in
		_, err := s.db.UpdateItem(ctx, &in)
		return unlessConditionFailed(err)
	}, args...)
}

func (s *Store) laterDelete(ctx context.Context, what string, in dynamodb.DeleteItemInput, args ...any) {
	in.TableName = aws.String(s.table)
	s.later(ctx, what, func(ctx context.Context) error {
		in := in
		_, err := s.db.DeleteItem(ctx, &in)
		return unlessConditionFailed(err)
	}, args...)
}

func unlessConditionFailed(err error) error {
	if conditionFailed(err) {
		return nil
	}
	return err
}

type backgroundKey struct{}

// InBackground reports whether ctx belongs to a write the store makes after its
// method has returned, i.e. one no caller waits for. For measurements: an SDK
// middleware sees the operation's context (bench/cmd/bench counts round trips).
func InBackground(ctx context.Context) bool { return ctx.Value(backgroundKey{}) != nil }

func (s *Store) runTask(ctx context.Context, what string, task func(ctx context.Context) error, args []any) {
	var err error
	for range bgAttempts {
		actx, cancel := context.WithTimeout(ctx, bgTimeout)
		err = task(actx)
		expired := actx.Err() != nil
		cancel()
		if err == nil || !expired {
			break
		}
	}
	if err != nil {
		s.log.WarnContext(ctx, "dynamo: background write failed: "+what, append(args, "err", err)...)
	}
}

// Drain waits until no background write is running, or until ctx is done (then it
// returns ctx's error). Writes started meanwhile may still be running when it returns.
func (s *Store) Drain(ctx context.Context) error { return s.bg.wait(ctx) }

// Close waits for the background writes in flight (each is bounded by its own
// deadlines, so this ends within bgAttempts x bgTimeout). The store stays usable after
// Close, but its housekeeping writes then run before each method returns, so no
// goroutine outlives Close. It always returns nil; the error is for io.Closer.
func (s *Store) Close() error {
	s.bg.mu.Lock()
	s.bg.closed = true
	s.bg.mu.Unlock()
	return s.bg.wait(context.Background())
}
