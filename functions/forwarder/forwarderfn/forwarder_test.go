package forwarderfn

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	ktypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/audit/audittest"
	auditkinesis "github.com/aacworkflow/aacmcp/shared/audit/kinesis"
	"github.com/aacworkflow/aacmcp/shared/catalog"
	"github.com/aacworkflow/aacmcp/shared/metrics"
	"github.com/aacworkflow/aacmcp/test/emulator"
)

var (
	kin *emulator.Server
	kc  *kinesis.Client
)

func TestMain(m *testing.M) {
	s, err := emulator.Start(context.Background(), emulator.Kinesalite)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	kin, kc = s, kinesis.NewFromConfig(s.AWSConfig())
	code := m.Run()
	s.Stop()
	os.Exit(code)
}

var streams int

// newStream creates a fresh one-shard stream.
func newStream(t *testing.T) string {
	t.Helper()
	streams++
	name := fmt.Sprintf("audit-%d", streams)
	ctx := context.Background()
	if _, err := kc.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String(name), ShardCount: aws.Int32(1)}); err != nil {
		t.Fatal(err)
	}
	w := kinesis.NewStreamExistsWaiter(kc, func(o *kinesis.StreamExistsWaiterOptions) { o.MinDelay = 50 * time.Millisecond })
	if err := w.Wait(ctx, &kinesis.DescribeStreamInput{StreamName: aws.String(name)}, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	return name
}

func readStream(t *testing.T, stream string) []audit.Record {
	t.Helper()
	ctx := context.Background()
	it, err := kc.GetShardIterator(ctx, &kinesis.GetShardIteratorInput{
		StreamName: aws.String(stream), ShardId: aws.String("shardId-000000000000"),
		ShardIteratorType: ktypes.ShardIteratorTypeTrimHorizon,
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := kc.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: it.ShardIterator})
	if err != nil {
		t.Fatal(err)
	}
	var recs []audit.Record
	for _, r := range out.Records {
		rec, err := audit.UnmarshalLine(r.Data)
		if err != nil {
			t.Fatalf("record on the stream: %v", err)
		}
		if aws.ToString(r.PartitionKey) != rec.EventID {
			t.Errorf("partition key %q, want event id %s", aws.ToString(r.PartitionKey), rec.EventID)
		}
		recs = append(recs, rec)
	}
	return recs
}

// logsEvent encodes messages the way CloudWatch Logs delivers a subscription batch.
func logsEvent(t testing.TB, group string, messages ...string) events.CloudwatchLogsEvent {
	t.Helper()
	data := events.CloudwatchLogsData{
		Owner: "123456789012", LogGroup: group, LogStream: "2026/03/01/[$LATEST]abc",
		SubscriptionFilters: []string{"audit"}, MessageType: "DATA_MESSAGE",
	}
	for i, m := range messages {
		data.LogEvents = append(data.LogEvents, events.CloudwatchLogsLogEvent{ID: fmt.Sprint(i), Timestamp: 1772366400000, Message: m})
	}
	raw, err := json.Marshal(data)
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(raw)
	_ = zw.Close()
	return events.CloudwatchLogsEvent{AWSLogs: events.CloudwatchLogsRawData{Data: base64.StdEncoding.EncodeToString(gz.Bytes())}}
}

func sampleRecord(id string) audit.Record {
	return audit.Record{
		EventID: id, EventVersion: audit.EventVersion, Timestamp: "2026-03-01T11:59:59.250Z",
		Tool: "get_issue", Outcome: "success", ScopesProvided: []string{"issues:read"}, ScopesRequired: []string{"issues:read"},
		WorkspaceID: "ws1", UserID: "u1", TokenID: "tok_1", ReadOnly: true, RequestID: "r1", Transport: "mcp",
		DurationMS: 12, EventType: audit.EventToolCall,
	}
}

// fallbackLine prints rec the way the Kinesis sink does when the stream is down.
func fallbackLine(t testing.TB, rec audit.Record) string {
	t.Helper()
	var buf bytes.Buffer
	// The production sink writes its fallback line when the stream cannot be
	// reached: point it at a closed port with no retries.
	cfg := kin.AWSConfig()
	cfg.BaseEndpoint = aws.String("http://127.0.0.1:1")
	cfg.RetryMaxAttempts = 1
	sink := auditkinesis.New(kinesis.NewFromConfig(cfg), "nowhere", auditkinesis.WithFallback(&buf), auditkinesis.WithAttempts(1), auditkinesis.WithLogger(slog.New(slog.NewJSONHandler(io.Discard, nil))))
	if err := sink.Write(context.Background(), rec); err != nil {
		t.Fatalf("sink with fallback failed: %v", err)
	}
	line := bytes.TrimSpace(buf.Bytes())
	if _, ok := auditkinesis.ParseFallbackLine(line); !ok {
		t.Fatalf("sink's fallback line not recognised: %s", line)
	}
	return string(line)
}

