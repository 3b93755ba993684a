package forwarderfn

import (
	"context"
	"io"
	"log/slog"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/aacworkflow/aacmcp/shared/catalog"
	"github.com/aacworkflow/aacmcp/shared/lambdaenv"
	"github.com/aacworkflow/aacmcp/shared/metrics"
)

// FunctionName is the Function dimension of the forwarder's metrics.
const FunctionName = "forwarder"

// The forwarder's own environment: which log group holds which kind of line. The
// CDK stack sets them from the groups it subscribes (infra/forwarding.go).
const (
	// EnvFunctionLogGroups is the comma-separated names of the log groups whose
	// fallback lines are forwarded (the functions that write audit records).
	EnvFunctionLogGroups = "AACMCP_FUNCTION_LOG_GROUPS"
	// EnvAccessLogGroup is the name of the API Gateway access-log group.
	EnvAccessLogGroup = "AACMCP_ACCESS_LOG_GROUP"
	// EnvWAFLogGroup is the name of the web ACL's log group (optional: a stack
	// without WAF logging has none).
	EnvWAFLogGroup = "AACMCP_WAF_LOG_GROUP"
)

// FromEnv builds the forwarder from its environment (AACMCP_AUDIT_STREAM, the log
// group variables above, LOG_LEVEL and the SDK's own variables). The logger is
// usable even when err is set, so main can report the failure.
func FromEnv(ctx context.Context, getenv func(string) string, stdout io.Writer) (*Forwarder, *slog.Logger, error) {
	cfg, err := lambdaenv.Load(getenv, lambdaenv.EnvAuditStream, EnvFunctionLogGroups, EnvAccessLogGroup)
	log := lambdaenv.NewLogger(stdout, cfg.LogLevel, FunctionName)
	if err != nil {
		return nil, log, err
	}
	groups := lambdaenv.SplitList(getenv(EnvFunctionLogGroups))
	awsCfg, err := lambdaenv.AWSConfig()
	if err != nil {
		return nil, log, err
	}
	return New(Config{
		Client: kinesis.NewFromConfig(awsCfg),
		Stream: cfg.AuditStream,
		// Only tool metadata is read; no tool runs here.
		Tools:             catalog.New(catalog.Deps{}),
		FunctionLogGroups: groups,
		AccessLogGroup:    strings.TrimSpace(getenv(EnvAccessLogGroup)),
		WAFLogGroup:       strings.TrimSpace(getenv(EnvWAFLogGroup)),
		// The API Gateway access log's $context.identity.sourceIp has no such
		// header: behind the front door its records keep the edge server's address.
		TrustViewerAddress: cfg.TrustViewerAddress,
		Metrics:            metrics.New(stdout, FunctionName),
		Logger:             log,
	}), log, nil
}
