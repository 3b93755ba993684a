package authorizerfn

import (
	"context"
	"io"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/aacworkflow/aacmcp/shared/lambdaenv"
)

// FromEnv builds the authorizer at cold start from its environment:
// AACMCP_TOKENS_TABLE and AACMCP_AUDIT_STREAM (required), AACMCP_AUTH_FAIL_LIMIT,
// LOG_LEVEL, the AACMCP_JWT_* variables of an external issuer (lambdaenv.LoadJWT;
// the members' e-mail lookup then also uses AACMCP_TABLE), and the SDK's own
// variables. The logger is usable even when err is set.
func FromEnv(ctx context.Context, getenv func(string) string, stdout io.Writer) (*Authorizer, *slog.Logger, error) {
	env, err := lambdaenv.LoadAudited(ctx, getenv, stdout, FunctionName, lambdaenv.EnvTokensTable, lambdaenv.EnvAuditStream)
	if err != nil {
		return nil, env.Logger, err
	}
	jwt, err := lambdaenv.LoadJWT(getenv)
	if err != nil {
		return nil, env.Logger, err
	}
	a, err := Build(env.Config, Deps{
		DB:     dynamodb.NewFromConfig(env.AWS),
		Audit:  env.Audit,
		Stdout: stdout,
		Logger: env.Logger,
		JWT:    jwt,
	})
	return a, env.Logger, err
}
