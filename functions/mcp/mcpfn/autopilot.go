package mcpfn

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/aacworkflow/aacmcp/shared/autopilot"
	"github.com/aacworkflow/aacmcp/shared/lambdaenv"
)

// LogDispatcher stands in for the agent runner when no webhook is configured. A
// Lambda has no local outbox file that would outlive the invocation, so the job is
// written as one structured log line ("autopilot_job": true) instead: the function's
// log group is the durable queue, which an operator (or a subscription filter on that
// field) can replay into a runner. The run is still recorded in DynamoDB first.
type LogDispatcher struct {
	Logger *slog.Logger
}

// QueuesOnly marks the log as a queue: runs written to it stay "queued" (docs/architecture.md section 2).
func (d LogDispatcher) QueuesOnly() bool { return true }

// Dispatch implements autopilot.Dispatcher.
func (d LogDispatcher) Dispatch(ctx context.Context, j autopilot.Job) error {
	d.Logger.InfoContext(ctx, "autopilot job queued in the log (no webhook configured)",
		"autopilot_job", true, "job", j)
	return nil
}

// SecretsAPI is the Secrets Manager call the function makes at cold start.
type SecretsAPI = lambdaenv.SecretsAPI

// webhookHTTPTimeout bounds one delivery attempt; the webhook retries within the
// invocation's deadline.
const webhookHTTPTimeout = 5 * time.Second

// NewDispatcher returns the webhook dispatcher when url is set (its signing secret
// read once from Secrets Manager by ARN), else a LogDispatcher.
func NewDispatcher(ctx context.Context, sm SecretsAPI, url, secretARN string, log *slog.Logger) (autopilot.Dispatcher, error) {
	if url == "" {
		log.Info("no autopilot webhook configured; autopilot jobs go to the log")
		return LogDispatcher{Logger: log}, nil
	}
	secret, err := lambdaenv.ReadSecret(ctx, sm, secretARN, "autopilot webhook secret")
	if err != nil {
		return nil, err
	}
	wh := autopilot.NewWebhook(url, secret, &http.Client{Timeout: webhookHTTPTimeout}, autopilot.WithLogger(log))
	if err := wh.Validate(); err != nil {
		return nil, err
	}
	return wh, nil
}
