// Package forwarderfn is the audit forwarder Lambda: CloudWatch Logs subscription
// batches in, audit records onto the Kinesis audit stream out.
//
// Three kinds of log lines become records, each read only from the log group that
// can hold it (Config names the groups; the CDK stack passes their names):
//   - fallback lines ("audit_fallback": true) that a function printed when it could
//     not put a record on the stream, from the functions' log groups: the record
//     inside is forwarded as is;
//   - API Gateway access-log entries of requests refused 401 without reaching the
//     authorizer (no Authorization header), from the access-log group: they become
//     invalid_token records;
//   - WAF log entries of blocked requests that name a tool, from the web ACL's log
//     group: they become waf_blocked records.
//
// The routing is the defence against forged records: an access-log line carries
// caller-chosen text (the User-Agent) that API Gateway may not escape, so a line
// there could be made to look like a fallback line holding any record. A fallback
// line is trusted only where only our own code writes. Lines of any other group,
// and everything else, are ignored. A batch is acknowledged only when every record is on
// the stream; otherwise the handler fails and the Lambda's retries and on-failure
// destination keep the batch.
package forwarderfn

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	ktypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/audit/accesslog"
	auditkinesis "github.com/aacworkflow/aacmcp/shared/audit/kinesis"
	"github.com/aacworkflow/aacmcp/shared/metrics"
	"github.com/aacworkflow/aacmcp/shared/retry"
)

// PutRecordsAPI is the Kinesis call the forwarder makes (*kinesis.Client has it).
type PutRecordsAPI interface {
	PutRecords(ctx context.Context, in *kinesis.PutRecordsInput, optFns ...func(*kinesis.Options)) (*kinesis.PutRecordsOutput, error)
}

// Kinesis PutRecords limits: 500 entries and 5 MiB per request. Records are under
// 1 KiB, so the entry count is the binding one.
const maxBatch = 500

// Defaults for retrying the entries a PutRecords call did not accept (throttling
// of a shard is the usual cause).
const (
	defaultAttempts  = 5
	defaultBaseDelay = 100 * time.Millisecond
	defaultMaxDelay  = 2 * time.Second
)

// Config wires a Forwarder.
type Config struct {
	Client PutRecordsAPI
	Stream string
	// Tools describes the tools for records made from access-log entries
	// (catalog.New(catalog.Deps{}) is enough: no handler runs).
	Tools accesslog.ToolLookup
	// FunctionLogGroups are the log groups of the functions that write audit records:
	// the only groups whose fallback lines are forwarded.
	FunctionLogGroups []string
	// AccessLogGroup is the API Gateway access-log group: the only group whose lines
	// are read as access-log entries.
	AccessLogGroup string
	// WAFLogGroup is the web ACL's log group (aws-waf-logs-*): the only group whose
	// lines are read as WAF log entries.
	WAFLogGroup string
	// TrustViewerAddress attributes WAF-blocked requests to CloudFront-Viewer-Address
	// (WAFLogEntry.ViewerAttributed): set only behind the stack's front door.
	TrustViewerAddress bool
	// Metrics receives one count line per batch; nil writes none.
	Metrics *metrics.Emitter
	Logger  *slog.Logger
	// Attempts and BaseDelay override the retry defaults (tests).
	Attempts  int
	BaseDelay time.Duration
}

// Forwarder is the handler. Safe for concurrent use.
type Forwarder struct {
	cfg Config
	log *slog.Logger
}

