package lambdatest

import (
	"context"
	"sync"

	"github.com/aacworkflow/aacmcp/shared/audit"
	auditkinesis "github.com/aacworkflow/aacmcp/shared/audit/kinesis"
)

// Capture is an audit sink that remembers every record and passes it on to Next,
// so a test can tell which records one request produced and then find them on the
// stream.
type Capture struct {
	Next audit.Sink

	mu   sync.Mutex
	recs []audit.Record
}

// Write implements audit.Sink.
func (c *Capture) Write(ctx context.Context, r audit.Record) error {
	c.mu.Lock()
	c.recs = append(c.recs, r)
	c.mu.Unlock()
	return c.Next.Write(ctx, r)
}

// Take returns the records captured since the last Take.
func (c *Capture) Take() []audit.Record {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.recs
	c.recs = nil
	return out
}

// Sink returns the production Kinesis audit sink onto the fixture's stream.
func (e *Env) Sink() audit.Sink { return auditkinesis.New(e.KC, Stream) }
