package metrics

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/audit"
)

// emfLine is the part of an EMF line CloudWatch reads.
type emfLine struct {
	AWS struct {
		Timestamp         int64 `json:"Timestamp"`
		CloudWatchMetrics []struct {
			Namespace  string     `json:"Namespace"`
			Dimensions [][]string `json:"Dimensions"`
			Metrics    []struct {
				Name string `json:"Name"`
				Unit string `json:"Unit"`
			} `json:"Metrics"`
		} `json:"CloudWatchMetrics"`
	} `json:"_aws"`
}

// checkEMF validates one line the way CloudWatch would: valid JSON, _aws metadata,
// namespace, every declared metric present as a number and every dimension present as
// a string at the top level. It returns the top-level fields.
func checkEMF(t *testing.T, line []byte) map[string]any {
	t.Helper()
	var meta emfLine
	if err := json.Unmarshal(line, &meta); err != nil {
		t.Fatalf("line is not JSON: %v: %s", err, line)
	}
	var top map[string]any
	if err := json.Unmarshal(line, &top); err != nil {
		t.Fatal(err)
	}
	if meta.AWS.Timestamp <= 0 {
		t.Errorf("_aws.Timestamp missing: %s", line)
	}
	if len(meta.AWS.CloudWatchMetrics) == 0 {
		t.Fatalf("no CloudWatchMetrics directive: %s", line)
	}
	for _, d := range meta.AWS.CloudWatchMetrics {
		if d.Namespace != Namespace {
			t.Errorf("namespace %q, want %q", d.Namespace, Namespace)
		}
		if len(d.Dimensions) == 0 || len(d.Metrics) == 0 {
			t.Errorf("directive without dimensions or metrics: %s", line)
		}
		for _, set := range d.Dimensions {
			if len(set) > 30 {
				t.Errorf("dimension set too large: %v", set)
			}
			for _, dim := range set {
				if _, ok := top[dim].(string); !ok {
					t.Errorf("dimension %s is not a top-level string: %s", dim, line)
				}
			}
		}
		for _, m := range d.Metrics {
			if _, ok := top[m.Name].(float64); !ok {
				t.Errorf("metric %s is not a top-level number: %s", m.Name, line)
			}
			if m.Unit != UnitCount && m.Unit != UnitMilliseconds {
				t.Errorf("metric %s has unit %q", m.Name, m.Unit)
			}
		}
	}
	return top
}

func declared(t *testing.T, line []byte) map[string][][]string {
	t.Helper()
	var meta emfLine
	if err := json.Unmarshal(line, &meta); err != nil {
		t.Fatal(err)
	}
	out := map[string][][]string{}
	for _, d := range meta.AWS.CloudWatchMetrics {
		for _, m := range d.Metrics {
			out[m.Name] = append(out[m.Name], d.Dimensions...)
		}
	}
	return out
}

func TestCall(t *testing.T) {
	fixed := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name       string
		rec        audit.Record
		wantDenied bool
		wantErrors float64
		wantReason string
	}{
		{
			name: "success",
			rec:  audit.Record{Tool: "list_issues", Outcome: "success", DurationMS: 12, EventID: "E1"},
		},
		{
			name:       "denied with reason",
			rec:        audit.Record{Tool: "delete_issue", Outcome: "denied", Reason: "destructive_flag_missing", DurationMS: 3},
			wantDenied: true,
			wantReason: "destructive_flag_missing",
		},
		{
			name:       "denied without a reason",
			rec:        audit.Record{Tool: "", Outcome: "denied"},
			wantDenied: true,
			wantReason: "unknown",
		},
		{
			name:       "error",
			rec:        audit.Record{Tool: "get_issue", Outcome: "error", Reason: "not_found", DurationMS: 7},
			wantErrors: 1,
			wantReason: "not_found",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			e := New(&buf, "mcp").WithClock(func() time.Time { return fixed })
			if err := e.Call(tt.rec); err != nil {
				t.Fatal(err)
			}
			line := buf.Bytes()
			if bytes.Count(line, []byte("\n")) != 1 || line[len(line)-1] != '\n' {
				t.Fatalf("want exactly one line, got %q", line)
			}
			top := checkEMF(t, line)
			if got := top["_aws"].(map[string]any)["Timestamp"].(float64); int64(got) != fixed.UnixMilli() {
				t.Errorf("Timestamp %v, want %d", got, fixed.UnixMilli())
			}
			if top[DimFunction] != "mcp" || top[MetricCalls] != 1.0 {
				t.Errorf("Function/Calls wrong: %v", top)
			}
			if top[MetricErrors] != tt.wantErrors {
				t.Errorf("Errors = %v, want %v", top[MetricErrors], tt.wantErrors)
			}
			if top[MetricLatencyMs] != float64(tt.rec.DurationMS) {
				t.Errorf("LatencyMs = %v, want %d", top[MetricLatencyMs], tt.rec.DurationMS)
			}
			if top["Tool"] != tt.rec.Tool {
				t.Errorf("Tool = %v", top["Tool"])
			}
			if tt.wantReason != "" && top[DimReason] != tt.wantReason {
				t.Errorf("Reason = %v, want %s", top[DimReason], tt.wantReason)
			}
			dims := declared(t, line)
			_, hasDenied := dims[MetricDenied]
			if hasDenied != tt.wantDenied {
				t.Fatalf("Denied declared = %v, want %v", hasDenied, tt.wantDenied)
			}
			if tt.wantDenied {
				if top[MetricDenied] != 1.0 {
					t.Errorf("Denied = %v", top[MetricDenied])
				}
				if !slices.ContainsFunc(dims[MetricDenied], func(s []string) bool {
					return slices.Equal(s, []string{DimFunction, DimReason})
				}) {
					t.Errorf("Denied not published by Function+Reason: %v", dims[MetricDenied])
				}
			}
			for _, m := range []string{MetricCalls, MetricErrors, MetricLatencyMs} {
				if !slices.ContainsFunc(dims[m], func(s []string) bool { return slices.Equal(s, []string{DimFunction}) }) {
					t.Errorf("%s not published by Function: %v", m, dims[m])
				}
			}
		})
	}
}

