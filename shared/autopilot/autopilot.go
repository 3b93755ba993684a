// Package autopilot hands autopilot runs to the agent runner.
//
// trigger_autopilot records a run and then calls a Dispatcher. Two implementations:
// Webhook, an HTTPS POST to the agent runner (HMAC-signed body, Idempotency-Key header,
// bounded retries), and Outbox, a JSON-lines file under the data folder for local use
// when no runner is configured.
package autopilot

import (
	"context"
	"fmt"
	"time"
)

// Job is what the agent runner receives: one run of one issue. Its JSON form is the
// webhook body and the outbox line.
type Job struct {
	RunID        string    `json:"run_id"`
	WorkspaceID  string    `json:"workspace_id"`
	IssueID      string    `json:"issue_id"`
	IssueKey     string    `json:"issue_key"`
	Instructions string    `json:"instructions"`
	RequestedBy  string    `json:"requested_by"`
	CreatedAt    time.Time `json:"created_at"`
}

// Dispatcher delivers a job to the agent runner. It returns nil once the runner (or the
// outbox standing in for it) has accepted the job. Implementations are safe for
// concurrent use.
type Dispatcher interface {
	Dispatch(ctx context.Context, j Job) error
}

// Queuer is implemented by dispatchers that only queue a job for a runner to pick up
// later (the local outbox). A run they accept stays "queued" (docs/architecture.md section 2): nothing
// has reached the runner yet, and saying "dispatched" would claim otherwise.
type Queuer interface {
	QueuesOnly() bool
}

// QueuesOnly reports whether d merely queues jobs.
func QueuesOnly(d Dispatcher) bool {
	q, ok := d.(Queuer)
	return ok && q.QueuesOnly()
}

// DispatchError is a failed delivery. Its message is written for the operator and may be
// shown to the caller in the run's error field, so it never carries URLs, addresses or
// library error text; the underlying cause is kept for logs through Unwrap.
type DispatchError struct {
	// Attempts is how many deliveries were tried.
	Attempts int
	// StatusCode is the runner's last HTTP status, 0 when no response arrived.
	StatusCode int
	// Reason is a short, safe description of the last failure.
	Reason string
	cause  error
}

func (e *DispatchError) Error() string {
	if e.StatusCode != 0 {
		return fmt.Sprintf("agent runner answered HTTP %d after %d attempt(s)", e.StatusCode, e.Attempts)
	}
	return fmt.Sprintf("%s after %d attempt(s)", e.Reason, e.Attempts)
}

func (e *DispatchError) Unwrap() error { return e.cause }
