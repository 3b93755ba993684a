package forwarderfn

import (
	"context"
	"io"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/aacworkflow/aacmcp/shared/catalog"
	"github.com/aacworkflow/aacmcp/shared/lambdaenv"
	"github.com/aacworkflow/aacmcp/shared/metrics"
)

// FunctionName is the Function dimension of the forwarder's metrics.
const FunctionName = "forwarder"

// FromEnv builds the forwarder from its environment (AACMCP_AUDIT_STREAM, LOG_LEVEL
// and the SDK's own variables). The logger is usable even when err is set, so main
// can report the failure.
func FromEnv(ctx context.Context, getenv func(string) string, stdout io.Writer) (*Forwarder, *slog.Logger, error) {
	cfg, err := lambdaenv.Load(getenv, lambdaenv.EnvAuditStream)
	log := lambdaenv.NewLogger(stdout, cfg.LogLevel, FunctionName)
	if err != nil {
		return nil, log, err
	}
	awsCfg, err := lambdaenv.AWSConfig(ctx)
	if err != nil {
		return nil, log, err
	}
	return New(Config{
		Client: kinesis.NewFromConfig(awsCfg),
		Stream: cfg.AuditStream,
		// Only tool metadata is read; no tool runs here.
		Tools:   catalog.New(catalog.Deps{}),
		Metrics: metrics.New(stdout, FunctionName),
		Logger:  log,
	}), log, nil
}
