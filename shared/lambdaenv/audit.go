package lambdaenv

import (
	"context"
	"io"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	auditkinesis "github.com/aacworkflow/aacmcp/shared/audit/kinesis"
	"github.com/aacworkflow/aacmcp/shared/metrics"
)

// AuditSink is a function's audit sink: records go to the Kinesis stream; a record
// the stream cannot take is printed as a fallback line on stdout (which the forwarder
// puts back on the stream), and each such line also emits the AuditFallback metric.
func AuditSink(kc auditkinesis.KinesisAPI, stream string, stdout io.Writer, function string, log *slog.Logger) *auditkinesis.Sink {
	return auditkinesis.New(kc, stream,
		auditkinesis.WithFallback(metrics.FallbackWatcher(stdout, metrics.New(stdout, function))),
		auditkinesis.WithLogger(log))
}

// Audited is what a function that writes audit records (the authorizer, the MCP
// function) builds first at cold start.
type Audited struct {
	Config Config
	// Logger writes JSON to stdout; fallback lines printed through it (the guard's)
	// count as audit fallbacks too.
	Logger *slog.Logger
	AWS    aws.Config
	// Audit is AuditSink on the configured stream.
	Audit *auditkinesis.Sink
}

// LoadAudited loads the configuration (required must be set), then the logger, the
// AWS configuration and the audit sink of function. The Logger is set even when err
// is, so main can report the failure.
func LoadAudited(ctx context.Context, getenv func(string) string, stdout io.Writer, function string, required ...string) (Audited, error) {
	var a Audited
	cfg, err := Load(getenv, required...)
	a.Config = cfg
	a.Logger = NewLogger(metrics.FallbackWatcher(stdout, metrics.New(stdout, function)), cfg.LogLevel, function)
	if err != nil {
		return a, err
	}
	if a.AWS, err = AWSConfig(); err != nil {
		return a, err
	}
	a.Audit = AuditSink(kinesis.NewFromConfig(a.AWS), cfg.AuditStream, stdout, function, a.Logger)
	return a, nil
}
