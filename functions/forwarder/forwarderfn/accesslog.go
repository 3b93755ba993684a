package forwarderfn

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/oklog/ulid/v2"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/catalog"
)

// AccessLogFormat is the API Gateway (REST API) access-log format the forwarder reads.
// The CDK stack sets it on the stage with apigateway.AccessLogFormat_Custom(AccessLogFormat).
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
const AccessLogFormat = `{"extendedRequestId":"$context.extendedRequestId",` +
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

// AccessLogEntry is one line of AccessLogFormat.
type AccessLogEntry struct {
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

// ParseAccessLog decodes one access-log line. ok is false for anything that is not a
// JSON object with an extended request id and a status (other log lines of the
// group).
func ParseAccessLog(b []byte) (AccessLogEntry, bool) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return AccessLogEntry{}, false
	}
	var e AccessLogEntry
	if err := json.Unmarshal(b, &e); err != nil {
		return AccessLogEntry{}, false
	}
	if absent(e.ExtendedRequestID) || absent(e.Status) {
		return AccessLogEntry{}, false
	}
	return e, true
}

// absent reports an access-log value API Gateway left out ("-" or empty).
func absent(v string) bool { v = strings.TrimSpace(v); return v == "" || v == "-" }

// RefusedWithoutAuthorizer reports whether API Gateway answered 401 itself, without
// calling the authorizer: the request had no Authorization header. Only those are
// the forwarder's to audit; a 401 from the authorizer was audited by it.
func (e AccessLogEntry) RefusedWithoutAuthorizer() bool {
	return strings.TrimSpace(e.Status) == "401" &&
		absent(e.AuthorizerStatus) && absent(e.AuthorizerLatency) && absent(e.AuthorizerRequestID)
}

// ToolLookup finds a tool's catalog entry (catalog.Catalog does).
type ToolLookup interface {
	Lookup(name string) (catalog.Tool, bool)
}

// Longest caller-chosen text copied into a record (records stay under 1 KB).
const maxText = 128

// Request times outside 2000..2200 are not API Gateway's: the record then carries the
// time it was made, which still files it in a valid partition.
const (
	minEpochMS = 946684800000  // 2000-01-01
	maxEpochMS = 7258118400000 // 2200-01-01
)

// toolsResource is the REST route whose last path segment names the tool.
const toolsResource = "/tools/{name}"

// Record turns an entry that RefusedWithoutAuthorizer into its audit record: denied,
// invalid_token, the tool named by the path (or "" for /mcp, whose tool is in the
// body API Gateway does not log), stamped with the request's own time. ok is false
// for every other entry.
//
// The event id is derived from the extended request id, so a log batch that is
// delivered twice (the pipeline is at-least-once) yields the same event id and the
// duplicate can be dropped downstream.
func (e AccessLogEntry) Record(tools ToolLookup) (audit.Record, bool) {
	if !e.RefusedWithoutAuthorizer() {
		return audit.Record{}, false
	}
	at := time.Now().UTC()
	if ms, err := strconv.ParseInt(strings.TrimSpace(e.RequestTime), 10, 64); err == nil && ms > minEpochMS && ms < maxEpochMS {
		at = time.UnixMilli(ms).UTC()
	}
	r := audit.Record{
		EventID:        eventIDFor(at, "apigw:"+e.ExtendedRequestID),
		EventVersion:   audit.EventVersion,
		Timestamp:      audit.FormatTime(at),
		Outcome:        audit.OutcomeDenied,
		Reason:         string(apperr.InvalidToken),
		ScopesProvided: []string{},
		ScopesRequired: []string{},
		RequestID:      clean(e.ExtendedRequestID),
		UserAgent:      clean(e.UserAgent),
		SourceIP:       clean(e.IP),
		Transport:      audit.TransportREST,
		// A request API Gateway refused for want of a token is a tool call
		// attempt, and without a token no OAuth client is known: client_id "".
		EventType: audit.EventToolCall,
	}
	if ms, err := strconv.ParseInt(strings.TrimSpace(e.ResponseLatency), 10, 64); err == nil && ms >= 0 {
		r.DurationMS = ms
	}
	switch strings.TrimSpace(e.ResourcePath) {
	case "/mcp":
		r.Transport = audit.TransportMCP
	case toolsResource:
		r.Tool = clean(toolFromPath(e.Path))
	default:
		if strings.HasSuffix(strings.TrimSpace(e.Path), "/mcp") {
			r.Transport = audit.TransportMCP
		}
	}
	if t, ok := tools.Lookup(r.Tool); ok && r.Tool != "" {
		r.ReadOnly = t.Annotations.ReadOnly
		r.Destructive = t.Annotations.Destructive
		r.ScopesRequired = append([]string(nil), t.Scopes...)
	}
	return r, true
}

// toolFromPath returns the segment after /tools/ in a request path such as
// /prod/tools/get_issue (the stage prefix varies with custom domains).
func toolFromPath(p string) string {
	p = strings.TrimRight(strings.TrimSpace(p), "/")
	i := strings.LastIndex(p, "/tools/")
	if i < 0 {
		return ""
	}
	name := p[i+len("/tools/"):]
	if strings.Contains(name, "/") {
		return ""
	}
	if dec, err := url.PathUnescape(name); err == nil {
		name = dec
	}
	return name
}

// clean maps "-" to "" and bounds length on a rune boundary.
func clean(v string) string {
	if absent(v) {
		return ""
	}
	if !utf8.ValidString(v) {
		v = strings.ToValidUTF8(v, "\uFFFD")
	}
	if len(v) <= maxText {
		return v
	}
	n := maxText
	for n > 0 && !utf8.RuneStart(v[n]) {
		n--
	}
	return v[:n]
}

// eventIDFor is a ULID at t whose random part is a hash of seed: the same request
// always gets the same event id.
func eventIDFor(t time.Time, seed string) string {
	sum := sha256.Sum256([]byte(seed))
	id, err := ulid.New(ulid.Timestamp(t), bytes.NewReader(sum[:10]))
	if err != nil {
		return audit.NewEventIDAt(t)
	}
	return id.String()
}
