package security

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/functions/forwarder/forwarderfn"
	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/audit/accesslog"
	"github.com/aacworkflow/aacmcp/shared/audit/record"
	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/catalog"
)

// hostileTexts are what a sender can put in every field it controls: long, and made
// of characters the JSON line writes as escapes (a control character takes six
// bytes, a quote two), or of bytes that are not UTF-8.
var hostileTexts = map[string]string{
	"control characters": strings.Repeat("\x01", 4096),
	"quotes":             strings.Repeat(`"`, 4096),
	"line separators":    strings.Repeat("\u2028", 2048),
	"invalid UTF-8":      strings.Repeat("\xff", 4096),
	"plain":              strings.Repeat("a", 8192),
}

// fitsTheLine fails unless rec is valid and its line is under record.MaxLine.
func fitsTheLine(t *testing.T, kind string, rec audit.Record) {
	t.Helper()
	if err := rec.Validate(); err != nil {
		t.Errorf("%s: invalid record: %v", kind, err)
	}
	line, err := audit.MarshalLine(rec)
	if err != nil {
		t.Fatalf("%s: %v", kind, err)
	}
	if n := len(line) - 1; n >= record.MaxLine {
		t.Errorf("%s: line is %d bytes, want < %d", kind, n, record.MaxLine)
	}
}

// Every kind of audit record is built by shared/audit/record, so each stays under
// the 1 KB line whatever its sender chose: a tool call, a request API Gateway
// refused itself (access log), a request the web ACL blocked (WAF log). The OAuth
// authorization records, whose builder is internal to shared/oauth, are held to
// the same bound by TestAuthorizationRecordsStayUnderTheLine there.
func TestEveryRecordKindStaysUnderTheLine(t *testing.T) {
	tools := catalog.New(catalog.Deps{})
	for name, h := range hostileTexts {
		t.Run(name, func(t *testing.T) {
			// A tool call with every caller-chosen field and every id at its longest.
			rec := record.Start(record.Request{
				Principal: &auth.Principal{WorkspaceID: h, UserID: h, TokenID: h, ClientID: h, Scopes: auth.AllScopes},
				Tool:      h, Transport: audit.TransportMCP,
				RequestID: h, JSONRPCID: h, ClientName: h, ClientVersion: h, ProtocolVersion: h,
				UserAgent: h, SourceIP: h,
			})
			record.Describe(&rec, false, true, []string{"issues:write"})
			record.SetResourceID(&rec, h)
			record.SetConfirmation(&rec, audit.ConfirmationElicited)
			record.Finish(&rec, time.Now(), apperr.HumanConfirmationRequired, false, time.Second)
			fitsTheLine(t, "tool call", rec)

			// An access-log line of a 401 API Gateway answered itself.
			al, _ := json.Marshal(map[string]string{
				"extendedRequestId": "id" + h, "requestId": h, "ip": h, "userAgent": h,
				"requestTime": "1765000000000", "httpMethod": "POST", "resourcePath": "/tools/{name}",
				"path": "/prod/tools/" + url.PathEscape(h), "stage": "prod", "protocol": "HTTP/1.1",
				"status": "401", "responseType": "UNAUTHORIZED", "responseLatency": "3",
				"integrationLatency": "-", "authorizerStatus": "-", "authorizerLatency": "-",
				"authorizerRequestId": "-", "authorizerError": "-",
			})
			e, ok := accesslog.Parse(al)
			if !ok {
				t.Fatalf("access log line not parsed: %s", al)
			}
			rec, ok = e.Record(tools)
			if !ok {
				t.Fatal("the access-log entry gave no record")
			}
			fitsTheLine(t, "access log", rec)

			// A WAF log record of a blocked REST call, and of a blocked /mcp call
			// naming its tool in Mcp-Name.
			for _, uri := range []string{"/prod/tools/" + url.PathEscape(h), "/prod/mcp"} {
				w, _ := json.Marshal(map[string]any{
					"timestamp": 1765000000000, "webaclId": h, "terminatingRuleId": "RateLimit", "action": "BLOCK",
					"httpRequest": map[string]any{
						"clientIp": h, "uri": uri, "httpMethod": "POST", "requestId": h, "httpVersion": "HTTP/2.0",
						"headers": []map[string]string{
							{"name": "User-Agent", "value": h}, {"name": "MCP-Protocol-Version", "value": h},
							{"name": "Mcp-Method", "value": "tools/call"}, {"name": "Mcp-Name", "value": h},
						},
					},
				})
				we, ok := forwarderfn.ParseWAFLog(w)
				if !ok {
					t.Fatalf("WAF log record not parsed: %s", w)
				}
				rec, ok = we.Record(tools)
				if !ok {
					t.Fatalf("the WAF entry for %s gave no record", uri)
				}
				fitsTheLine(t, "WAF "+uri, rec)
			}
		})
	}
}
