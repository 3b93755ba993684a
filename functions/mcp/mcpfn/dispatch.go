package mcpfn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/aacworkflow/aacmcp/shared/autopilot"
)

// LogDispatcher stands in for the agent runner when no webhook is configured. A
// Lambda has no local outbox file that would outlive the invocation, so the job is
// written as one structured log line ("autopilot_job": true) instead: the function's
// log group is the durable queue, which an operator (or a subscription filter on that
// field) can replay into a runner. The run is still recorded in DynamoDB first.
type LogDispatcher struct {
	Logger *slog.Logger
}

// QueuesOnly marks the log as a queue: runs written to it stay "queued" (DESIGN.md 1a).
func (d LogDispatcher) QueuesOnly() bool { return true }

// Dispatch implements autopilot.Dispatcher.
func (d LogDispatcher) Dispatch(ctx context.Context, j autopilot.Job) error {
	d.Logger.InfoContext(ctx, "autopilot job queued in the log (no webhook configured)",
		"autopilot_job", true, "job", j)
	return nil
}

// SecretsAPI is the Secrets Manager call the function makes at cold start.
type SecretsAPI interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

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
	out, err := sm.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(secretARN)})
	if err != nil {
		return nil, fmt.Errorf("read the autopilot webhook secret: %w", err)
	}
	var secret []byte
	switch {
	case out.SecretString != nil:
		secret = []byte(*out.SecretString)
	case len(out.SecretBinary) > 0:
		secret = out.SecretBinary
	}
	if len(secret) == 0 {
		return nil, errors.New("the autopilot webhook secret is empty")
	}
	wh := autopilot.NewWebhook(url, secret, &http.Client{Timeout: webhookHTTPTimeout}, autopilot.WithLogger(log))
	if err := wh.Validate(); err != nil {
		return nil, err
	}
	return wh, nil
}
