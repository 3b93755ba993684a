// Package accesslog reads API Gateway's access-log lines and turns those of a
// request API Gateway refused itself into audit records. The Lambda forwarder and
// the local gateway (shared/gateway) both use it.
package accesslog

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/audit/record"
	"github.com/aacworkflow/aacmcp/shared/catalog"
)

// Format is the API Gateway (REST API) access-log format the forwarder reads.
// The CDK stack sets it on the stage with apigateway.AccessLogFormat_Custom(accesslog.Format).
//
// Every value is a JSON string, numbers included: API Gateway writes "-" for a value
// that does not apply (no authorizer call, no integration), which would break a bare
// number. The authorizer fields tell a 401 API Gateway gave itself (no Authorization
// header: the authorizer never ran, so they are "-") from a 401 the authorizer
// decided (it audited that one itself).
//
// The record's request id is extendedRequestId: a client can set $context.requestId
// with an x-amzn-RequestId header, and so give its records the id of another request
// (whose record would then be dropped as a duplicate). requestId stays in the line
// for correlation with AWS support cases only.
const Format = `{"extendedRequestId":"$context.extendedRequestId",` +
	`"requestId":"$context.requestId",` +
	`"ip":"$context.identity.sourceIp",` +
	`"userAgent":"$context.identity.userAgent",` +
	`"requestTime":"$context.requestTimeEpoch",` +
	`"httpMethod":"$context.httpMethod",` +
	`"resourcePath":"$context.resourcePath",` +
	`"path":"$context.path",` +
	`"stage":"$context.stage",` +
	`"protocol":"$context.protocol",` +
	`"status":"$context.status",` +
	`"responseType":"$context.error.responseType",` +
	`"responseLatency":"$context.responseLatency",` +
	`"integrationLatency":"$context.integration.latency",` +
	`"authorizerStatus":"$context.authorizer.status",` +
	`"authorizerLatency":"$context.authorizer.latency",` +
	`"authorizerRequestId":"$context.authorizer.requestId",` +
	`"authorizerError":"$context.authorizer.error"}`

// Entry is one line of Format.
type Entry struct {
	ExtendedRequestID   string `json:"extendedRequestId"`
	RequestID           string `json:"requestId"` // client-settable: never in a record
	IP                  string `json:"ip"`
	UserAgent           string `json:"userAgent"`
	RequestTime         string `json:"requestTime"` // epoch milliseconds
	HTTPMethod          string `json:"httpMethod"`
	ResourcePath        string `json:"resourcePath"` // e.g. /tools/{name}
	Path                string `json:"path"`         // e.g. /prod/tools/get_issue
	Stage               string `json:"stage"`
	Protocol            string `json:"protocol"`
	Status              string `json:"status"`
	ResponseType        string `json:"responseType"`
	ResponseLatency     string `json:"responseLatency"`
	IntegrationLatency  string `json:"integrationLatency"`
	AuthorizerStatus    string `json:"authorizerStatus"`
	AuthorizerLatency   string `json:"authorizerLatency"`
	AuthorizerRequestID string `json:"authorizerRequestId"`
	AuthorizerError     string `json:"authorizerError"`
}

// Parse decodes one access-log line. ok is false for anything that is not a
// JSON object with an extended request id and a status (other log lines of the
// group).
func Parse(b []byte) (Entry, bool) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return Entry{}, false
	}
	var e Entry
	if err := json.Unmarshal(b, &e); err != nil {
		return Entry{}, false
	}
	if absent(e.ExtendedRequestID) || absent(e.Status) {
		return Entry{}, false
	}
	return e, true
}

// absent reports an access-log value API Gateway left out ("-" or empty).
func absent(v string) bool { return record.Absent(v) }

// RefusedWithoutAuthorizer reports whether API Gateway answered 401 itself, without
// calling the authorizer: the request had no Authorization header. Only those are
// the forwarder's to audit; a 401 from the authorizer was audited by it.
func (e Entry) RefusedWithoutAuthorizer() bool {
	return strings.TrimSpace(e.Status) == "401" &&
		absent(e.AuthorizerStatus) && absent(e.AuthorizerLatency) && absent(e.AuthorizerRequestID)
}

// ToolLookup finds a tool's catalog entry (catalog.Catalog does).
type ToolLookup interface {
	Lookup(name string) (catalog.Tool, bool)
}

// Record turns an entry that RefusedWithoutAuthorizer into its audit record: denied,
// invalid_token, the tool named by the path (or "" for /mcp, whose tool is in the
// body API Gateway does not log), stamped with the request's own time. ok is false
// for every other entry.
//
// The event id is derived from the extended request id, so a log batch that is
// delivered twice (the pipeline is at-least-once) yields the same event id and the
// duplicate can be dropped downstream.
func (e Entry) Record(tools ToolLookup) (audit.Record, bool) {
	if !e.RefusedWithoutAuthorizer() {
		return audit.Record{}, false
	}
	ms, _ := strconv.ParseInt(strings.TrimSpace(e.RequestTime), 10, 64)
	at := record.LoggedTime(ms)
	// A request API Gateway refused for want of a token is a tool call attempt,
	// and without a token no OAuth client is known: client_id "".
	tool, transport := record.Route(e.ResourcePath, e.Path, nil)
	r := record.Start(record.Request{
		Tool:      record.Clean(tool),
		Transport: transport,
		RequestID: record.Clean(e.ExtendedRequestID),
		UserAgent: record.Clean(e.UserAgent),
		SourceIP:  record.Clean(e.IP),
	})
	if t, ok := tools.Lookup(r.Tool); ok && r.Tool != "" {
		record.Describe(&r, t.Annotations.ReadOnly, t.Annotations.Destructive, t.Scopes)
	}
	var d time.Duration
	if lat, err := strconv.ParseInt(strings.TrimSpace(e.ResponseLatency), 10, 64); err == nil && lat >= 0 {
		d = time.Duration(lat) * time.Millisecond
	}
	record.FinishLogged(&r, at, "apigw:"+e.ExtendedRequestID, apperr.InvalidToken, d)
	return r, true
}