// New returns a Forwarder.
func New(cfg Config) *Forwarder {
	if cfg.Attempts <= 0 {
		cfg.Attempts = defaultAttempts
	}
	if cfg.BaseDelay <= 0 {
		cfg.BaseDelay = defaultBaseDelay
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Forwarder{cfg: cfg, log: log}
}

// Handle is the Lambda handler.
func (f *Forwarder) Handle(ctx context.Context, ev events.CloudwatchLogsEvent) error {
	data, err := ev.AWSLogs.Parse()
	if err != nil {
		// A batch that cannot be decoded will not decode on a retry either; failing
		// sends it to the on-failure destination where it can be inspected.
		return fmt.Errorf("decode CloudWatch Logs batch: %w", err)
	}
	if data.MessageType == "CONTROL_MESSAGE" {
		return nil
	}
	recs := f.Records(data)
	if len(recs) == 0 {
		return nil
	}
	if err := f.Put(ctx, recs); err != nil {
		return err
	}
	if f.cfg.Metrics != nil {
		_ = f.cfg.Metrics.Count(metrics.MetricForwardedRecords, int64(len(recs)))
	}
	f.log.Info("forwarded audit records", "count", len(recs), "log_group", data.LogGroup)
	return nil
}

// source is the kind of log group a batch came from.
type source int

const (
	sourceUnknown source = iota
	sourceFunction
	sourceAccessLog
	sourceWAF
)

func (f *Forwarder) sourceOf(group string) source {
	switch {
	case group == "":
		return sourceUnknown
	case slices.Contains(f.cfg.FunctionLogGroups, group):
		return sourceFunction
	case group == f.cfg.AccessLogGroup:
		return sourceAccessLog
	case group == f.cfg.WAFLogGroup:
		return sourceWAF
	}
	return sourceUnknown
}

// Records extracts the audit records of a decoded batch, in log order. A batch from
// a log group the forwarder was not configured with yields none.
func (f *Forwarder) Records(data events.CloudwatchLogsData) []audit.Record {
	src := f.sourceOf(data.LogGroup)
	if src == sourceUnknown {
		// A subscription the stack did not declare, or a renamed group: nothing in
		// it can be trusted to be what it looks like. Loud, because records may be
		// missing until the configuration is fixed.
		f.log.Error("log batch from a log group the forwarder is not configured for; ignored",
			"log_group", data.LogGroup, "events", len(data.LogEvents))
		return nil
	}
	var out []audit.Record
	for _, le := range data.LogEvents {
		r, ok := f.recordOf(src, []byte(le.Message))
		if !ok {
			continue
		}
		if err := r.Validate(); err != nil {
			// Forwarding it would put a record on the stream that the Glue table
			// cannot hold; keep it visible in this function's log instead.
			f.log.Error("log line holds an invalid audit record; not forwarded",
				"log_group", data.LogGroup, "log_event_id", le.ID, "err", err)
			continue
		}
		out = append(out, r)
	}
	return out
}

func (f *Forwarder) recordOf(src source, msg []byte) (audit.Record, bool) {
	switch src {
	case sourceFunction:
		return auditkinesis.ParseFallbackLine(msg)
	case sourceAccessLog:
		if e, ok := accesslog.Parse(msg); ok {
			return e.Record(f.cfg.Tools)
		}
	case sourceWAF:
		if e, ok := ParseWAFLog(msg); ok {
			return e.ViewerAttributed(f.cfg.TrustViewerAddress).Record(f.cfg.Tools)
		}
	}
	return audit.Record{}, false
}

// Put writes recs to the stream in batches, retrying the entries Kinesis did not
// accept. It fails when any record is still not accepted after the last attempt or
// when ctx ends.
func (f *Forwarder) Put(ctx context.Context, recs []audit.Record) error {
	for start := 0; start < len(recs); start += maxBatch {
		end := min(start+maxBatch, len(recs))
		if err := f.putBatch(ctx, recs[start:end]); err != nil {
			return err
		}
	}
	return nil
}

func (f *Forwarder) putBatch(ctx context.Context, recs []audit.Record) error {
	pending := make([]ktypes.PutRecordsRequestEntry, 0, len(recs))
	for _, r := range recs {
		line, err := audit.MarshalLine(r)
		if err != nil {
			return err
		}
		pending = append(pending, ktypes.PutRecordsRequestEntry{
			Data:         line,
			PartitionKey: aws.String(r.EventID),
		})
	}
	tried := 0
	err := retry.Do(ctx, retry.Policy{
		Attempts: f.cfg.Attempts,
		Base:     f.cfg.BaseDelay,
		Max:      defaultMaxDelay,
		// Jitter halves the chance that concurrent forwarders hit the shard together.
		Jitter: 0.5,
	}, func(attempt int) error {
		tried = attempt
		out, err := f.cfg.Client.PutRecords(ctx, &kinesis.PutRecordsInput{
			StreamName: aws.String(f.cfg.Stream),
			Records:    pending,
		})
		if err != nil {
			// The SDK already retried the call itself; one more round here covers a
			// longer throttling spell.
			f.log.Warn("PutRecords failed", "attempt", attempt, "records", len(pending), "err", err)
			return err
		}
		if out.FailedRecordCount == nil || *out.FailedRecordCount == 0 {
			pending = nil
			return nil
		}
		// Results are positional: keep exactly the entries that failed.
		var failed []ktypes.PutRecordsRequestEntry
		var lastErr error
		for i, res := range out.Records {
			if res.ErrorCode != nil && i < len(pending) {
				failed = append(failed, pending[i])
				lastErr = fmt.Errorf("%s: %s", aws.ToString(res.ErrorCode), aws.ToString(res.ErrorMessage))
			}
		}
		f.log.Warn("PutRecords partially failed", "attempt", attempt, "failed", len(failed), "of", len(pending))
		pending = failed
		return lastErr
	})
	if err != nil {
		return fmt.Errorf("put audit records: %d not accepted after %d attempt(s): %w", len(pending), tried, err)
	}
	return nil
}
