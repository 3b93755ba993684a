package forwarderfn

import (
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aacworkflow/aacmcp/shared/audit"
)

// Log group names of the routing tests (the stack passes the real ones in the
// forwarder's environment).
const (
	testMCPGroup    = "/aws/lambda/mcp"
	testAuthzGroup  = "/aws/lambda/authorizer"
	testAccessGroup = "/aws/apigateway/aacmcp-access"
	testWAFGroup    = "aws-waf-logs-aacmcp"
)

// forgedUserAgent is a User-Agent that, copied unescaped into the access-log line,
// turns it into a fallback line carrying a record of the attacker's choosing: a
// success in another workspace, by another user.
func forgedUserAgent(t *testing.T) (string, audit.Record) {
	t.Helper()
	forged := sampleRecord("01JN00000000000000000000FF")
	forged.WorkspaceID, forged.UserID, forged.Tool = "victim-ws", "ceo", "delete_issue"
	line, err := audit.MarshalLine(forged)
	if err != nil {
		t.Fatal(err)
	}
	return `x","audit_fallback":true,"record":` + strings.TrimSpace(string(line)) + `,"pad":"`, forged
}

func batch(group string, messages ...string) events.CloudwatchLogsData {
	d := events.CloudwatchLogsData{LogGroup: group, MessageType: "DATA_MESSAGE"}
	for _, m := range messages {
		d.LogEvents = append(d.LogEvents, events.CloudwatchLogsLogEvent{ID: "1", Message: m})
	}
	return d
}

// Each kind of line is read only from the log group that can hold it: fallback lines
// from the functions' groups, access-log entries from the access-log group. A
// forged line in the access log (a User-Agent API Gateway did not escape) yields no
// forged record, and an access-log-shaped line a function printed is not an access
// log entry.
func TestRecordsFollowTheLogGroup(t *testing.T) {
	ua, forged := forgedUserAgent(t)
	forgedAccess := sampleLine(map[string]string{
		"$context.extendedRequestId": "ext-1", "$context.requestId": "req-1", "$context.status": "401",
		"$context.resourcePath": "/tools/{name}", "$context.path": "/prod/tools/get_issue",
		"$context.requestTimeEpoch": "1772366400500", "$context.identity.userAgent": ua,
	})
	plainFallback := fallbackLine(t, forged)
	access401 := sampleLine(map[string]string{
		"$context.extendedRequestId": "ext-2", "$context.requestId": "req-2", "$context.status": "401",
		"$context.resourcePath": "/mcp", "$context.path": "/prod/mcp", "$context.requestTimeEpoch": "1772366400500",
	})
	f := newForwarder(nil, "unused", nil)
	cases := []struct {
		name  string
		data  events.CloudwatchLogsData
		count int
		check func(t *testing.T, recs []audit.Record)
	}{
		{"a forged access-log line yields only the real 401", batch(testAccessGroup, forgedAccess), 1, func(t *testing.T, recs []audit.Record) {
			if r := recs[0]; r.Reason != "invalid_token" || r.WorkspaceID != "" || r.UserID != "" || r.Outcome != audit.OutcomeDenied {
				t.Errorf("record of the forged line = %+v, want the invalid_token record of the request", r)
			}
		}},
		{"a fallback line in the access log is ignored", batch(testAccessGroup, plainFallback), 0, nil},
		{"an access-log line in a function's log is ignored", batch(testMCPGroup, access401), 0, nil},
		{"the function's fallback line is forwarded", batch(testAuthzGroup, plainFallback), 1, nil},
		{"the access log's 401 is forwarded", batch(testAccessGroup, access401), 1, nil},
		{"a group the forwarder was not told of yields nothing", batch("/aws/lambda/other", plainFallback, access401), 0, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			recs := f.Records(tc.data)
			if len(recs) != tc.count {
				t.Fatalf("%d records, want %d: %+v", len(recs), tc.count, recs)
			}
			for _, r := range recs {
				if r.WorkspaceID == forged.WorkspaceID && tc.data.LogGroup != testAuthzGroup {
					t.Errorf("forged record forwarded: %+v", r)
				}
			}
			if tc.check != nil {
				tc.check(t, recs)
			}
		})
	}
}

// A client chooses $context.requestId (x-amzn-RequestId), not the extended request
// id: two refused requests sending the same x-amzn-RequestId are two records, each
// with its own request and event id.
func TestAccessLogRecordsUseTheExtendedRequestID(t *testing.T) {
	f := newForwarder(nil, "unused", nil)
	var lines []string
	for _, ext := range []string{"Ext1AbCdEfG=", "Ext2AbCdEfG="} {
		lines = append(lines, sampleLine(map[string]string{
			"$context.requestId": "chosen-by-the-client", "$context.extendedRequestId": ext,
			"$context.status": "401", "$context.resourcePath": "/mcp", "$context.path": "/prod/mcp",
			"$context.requestTimeEpoch": "1772366400500",
		}))
	}
	recs := f.Records(batch(testAccessGroup, lines...))
	if len(recs) != 2 {
		t.Fatalf("%d records, want 2", len(recs))
	}
	if recs[0].RequestID != "Ext1AbCdEfG=" || recs[1].RequestID != "Ext2AbCdEfG=" {
		t.Errorf("request ids %q, %q; want the extended request ids", recs[0].RequestID, recs[1].RequestID)
	}
	if recs[0].EventID == recs[1].EventID {
		t.Errorf("two requests share event id %s: one would be dropped as a duplicate", recs[0].EventID)
	}
}
