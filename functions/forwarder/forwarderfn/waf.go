package forwarderfn

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/aacworkflow/aacmcp/shared/apigw"
	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/audit/accesslog"
	"github.com/aacworkflow/aacmcp/shared/audit/record"
)

// WAFLogEntry is the part of one AWS WAF log record (one CloudWatch Logs event of
// the web ACL's aws-waf-logs-* group) that an audit record needs. WAF logs the
// request line and headers, never the body: a tools/call on /mcp names its tool
// only in the Mcp-Name header that protocol 2026-07-28 requires.
type WAFLogEntry struct {
	Timestamp         int64  `json:"timestamp"` // epoch milliseconds
	WebACLID          string `json:"webaclId"`
	TerminatingRuleID string `json:"terminatingRuleId"`
	Action            string `json:"action"`
	ResponseCodeSent  *int   `json:"responseCodeSent"`
	HTTPRequest       struct {
		ClientIP    string `json:"clientIp"`
		URI         string `json:"uri"`
		HTTPMethod  string `json:"httpMethod"`
		RequestID   string `json:"requestId"`
		HTTPVersion string `json:"httpVersion"`
		Headers     []struct {
			Name  string `json:"name"`
			Value string `json:"value"`
		} `json:"headers"`
	} `json:"httpRequest"`
}

// ParseWAFLog decodes one WAF log record. ok is false for anything that is not a
// JSON object with an action and a request URI.
func ParseWAFLog(b []byte) (WAFLogEntry, bool) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return WAFLogEntry{}, false
	}
	var e WAFLogEntry
	if err := json.Unmarshal(b, &e); err != nil || e.Action == "" || e.HTTPRequest.URI == "" {
		return WAFLogEntry{}, false
	}
	return e, true
}

// header returns the first value of the named request header ("" if absent).
// WAF keeps the client's spelling of names; HTTP names are case-insensitive.
func (e WAFLogEntry) header(name string) string {
	for _, h := range e.HTTPRequest.Headers {
		if strings.EqualFold(h.Name, name) {
			return h.Value
		}
	}
	return ""
}

// OriginVerifyRule is the regional web ACL's first rule behind the CloudFront front
// door (infra/frontdoor.go): it blocks requests that did not come through the
// distribution, whose headers are therefore the client's own.
const OriginVerifyRule = "OnlyThroughCloudFront"

// ViewerAttributed returns e with the client address CloudFront names, when trusted:
// behind the front door the regional web ACL sees a CloudFront edge server as the
// client, and CloudFront's request carries CloudFront-Viewer-Address. A request
// OriginVerifyRule blocked did not come through CloudFront: its header, if any, is
// the sender's invention, and its client IP is the sender's. A missing, malformed or
// repeated header keeps the client IP (apigw.SourceIP).
func (e WAFLogEntry) ViewerAttributed(trustViewer bool) WAFLogEntry {
	if !trustViewer || e.TerminatingRuleID == OriginVerifyRule {
		return e
	}
	var values []string
	for _, h := range e.HTTPRequest.Headers {
		if strings.EqualFold(h.Name, apigw.ViewerAddressHeader) {
			values = append(values, h.Value)
		}
	}
	e.HTTPRequest.ClientIP = apigw.SourceIP(nil, map[string][]string{apigw.ViewerAddressHeader: values}, e.HTTPRequest.ClientIP, true)
	return e
}

// mcpNameHeader names the tool of a 2026-07-28 tools/call (SEP-2243).
const mcpNameHeader = "Mcp-Name"

// tool is the tool the blocked request names, and its transport: the last segment
// of a /tools/{name} URI (REST), or, for a POST to /mcp, the Mcp-Name header. A /mcp
// request of a protocol before 2026-07-28 carries no Mcp-Method or Mcp-Name header:
// it may be a tools/call, and is kept with tool "" (as the access log's /mcp 401s
// are). One whose Mcp-Method says it is something else (initialize, tools/list) is
// no tool invocation. ok is false for requests naming no tool.
func (e WAFLogEntry) tool() (name, transport string, ok bool) {
	name, transport = record.Route("", e.HTTPRequest.URI, nil)
	if name != "" {
		return name, transport, true
	}
	if transport != audit.TransportMCP || !strings.EqualFold(e.HTTPRequest.HTTPMethod, "POST") {
		return "", "", false
	}
	if m := strings.TrimSpace(e.header("Mcp-Method")); m != "" && m != "tools/call" {
		return "", "", false
	}
	return strings.TrimSpace(e.header(mcpNameHeader)), audit.TransportMCP, true
}

// Record turns the log record of a request the web ACL blocked, and that names a
// tool (or may be a tools/call, see tool), into its audit record: denied, waf_blocked, the tool and its facts, stamped
// with WAF's own time. ok is false for requests WAF let through (ALLOW, COUNT) and
// for blocked requests that name no tool (a scan of /, a GET of the metadata): they
// were never tool invocations.
//
// The record names no workspace, user or token: the stack redacts Authorization
// from WAF logs (a log group must not hold bearer secrets), so nothing in the
// record identifies the caller beyond source IP and User-Agent. The event id is
// derived from the log record, so a batch delivered twice yields the same id.
func (e WAFLogEntry) Record(tools accesslog.ToolLookup) (audit.Record, bool) {
	if !strings.EqualFold(e.Action, "BLOCK") {
		return audit.Record{}, false
	}
	name, transport, ok := e.tool()
	if !ok {
		return audit.Record{}, false
	}
	at := record.LoggedTime(e.Timestamp)
	r := record.Start(record.Request{
		Tool:            record.Clean(name),
		Transport:       transport,
		RequestID:       record.Clean(e.HTTPRequest.RequestID),
		ProtocolVersion: record.Clean(e.header("MCP-Protocol-Version")),
		UserAgent:       record.Clean(e.header("User-Agent")),
		SourceIP:        record.Clean(e.HTTPRequest.ClientIP),
	})
	if t, ok := tools.Lookup(r.Tool); ok {
		record.Describe(&r, t.Annotations.ReadOnly, t.Annotations.Destructive, t.Scopes)
	}
	record.FinishLogged(&r, at, "waf:"+e.WebACLID+"|"+e.HTTPRequest.RequestID+"|"+
		strconv.FormatInt(e.Timestamp, 10)+"|"+e.HTTPRequest.ClientIP+"|"+e.HTTPRequest.URI, apperr.WAFBlocked, 0)
	return r, true
}
