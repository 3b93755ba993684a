// Package kinesis is the production audit sink: one PutRecord per record into the
// audit stream, which Firehose files into S3 for Athena.
//
// Delivery is synchronous (the response waits for it) and bounded: a few attempts
// within a total budget well under the Lambda timeout. When the stream cannot be
// reached in time the record is written as one JSON line on stdout marked
// "audit_fallback": true; a CloudWatch Logs subscription forwards those lines back
// into the stream (ParseFallbackLine reads them), so a Kinesis outage delays records
// but loses none.
package kinesis

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsretry "github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/retry"
)

// KinesisAPI is the part of *kinesis.Client the sink uses.
type KinesisAPI interface {
	PutRecord(ctx context.Context, in *kinesis.PutRecordInput, optFns ...func(*kinesis.Options)) (*kinesis.PutRecordOutput, error)
}

// Defaults. The budget leaves most of a typical 10-30 s Lambda timeout to the tool
// call itself; three attempts ride out a throttling burst or one dropped connection.
const (
	DefaultAttempts       = 3
	DefaultTimeout        = 2 * time.Second
	DefaultAttemptTimeout = 800 * time.Millisecond
	DefaultBackoff        = 50 * time.Millisecond
	// DeadlineMargin is kept free before the caller's deadline so that the fallback
	// line is written before Lambda freezes or kills the function.
	DeadlineMargin = 250 * time.Millisecond
)

// Sink writes records to a Kinesis data stream. It implements audit.Sink and is safe
// for concurrent use.
type Sink struct {
	client         KinesisAPI
	stream         string
	attempts       int
	timeout        time.Duration
	attemptTimeout time.Duration
	backoff        time.Duration
	log            *slog.Logger
	now            func() time.Time

	outMu sync.Mutex
	out   io.Writer
}

// Option configures a Sink.
type Option func(*Sink)

// WithAttempts sets the number of PutRecord attempts (at least 1).
func WithAttempts(n int) Option {
	return func(s *Sink) { s.attempts = max(n, 1) }
}

// WithTimeout sets the budget for all attempts together; the caller's context
// deadline (minus DeadlineMargin) caps it further.
func WithTimeout(d time.Duration) Option { return func(s *Sink) { s.timeout = d } }

// WithAttemptTimeout caps a single attempt, so one hung connection cannot use the
// whole budget.
func WithAttemptTimeout(d time.Duration) Option { return func(s *Sink) { s.attemptTimeout = d } }

// WithBackoff sets the base delay before the second attempt; it doubles after each
// attempt, jittered by ±50% so that throttled instances do not retry in step.
func WithBackoff(d time.Duration) Option { return func(s *Sink) { s.backoff = d } }

// WithFallback sets where fallback lines go (default os.Stdout, which Lambda sends to
// CloudWatch Logs).
func WithFallback(w io.Writer) Option { return func(s *Sink) { s.out = w } }

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(s *Sink) { s.log = l } }

