package forwarderfn

import "github.com/aacworkflow/aacmcp/shared/audit/accesslog"

// The access-log format and its transform into records live in
// shared/audit/accesslog, which the local gateway uses too; these names keep the
// forwarder's (and the CDK stack's) references stable.
const AccessLogFormat = accesslog.Format

type (
	// AccessLogEntry is one line of AccessLogFormat.
	AccessLogEntry = accesslog.Entry
	// ToolLookup finds a tool's catalog entry (catalog.Catalog does).
	ToolLookup = accesslog.ToolLookup
)

// ParseAccessLog decodes one access-log line (accesslog.Parse).
func ParseAccessLog(b []byte) (AccessLogEntry, bool) { return accesslog.Parse(b) }
