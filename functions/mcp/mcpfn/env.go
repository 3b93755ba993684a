package mcpfn

import (
	"context"
	"io"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/aacworkflow/aacmcp/shared/lambdaenv"
)

// FromEnv builds the function at cold start from its environment:
// AACMCP_TABLE and AACMCP_AUDIT_STREAM (required), AACMCP_TOKENS_TABLE,
// AACMCP_AUTOPILOT_WEBHOOK and AACMCP_AUTOPILOT_SECRET_ARN, AACMCP_RATE_LIMIT,
// AACMCP_ALLOWED_ORIGINS, AACMCP_AUTHORIZATION_SERVERS, LOG_LEVEL, and the SDK's own
// variables. The logger is usable even when err is set, so main can report it.
func FromEnv(ctx context.Context, getenv func(string) string, stdout io.Writer) (*Function, *slog.Logger, error) {
	env, err := lambdaenv.LoadAudited(ctx, getenv, stdout, FunctionName, lambdaenv.EnvTable, lambdaenv.EnvAuditStream)
	if err != nil {
		return nil, env.Logger, err
	}
	fn, err := Build(ctx, env.Config, Deps{
		DB:      dynamodb.NewFromConfig(env.AWS),
		Audit:   env.Audit,
		Secrets: secretsmanager.NewFromConfig(env.AWS),
		Stdout:  stdout,
		Logger:  env.Logger,
	})
	return fn, env.Logger, err
}