// New returns a sink for stream, a stream name or ARN.
func New(client KinesisAPI, stream string, opts ...Option) *Sink {
	s := &Sink{
		client:         client,
		stream:         stream,
		attempts:       DefaultAttempts,
		timeout:        DefaultTimeout,
		attemptTimeout: DefaultAttemptTimeout,
		backoff:        DefaultBackoff,
		log:            slog.Default(),
		now:            time.Now,
		out:            os.Stdout,
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// FallbackLine is the shape of a fallback line on stdout.
type FallbackLine struct {
	AuditFallback bool         `json:"audit_fallback"`
	Reason        string       `json:"reason"`
	Record        audit.Record `json:"record"`
}

// Fallback reasons.
const (
	ReasonUnavailable = "kinesis_unavailable" // attempts or budget exhausted
	ReasonRejected    = "kinesis_rejected"    // an error retrying cannot fix
)

// Write puts r on the stream. It returns nil once the stream has acknowledged the
// record or the fallback line is written; it fails only for a record that cannot be
// encoded or a fallback line that cannot be written.
func (s *Sink) Write(ctx context.Context, r audit.Record) error {
	if err := r.Validate(); err != nil {
		return apperr.Internal(err)
	}
	line, err := audit.MarshalLine(r)
	if err != nil {
		return apperr.Internal(err)
	}
	attempts, putErr := s.put(ctx, r.EventID, line)
	if putErr == nil {
		return nil
	}
	reason := ReasonUnavailable
	if !retryable(putErr) {
		reason = ReasonRejected
	}
	s.log.Warn("audit record not put on the stream; written as a fallback line",
		"event_id", r.EventID, "stream", s.stream, "attempts", attempts, "reason", reason, "err", putErr)
	if err := s.writeFallback(reason, r); err != nil {
		return apperr.Internal(fmt.Errorf("audit: kinesis failed (%v) and fallback failed: %w", putErr, err))
	}
	return nil
}

// put runs the bounded attempts. The budget is cut loose from ctx's cancellation (a
// client that hung up must not cost the record) but not from its deadline.
func (s *Sink) put(ctx context.Context, eventID string, data []byte) (int, error) {
	deadline := s.now().Add(s.timeout)
	if dl, ok := ctx.Deadline(); ok && dl.Add(-DeadlineMargin).Before(deadline) {
		deadline = dl.Add(-DeadlineMargin)
	}
	bctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
	defer cancel()

	in := &kinesis.PutRecordInput{Data: data, PartitionKey: aws.String(eventID)}
	if strings.HasPrefix(s.stream, "arn:") {
		in.StreamARN = aws.String(s.stream)
	} else {
		in.StreamName = aws.String(s.stream)
	}
	// The SDK's own retryer would multiply our attempts; retry.Do is the only loop.
	once := func(o *kinesis.Options) { o.RetryMaxAttempts = 1 }

	n := 0
	err := retry.Do(bctx, retry.Policy{
		Attempts: s.attempts,
		// ±50% around a doubling s.backoff: the top of that range is 3/2 of it, and
		// the range is two thirds of the top.
		Base:      s.backoff * 3 / 2,
		Jitter:    2.0 / 3,
		Retryable: retryable,
	}, func(attempt int) error {
		n = attempt
		actx, cancel := context.WithTimeout(bctx, s.attemptTimeout)
		defer cancel()
		_, err := s.client.PutRecord(actx, in, once)
		return err
	})
	return n, err
}

// retryable reports whether another attempt may succeed: throttling, 5xx, connection
// failures and timeouts, by the SDK's own classification.
func retryable(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	return awsretry.IsErrorRetryables(awsretry.DefaultRetryables).IsErrorRetryable(err) == aws.TrueTernary
}

func (s *Sink) writeFallback(reason string, r audit.Record) error {
	if r.ScopesProvided == nil {
		r.ScopesProvided = []string{}
	}
	if r.ScopesRequired == nil {
		r.ScopesRequired = []string{}
	}
	b, err := json.Marshal(FallbackLine{AuditFallback: true, Reason: reason, Record: r})
	if err != nil {
		return err
	}
	b = append(b, '\n')
	// One Write per line under the mutex: concurrent fallbacks never interleave.
	s.outMu.Lock()
	defer s.outMu.Unlock()
	_, err = s.out.Write(b)
	return err
}

// ParseFallbackLine reads a fallback line (as found in the function's log stream) and
// returns its record. ok is false for any other line, including a fallback line
// whose record is not valid.
func ParseFallbackLine(line []byte) (audit.Record, bool) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return audit.Record{}, false
	}
	var fl struct {
		AuditFallback bool            `json:"audit_fallback"`
		Record        json.RawMessage `json:"record"`
	}
	if err := json.Unmarshal(line, &fl); err != nil || !fl.AuditFallback || len(fl.Record) == 0 {
		return audit.Record{}, false
	}
	r, err := audit.UnmarshalLine(fl.Record)
	if err != nil {
		return audit.Record{}, false
	}
	return r, true
}
