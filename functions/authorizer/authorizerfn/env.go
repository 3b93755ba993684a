package authorizerfn

import (
	"context"
	"io"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/aacworkflow/aacmcp/shared/lambdaenv"
	"github.com/aacworkflow/aacmcp/shared/metrics"
)

// FromEnv builds the authorizer at cold start from its environment:
// AACMCP_TOKENS_TABLE and AACMCP_AUDIT_STREAM (required), AACMCP_AUTH_FAIL_LIMIT,
// LOG_LEVEL, and the SDK's own variables. The logger is usable even when err is set.
func FromEnv(ctx context.Context, getenv func(string) string, stdout io.Writer) (*Authorizer, *slog.Logger, error) {
	cfg, err := lambdaenv.Load(getenv, lambdaenv.EnvTokensTable, lambdaenv.EnvAuditStream)
	logOut := metrics.FallbackWatcher(stdout, metrics.New(stdout, FunctionName))
	log := lambdaenv.NewLogger(logOut, cfg.LogLevel, FunctionName)
	if err != nil {
		return nil, log, err
	}
	awsCfg, err := lambdaenv.AWSConfig(ctx)
	if err != nil {
		return nil, log, err
	}
	a, err := Build(cfg, Deps{
		DB:     dynamodb.NewFromConfig(awsCfg),
		Audit:  lambdaenv.AuditSink(kinesis.NewFromConfig(awsCfg), cfg.AuditStream, stdout, FunctionName, log),
		Stdout: stdout,
		Logger: log,
	})
	return a, log, err
}
