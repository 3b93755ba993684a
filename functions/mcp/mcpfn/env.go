package mcpfn

import (
	"context"
	"io"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/aacworkflow/aacmcp/shared/lambdaenv"
	"github.com/aacworkflow/aacmcp/shared/metrics"
)

// FromEnv builds the function at cold start from its environment:
// AACMCP_TABLE and AACMCP_AUDIT_STREAM (required), AACMCP_TOKENS_TABLE,
// AACMCP_AUTOPILOT_WEBHOOK and AACMCP_AUTOPILOT_SECRET_ARN, AACMCP_RATE_LIMIT,
// AACMCP_ALLOWED_ORIGINS, AACMCP_AUTHORIZATION_SERVERS, LOG_LEVEL, and the SDK's own
// variables. The logger is usable even when err is set, so main can report it.
func FromEnv(ctx context.Context, getenv func(string) string, stdout io.Writer) (*Function, *slog.Logger, error) {
	cfg, err := lambdaenv.Load(getenv, lambdaenv.EnvTable, lambdaenv.EnvAuditStream)
	// Fallback lines printed through the logger (the guard's) count as fallbacks too.
	logOut := metrics.FallbackWatcher(stdout, metrics.New(stdout, FunctionName))
	log := lambdaenv.NewLogger(logOut, cfg.LogLevel, FunctionName)
	if err != nil {
		return nil, log, err
	}
	awsCfg, err := lambdaenv.AWSConfig(ctx)
	if err != nil {
		return nil, log, err
	}
	fn, err := Build(ctx, cfg, Deps{
		DB:      dynamodb.NewFromConfig(awsCfg),
		Audit:   lambdaenv.AuditSink(kinesis.NewFromConfig(awsCfg), cfg.AuditStream, stdout, FunctionName, log),
		Secrets: secretsmanager.NewFromConfig(awsCfg),
		Stdout:  stdout,
		Logger:  log,
	})
	return fn, log, err
}
