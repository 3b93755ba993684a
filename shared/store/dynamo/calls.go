package dynamo

import (
	"context"
	"maps"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
)

// CallCounter counts the DynamoDB API calls made through an aws.Config, per operation:
// Calls counts operations as the code issued them, Attempts the HTTP requests sent
// (retries included). It exists to measure round trips per store method.
type CallCounter struct {
	mu       sync.Mutex
	calls    map[string]int64
	attempts map[string]int64
}

// CountCalls installs a counter on cfg; clients built from cfg afterwards report to it.
func CountCalls(cfg *aws.Config) *CallCounter {
	c := &CallCounter{calls: map[string]int64{}, attempts: map[string]int64{}}
	cfg.APIOptions = append(cfg.APIOptions, func(st *middleware.Stack) error {
		if err := st.Initialize.Add(middleware.InitializeMiddlewareFunc("aacmcp.CountCalls",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				c.add(c.calls, awsmiddleware.GetOperationName(ctx))
				return next.HandleInitialize(ctx, in)
			}), middleware.Before); err != nil {
			return err
		}
		// After the retry middleware, so that every attempt passes through.
		return st.Finalize.Insert(middleware.FinalizeMiddlewareFunc("aacmcp.CountAttempts",
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				c.add(c.attempts, awsmiddleware.GetOperationName(ctx))
				return next.HandleFinalize(ctx, in)
			}), "Retry", middleware.After)
	})
	return c
}

func (c *CallCounter) add(m map[string]int64, op string) {
	c.mu.Lock()
	m[op]++
	c.mu.Unlock()
}

// Calls returns the operations counted since the last Reset, by operation name.
func (c *CallCounter) Calls() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.calls)
}

// Attempts returns the HTTP attempts counted since the last Reset, by operation name.
func (c *CallCounter) Attempts() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.attempts)
}

// Total is the number of operations since the last Reset.
func (c *CallCounter) Total() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int64
	for _, v := range c.calls {
		n += v
	}
	return n
}

// Reset clears both counts.
func (c *CallCounter) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.calls)
	clear(c.attempts)
}
