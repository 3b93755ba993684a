// Package metrics writes CloudWatch Embedded Metric Format (EMF) lines.
//
// A Lambda function's stdout goes to CloudWatch Logs, which extracts metrics from any
// JSON line carrying an "_aws" metadata block. Emitting metrics that way costs no API
// call and no latency on the request path, and the same line stays queryable in Logs
// Insights. Every line is one complete JSON object followed by a newline, written with
// a single Write so lines of concurrent calls never interleave.
//
// Namespace AACMCP; every metric has the dimension Function (mcp, authorizer,
// forwarder). Denied is also published per Reason.
package metrics

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/audit"
)

// Namespace is the CloudWatch namespace of every metric.
const Namespace = "AACMCP"

// Metric names. The CDK dashboard and alarms refer to them.
const (
	MetricCalls         = "Calls"
	MetricDenied        = "Denied"
	MetricErrors        = "Errors"
	MetricLatencyMs     = "LatencyMs"
	MetricAuditFallback = "AuditFallback"
	// MetricForwardedRecords counts records the forwarder put back on the stream.
	MetricForwardedRecords = "ForwardedRecords"
)

// Dimension names.
const (
	DimFunction = "Function"
	DimReason   = "Reason"
)

// Units as CloudWatch spells them.
const (
	UnitCount        = "Count"
	UnitMilliseconds = "Milliseconds"
)

// Emitter writes EMF lines for one function. Safe for concurrent use.
type Emitter struct {
	function string
	now      func() time.Time

	mu sync.Mutex
	w  io.Writer
}

// New returns an Emitter writing to w (os.Stdout in a Lambda) for the named function.
func New(w io.Writer, function string) *Emitter {
	return &Emitter{w: w, function: function, now: time.Now}
}

// WithClock replaces the clock that stamps each line (tests).
func (e *Emitter) WithClock(now func() time.Time) *Emitter {
	e.now = now
	return e
}

// metricDef is one entry of a directive's Metrics list.
type metricDef struct {
	Name string `json:"Name"`
	Unit string `json:"Unit"`
}

// directive is one CloudWatchMetrics entry: every metric in it is published once per
// dimension set.
type directive struct {
	Namespace  string      `json:"Namespace"`
	Dimensions [][]string  `json:"Dimensions"`
	Metrics    []metricDef `json:"Metrics"`
}

type awsMeta struct {
	Timestamp         int64       `json:"Timestamp"`
	CloudWatchMetrics []directive `json:"CloudWatchMetrics"`
}

// Call writes the line of one audited call: Calls=1, Errors (outcome error),
// LatencyMs, and Denied=1 by Reason when the call was denied. Tool, outcome and
// reason ride along as plain properties (not dimensions: per-tool dimensions would
// multiply the metric count for little use), so Logs Insights can slice by them.
func (e *Emitter) Call(r audit.Record) error {
	denied := r.Outcome == string(apperr.OutcomeDenied)
	errored := r.Outcome == string(apperr.OutcomeError)
	fields := map[string]any{
		DimFunction:     e.function,
		MetricCalls:     1,
		MetricErrors:    boolCount(errored),
		MetricLatencyMs: r.DurationMS,
		"Tool":          r.Tool,
		"Outcome":       r.Outcome,
		"Transport":     r.Transport,
		"EventId":       r.EventID,
	}
	dirs := []directive{{
		Namespace:  Namespace,
		Dimensions: [][]string{{DimFunction}},
		Metrics: []metricDef{
			{Name: MetricCalls, Unit: UnitCount},
			{Name: MetricErrors, Unit: UnitCount},
			{Name: MetricLatencyMs, Unit: UnitMilliseconds},
		},
	}}
	if denied {
		reason := r.Reason
		if reason == "" {
			reason = "unknown"
		}
		fields[DimReason] = reason
		fields[MetricDenied] = 1
		// Denied per function and per function and reason: the first feeds the
		// "spike of denials" alarm, the second the dashboard breakdown.
		dirs = append(dirs, directive{
			Namespace:  Namespace,
			Dimensions: [][]string{{DimFunction}, {DimFunction, DimReason}},
			Metrics:    []metricDef{{Name: MetricDenied, Unit: UnitCount}},
		})
	} else if r.Reason != "" {
		fields["Reason"] = r.Reason
	}
	return e.write(fields, dirs)
}

// AuditFallback writes AuditFallback=1: an audit record could not be put on the
// stream and went to the log as a fallback line instead.
func (e *Emitter) AuditFallback() error {
	return e.write(map[string]any{
		DimFunction:         e.function,
		MetricAuditFallback: 1,
	}, []directive{{
		Namespace:  Namespace,
		Dimensions: [][]string{{DimFunction}},
		Metrics:    []metricDef{{Name: MetricAuditFallback, Unit: UnitCount}},
	}})
}

// Count writes one arbitrary count metric of this function (e.g. the forwarder's
// records forwarded). name must not collide with a dimension name.
func (e *Emitter) Count(name string, n int64) error {
	return e.write(map[string]any{
		DimFunction: e.function,
		name:        n,
	}, []directive{{
		Namespace:  Namespace,
		Dimensions: [][]string{{DimFunction}},
		Metrics:    []metricDef{{Name: name, Unit: UnitCount}},
	}})
}

func (e *Emitter) write(fields map[string]any, dirs []directive) error {
	fields["_aws"] = awsMeta{Timestamp: e.now().UnixMilli(), CloudWatchMetrics: dirs}
	b, err := json.Marshal(fields)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	e.mu.Lock()
	defer e.mu.Unlock()
	_, err = e.w.Write(b)
	return err
}

func boolCount(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Sink wraps an audit sink so that every record written also produces one EMF line:
// the guard writes exactly one record per call, so this counts every call exactly
// once without touching the guard. A metrics failure never fails the call.
type Sink struct {
	Next    audit.Sink
	Emitter *Emitter
}

// Write delivers r to Next, then emits its metrics line.
func (s Sink) Write(ctx context.Context, r audit.Record) error {
	err := s.Next.Write(ctx, r)
	_ = s.Emitter.Call(r)
	return err
}

// fallbackMarker is how every audit fallback line marks itself (the Kinesis sink's
// lines and the guard's log line alike).
var fallbackMarker = []byte(`"audit_fallback":true`)

// FallbackWatcher returns a writer that passes everything to w and emits
// AuditFallback=1 on e for each write holding an audit fallback line. Put it between
// a component that prints fallback lines and stdout, so the metric follows the line
// without the component knowing about metrics. Each Write is expected to carry whole
// lines (slog handlers and the sinks write one line per call).
func FallbackWatcher(w io.Writer, e *Emitter) io.Writer {
	return &fallbackWatcher{w: w, e: e}
}

type fallbackWatcher struct {
	w io.Writer
	e *Emitter
}

func (f *fallbackWatcher) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	for range bytes.Count(p, fallbackMarker) {
		_ = f.e.AuditFallback()
	}
	return n, err
}
