package lambdaenv

import (
	"io"
	"log/slog"

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