func TestAuditFallbackAndCount(t *testing.T) {
	var buf bytes.Buffer
	e := New(&buf, "authorizer")
	if err := e.AuditFallback(); err != nil {
		t.Fatal(err)
	}
	if err := e.Count("Forwarded", 3); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 lines, got %q", buf.String())
	}
	top := checkEMF(t, []byte(lines[0]))
	if top[MetricAuditFallback] != 1.0 || top[DimFunction] != "authorizer" {
		t.Errorf("fallback line wrong: %v", top)
	}
	top = checkEMF(t, []byte(lines[1]))
	if top["Forwarded"] != 3.0 {
		t.Errorf("count line wrong: %v", top)
	}
}

type sinkFunc func(context.Context, audit.Record) error

func (f sinkFunc) Write(ctx context.Context, r audit.Record) error { return f(ctx, r) }

func TestSinkEmitsOneLinePerRecordAndPassesErrors(t *testing.T) {
	var buf bytes.Buffer
	boom := errors.New("stream down")
	var delivered []string
	s := Sink{
		Next: sinkFunc(func(_ context.Context, r audit.Record) error {
			delivered = append(delivered, r.EventID)
			if r.EventID == "bad" {
				return boom
			}
			return nil
		}),
		Emitter: New(&buf, "mcp"),
	}
	if err := s.Write(context.Background(), audit.Record{EventID: "ok", Outcome: "success"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(context.Background(), audit.Record{EventID: "bad", Outcome: "success"}); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the sink's", err)
	}
	if !slices.Equal(delivered, []string{"ok", "bad"}) {
		t.Errorf("delivered %v", delivered)
	}
	sc := bufio.NewScanner(&buf)
	n := 0
	for sc.Scan() {
		checkEMF(t, sc.Bytes())
		n++
	}
	if n != 2 {
		t.Errorf("want 2 EMF lines, got %d", n)
	}
}

// Concurrent calls must never interleave inside a line.
func TestConcurrentLinesStayWhole(t *testing.T) {
	var buf bytes.Buffer
	e := New(&buf, "mcp")
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() { _ = e.Call(audit.Record{Tool: "list_issues", Outcome: "success", DurationMS: int64(i)}) })
	}
	wg.Wait()
	sc := bufio.NewScanner(&buf)
	n := 0
	for sc.Scan() {
		checkEMF(t, sc.Bytes())
		n++
	}
	if n != 50 {
		t.Errorf("want 50 lines, got %d", n)
	}
}

func TestFallbackWatcher(t *testing.T) {
	var out bytes.Buffer
	e := New(&out, "mcp")
	w := FallbackWatcher(&out, e)
	lines := []string{
		`{"level":"INFO","msg":"ok"}` + "\n",
		`{"audit_fallback":true,"record":{"event_id":"x"}}` + "\n",
		`{"level":"ERROR","msg":"audit record not delivered","audit_fallback":true}` + "\n",
		`{"audit_fallback":false}` + "\n",
	}
	for _, l := range lines {
		if _, err := w.Write([]byte(l)); err != nil {
			t.Fatal(err)
		}
	}
	var passed, fallbacks int
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		if _, ok := m["_aws"]; ok {
			checkEMF(t, sc.Bytes())
			if m[MetricAuditFallback] != 1.0 {
				t.Errorf("EMF line without AuditFallback: %v", m)
			}
			fallbacks++
			continue
		}
		passed++
	}
	if passed != len(lines) || fallbacks != 2 {
		t.Errorf("passed %d lines (want %d), %d fallback metrics (want 2)", passed, len(lines), fallbacks)
	}
}