func newForwarder(client PutRecordsAPI, stream string, emf io.Writer) *Forwarder {
	return New(Config{
		Client: client, Stream: stream, Tools: catalog.New(catalog.Deps{}),
		FunctionLogGroups: []string{testMCPGroup, testAuthzGroup}, AccessLogGroup: testAccessGroup, WAFLogGroup: testWAFGroup,
		Metrics: metrics.New(emf, FunctionName), Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
		BaseDelay: time.Millisecond,
	})
}

func TestHandleForwardsFallbackAndRefusedRequests(t *testing.T) {
	stream := newStream(t)
	orig := sampleRecord("01JN0000000000000000000001")
	// A connector's call, and a line a function still on the 1.0 build wrote.
	oauth := sampleRecord("01JN0000000000000000000002")
	oauth.ClientID = "https://claude.ai/oauth/mcp-oauth-client-metadata"
	legacy := sampleRecord("01JN0000000000000000000003")
	legacyLine := `{"audit_fallback":true,"reason":"kinesis_unavailable","record":` +
		strings.TrimSpace(string(audittest.LegacyLine(legacy))) + `}`
	access401 := sampleLine(map[string]string{
		"$context.extendedRequestId": "req-401", "$context.status": "401", "$context.resourcePath": "/tools/{name}",
		"$context.path": "/prod/tools/list_issues", "$context.requestTimeEpoch": "1772366400500",
		"$context.identity.sourceIp": "203.0.113.5", "$context.httpMethod": "POST",
	})
	accessAuthorized401 := sampleLine(map[string]string{
		"$context.extendedRequestId": "req-401b", "$context.status": "401", "$context.authorizer.status": "401",
		"$context.authorizer.latency": "9", "$context.authorizer.requestId": "x",
	})
	access200 := sampleLine(map[string]string{"$context.extendedRequestId": "req-200", "$context.status": "200"})
	var emf bytes.Buffer
	f := newForwarder(kc, stream, &emf)
	fromFunction := logsEvent(t, testMCPGroup,
		"START RequestId: 1 Version: $LATEST",
		fallbackLine(t, orig),
		fallbackLine(t, oauth),
		legacyLine,
		`{"level":"INFO","msg":"request"}`,
	)
	fromAccessLog := logsEvent(t, testAccessGroup, access401, accessAuthorized401, access200)
	for _, ev := range []events.CloudwatchLogsEvent{fromFunction, fromAccessLog} {
		if err := f.Handle(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
	}
	recs := readStream(t, stream)
	if len(recs) != 4 {
		t.Fatalf("stream holds %d records, want 4: %+v", len(recs), recs)
	}
	if got := recs[0]; !reflect.DeepEqual(got, orig) {
		t.Errorf("fallback record changed on the way: %+v", got)
	}
	if got := recs[1]; !reflect.DeepEqual(got, oauth) {
		t.Errorf("connector's record changed on the way: %+v", got)
	}
	// The 1.0 record is forwarded as the tool call it was, still saying 1.0.
	wantLegacy := audittest.AsLegacy(legacy, audit.EventVersion10)
	if got := recs[2]; !reflect.DeepEqual(got, wantLegacy) {
		t.Errorf("1.0 record = %+v\nwant %+v", got, wantLegacy)
	}
	if got := recs[3]; got.RequestID != "req-401" || got.Reason != "invalid_token" || got.Tool != "list_issues" ||
		got.SourceIP != "203.0.113.5" || got.Timestamp != "2026-03-01T12:00:00.500Z" ||
		got.EventType != audit.EventToolCall || got.ClientID != "" || got.Action != "" {
		t.Errorf("access-log record = %+v", got)
	}
	if !bytes.Contains(emf.Bytes(), []byte(`"ForwardedRecords":3`)) || !bytes.Contains(emf.Bytes(), []byte(`"ForwardedRecords":1`)) {
		t.Errorf("no EMF count line: %s", emf.String())
	}
	// A control message (sent when a subscription is created) is acknowledged.
	ctl := logsEvent(t, "/aws/lambda/mcp")
	data, _ := ctl.AWSLogs.Parse()
	data.MessageType = "CONTROL_MESSAGE"
	if err := f.Handle(context.Background(), reencode(t, data)); err != nil {
		t.Errorf("control message: %v", err)
	}
	// An undecodable batch fails (and goes to the on-failure destination).
	if err := f.Handle(context.Background(), events.CloudwatchLogsEvent{AWSLogs: events.CloudwatchLogsRawData{Data: "%%%"}}); err == nil {
		t.Error("garbage batch accepted")
	}
}

func reencode(t *testing.T, d events.CloudwatchLogsData) events.CloudwatchLogsEvent {
	t.Helper()
	raw, _ := json.Marshal(d)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(raw)
	_ = zw.Close()
	return events.CloudwatchLogsEvent{AWSLogs: events.CloudwatchLogsRawData{Data: base64.StdEncoding.EncodeToString(gz.Bytes())}}
}

// throttling sits in front of the real client and refuses some entries the way a
// throttled shard does: the call succeeds, FailedRecordCount > 0, and the refused
// entries carry an error code.
type throttling struct {
	real *kinesis.Client
	// refuse decides per call (1-based) and entry index whether to refuse it.
	refuse func(call, i int) bool

	mu    sync.Mutex
	calls int
}

func (th *throttling) PutRecords(ctx context.Context, in *kinesis.PutRecordsInput, opts ...func(*kinesis.Options)) (*kinesis.PutRecordsOutput, error) {
	th.mu.Lock()
	th.calls++
	call := th.calls
	th.mu.Unlock()
	var pass []ktypes.PutRecordsRequestEntry
	results := make([]ktypes.PutRecordsResultEntry, len(in.Records))
	failed := int32(0)
	for i, e := range in.Records {
		if th.refuse(call, i) {
			results[i] = ktypes.PutRecordsResultEntry{
				ErrorCode:    aws.String("ProvisionedThroughputExceededException"),
				ErrorMessage: aws.String("Rate exceeded for shard"),
			}
			failed++
			continue
		}
		pass = append(pass, e)
	}
	if len(pass) > 0 {
		out, err := th.real.PutRecords(ctx, &kinesis.PutRecordsInput{StreamName: in.StreamName, Records: pass}, opts...)
		if err != nil {
			return nil, err
		}
		j := 0
		for i := range results {
			if results[i].ErrorCode == nil {
				results[i] = out.Records[j]
				j++
			}
		}
	}
	return &kinesis.PutRecordsOutput{FailedRecordCount: aws.Int32(failed), Records: results}, nil
}

func TestPutRetriesOnlyRefusedEntries(t *testing.T) {
	tests := []struct {
		name      string
		records   int
		refuse    func(call, i int) bool
		wantErr   bool
		wantCalls int
	}{
		{name: "partial failure then success", records: 5, refuse: func(call, i int) bool { return call == 1 && i%2 == 0 }, wantCalls: 2},
		{name: "two rounds of throttling", records: 3, refuse: func(call, i int) bool { return call <= 2 && i == 0 }, wantCalls: 3},
		{name: "more than one batch", records: maxBatch + 3, refuse: func(int, int) bool { return false }, wantCalls: 2},
		{name: "never accepted", records: 2, refuse: func(call, i int) bool { return call > 1 || i == 1 }, wantErr: true, wantCalls: defaultAttempts},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stream := newStream(t)
			th := &throttling{real: kc, refuse: tt.refuse}
			f := newForwarder(th, stream, io.Discard)
			var recs []audit.Record
			for i := range tt.records {
				recs = append(recs, sampleRecord(fmt.Sprintf("01JN%022d", i)))
			}
			err := f.Put(context.Background(), recs)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if th.calls != tt.wantCalls {
				t.Errorf("%d PutRecords calls, want %d", th.calls, tt.wantCalls)
			}
			got := readStream(t, stream)
			want := tt.records
			if tt.wantErr {
				want = tt.records - 1
			}
			if len(got) != want {
				t.Fatalf("%d records on the stream, want %d (each exactly once)", len(got), want)
			}
			seen := map[string]bool{}
			for _, r := range got {
				if seen[r.EventID] {
					t.Fatalf("record %s put twice", r.EventID)
				}
				seen[r.EventID] = true
			}
		})
	}
}

func FuzzRecordsOfLogLines(f *testing.F) {
	f.Add(`{"audit_fallback":true,"record":{}}`)
	f.Add(`{"requestId":"r","status":"401","resourcePath":"/mcp"}`)
	f.Add("START RequestId: x")
	f.Add(`{"timestamp":1772366400000,"action":"BLOCK","httpRequest":{"uri":"/prod/tools/get_issue","headers":[]}}`)
	fw := newForwarder(nil, "unused", io.Discard)
	f.Fuzz(func(t *testing.T, line string) {
		// Every line is tried as each kind of group would read it.
		for _, group := range []string{testMCPGroup, testAccessGroup, testWAFGroup, ""} {
			d := events.CloudwatchLogsData{LogGroup: group, LogEvents: []events.CloudwatchLogsLogEvent{{ID: "1", Message: line}}}
			for _, r := range fw.Records(d) {
				if err := r.Validate(); err != nil {
					t.Fatalf("invalid record from %q in %q: %v", line, group, err)
				}
				if group != testMCPGroup && (r.WorkspaceID != "" || r.Outcome != audit.OutcomeDenied) {
					t.Fatalf("a line of %q made a record that names a workspace or does not deny: %+v", group, r)
				}
			}
		}
	})
}
