// Package ocsf maps audit records to OCSF 1.x events, the schema of Amazon Security
// Lake and most SIEMs: tool calls to API Activity (6003), authorization server events
// to Authentication (3002) or Authorize Session (3003). The mapping, attribute by
// attribute, is docs/audit-ocsf.md; testdata/ocsf-1.3.0-required.schema.json holds
// the required attributes of those classes, and the tests validate every event
// against it.
package ocsf

import (
	"fmt"
	"strings"

	"github.com/aacworkflow/aacmcp/shared/audit"
)

// Version is the OCSF version the events claim (metadata.version).
const Version = "1.3.0"

// Class and category identifiers.
const (
	CategoryIAM         = 3
	CategoryApplication = 6
	ClassAuthentication = 3002
	ClassAuthorize      = 3003
	ClassAPIActivity    = 6003
)

// Options are the deployment facts a record does not carry.
type Options struct {
	// CloudProvider and Region fill the cloud object of API Activity ("AWS" when empty).
	CloudProvider, Region string
	// ProductVersion is aacmcp's version (metadata.product.version), when known.
	ProductVersion string
}

// Event is one OCSF event, ready for encoding/json (keys in sorted order).
type Event map[string]any

// Map turns one record into its OCSF event.
func Map(r audit.Record, o Options) (Event, error) {
	r = audit.Normalize(r)
	ts, err := audit.ParseTime(r.Timestamp)
	if err != nil {
		return nil, fmt.Errorf("ocsf: record %s: %w", r.EventID, err)
	}
	e := Event{
		"time":            ts.UnixMilli(),
		"metadata":        metadata(r, o),
		"severity_id":     severity(r),
		"severity":        severityName[severity(r)],
		"unmapped":        unmapped(r),
		"status_id":       statusID(r.Outcome),
		"status":          statusName[statusID(r.Outcome)],
		"src_endpoint":    srcEndpoint(r),
		"http_request":    httpRequest(r),
		"duration":        r.DurationMS,
		"timezone_offset": 0,
	}
	if r.Reason != "" {
		e["status_code"], e["status_detail"] = r.Reason, r.Reason
	}
	if r.EventType == audit.EventAuthorization {
		authorizationEvent(e, r)
	} else {
		apiActivity(e, r, o)
	}
	e["type_uid"] = e["class_uid"].(int)*100 + e["activity_id"].(int)
	return e, nil
}

func metadata(r audit.Record, o Options) map[string]any {
	product := map[string]any{"name": "aacmcp", "vendor_name": "AACWorkflow"}
	if o.ProductVersion != "" {
		product["version"] = o.ProductVersion
	}
	code := r.Tool
	if r.EventType == audit.EventAuthorization {
		code = r.Action
	}
	return map[string]any{
		"version":       Version,
		"product":       product,
		"uid":           r.EventID,
		"original_time": r.Timestamp,
		"log_name":      "aacmcp audit",
		"event_code":    code,
		"log_version":   r.EventVersion,
	}
}

var severityName = map[int]string{1: "Informational", 2: "Low", 4: "High"}

// severity: denials are Low, a refresh token used twice (a copy may be in a thief's
// hands) is High, the rest Informational.
func severity(r audit.Record) int {
	switch {
	case r.Action == audit.ActionRefreshReuseDetected:
		return 4
	case r.Outcome == audit.OutcomeDenied:
		return 2
	}
	return 1
}

var statusName = map[int]string{0: "Unknown", 1: "Success", 2: "Failure"}

func statusID(outcome string) int {
	switch outcome {
	case audit.OutcomeSuccess:
		return 1
	case audit.OutcomeDenied, audit.OutcomeError:
		return 2
	}
	return 0
}

// srcEndpoint names the caller's address; the network endpoint object needs at least
// one identifying attribute, so a record without one says "unknown".
func srcEndpoint(r audit.Record) map[string]any {
	if r.SourceIP != "" {
		return map[string]any{"ip": r.SourceIP}
	}
	return map[string]any{"name": "unknown"}
}

func httpRequest(r audit.Record) map[string]any {
	h := map[string]any{}
	if r.UserAgent != "" {
		h["user_agent"] = r.UserAgent
	}
	if r.RequestID != "" {
		h["uid"] = r.RequestID
	}
	return h
}

// user is the person behind the record; a request refused for its token has none.
func user(r audit.Record) map[string]any {
	if r.UserID == "" {
		return map[string]any{"name": "unauthenticated", "type_id": 0, "type": "Unknown"}
	}
	u := map[string]any{"uid": r.UserID, "type_id": 1, "type": "User"}
	if r.WorkspaceID != "" {
		u["account"] = map[string]any{"uid": r.WorkspaceID, "name": r.WorkspaceID, "type_id": 99, "type": "aacmcp workspace"}
	}
	return u
}

// actor: the user, the token as the session's credential, and the OAuth client
// (app_uid) with what the MCP client calls itself (app_name).
func actor(r audit.Record) map[string]any {
	a := map[string]any{"user": user(r)}
	if r.TokenID != "" {
		a["session"] = map[string]any{"credential_uid": r.TokenID}
	}
	if r.ClientID != "" {
		a["app_uid"] = r.ClientID
	}
	if r.ClientName != "" {
		a["app_name"] = r.ClientName
	}
	return a
}

// API Activity's activity_id: read-only tools read, destructive ones delete,
// create_* creates, and every other write updates.
func apiActivityID(r audit.Record) (int, string) {
	switch {
	case r.ReadOnly:
		return 2, "Read"
	case r.Destructive:
		return 4, "Delete"
	case strings.HasPrefix(r.Tool, "create_"):
		return 1, "Create"
	case r.Tool == "":
		return 0, "Unknown"
	}
	return 3, "Update"
}

func apiActivity(e Event, r audit.Record, o Options) {
	id, name := apiActivityID(r)
	e["category_uid"], e["category_name"] = CategoryApplication, "Application Activity"
	e["class_uid"], e["class_name"] = ClassAPIActivity, "API Activity"
	e["activity_id"], e["activity_name"] = id, name
	api := map[string]any{
		"operation": r.Tool,
		"service":   map[string]any{"name": "aacmcp " + r.Transport},
	}
	if r.Tool == "" {
		// A request refused for its token before its tool was read.
		api["operation"] = "unknown"
	}
	if r.ProtocolVersion != "" {
		api["version"] = r.ProtocolVersion
	}
	if r.JSONRPCID != "" {
		api["request"] = map[string]any{"uid": r.JSONRPCID}
	}
	e["api"] = api
	e["actor"] = actor(r)
	provider := o.CloudProvider
	if provider == "" {
		provider = "AWS"
	}
	cloud := map[string]any{"provider": provider}
	if o.Region != "" {
		cloud["region"] = o.Region
	}
	e["cloud"] = cloud
	// The cloud object is the cloud profile's; an event names the profiles it uses.
	e["metadata"].(map[string]any)["profiles"] = []string{"cloud"}
	if r.ResourceID != "" {
		e["resources"] = []any{map[string]any{"uid": r.ResourceID}}
	}
	msg := r.Tool + " " + r.Outcome
	if r.Reason != "" {
		msg += ": " + r.Reason
	}
	e["message"] = msg
}

// authorizationEvent: consent decisions assign privileges (the scopes) to a session
// and are Authorize Session; tokens issued, refreshed, reused and grants revoked are
// the session's authentication (logon, other, logoff); a client registration is
// reported as an Authentication of activity Other too, for the client.
func authorizationEvent(e Event, r audit.Record) {
	e["category_uid"], e["category_name"] = CategoryIAM, "Identity & Access Management"
	e["user"] = user(r)
	e["actor"] = actor(r)
	e["message"] = r.Action + " " + r.Outcome
	switch r.Action {
	case audit.ActionConsentGranted, audit.ActionConsentDenied:
		e["class_uid"], e["class_name"] = ClassAuthorize, "Authorize Session"
		e["activity_id"], e["activity_name"] = 1, "Assign Privileges"
		privs := r.ScopesProvided
		if len(privs) == 0 {
			privs = r.ScopesRequired
		}
		if privs == nil {
			privs = []string{}
		}
		e["privileges"] = privs
		if r.TokenID != "" {
			e["session"] = map[string]any{"credential_uid": r.TokenID}
		}
		return
	}
	e["class_uid"], e["class_name"] = ClassAuthentication, "Authentication"
	e["auth_protocol_id"], e["auth_protocol"] = 6, "OAUTH 2.0"
	e["service"] = map[string]any{"name": "aacmcp authorization server"}
	switch r.Action {
	case audit.ActionTokenIssued, audit.ActionTokenRefused:
		// A refused token request is a failed logon: its status says so.
		e["activity_id"], e["activity_name"] = 1, "Logon"
	case audit.ActionGrantRevoked, audit.ActionRevocationRefused:
		e["activity_id"], e["activity_name"] = 2, "Logoff"
	case audit.ActionTokenRefreshed, audit.ActionRefreshReuseDetected:
		e["activity_id"], e["activity_name"] = 99, "Refresh"
	default:
		// client_registered, and any action a later version adds.
		e["activity_id"], e["activity_name"] = 99, r.Action
	}
}

// unmapped keeps what OCSF has no attribute for, under the record's own names:
// the HMACs, the confirmation, the scopes, and the record's outcome as written. The
// 1.0 and 1.1 forms (args_sha256, idempotency_key in clear) are left out: a SIEM
// gets nothing a guess could turn back into arguments.
func unmapped(r audit.Record) map[string]any {
	u := map[string]any{
		"event_version":     r.EventVersion,
		"outcome":           r.Outcome,
		"transport":         r.Transport,
		"workspace_id":      r.WorkspaceID,
		"scopes_provided":   nonNil(r.ScopesProvided),
		"scopes_required":   nonNil(r.ScopesRequired),
		"read_only":         r.ReadOnly,
		"destructive":       r.Destructive,
		"confirm_present":   r.ConfirmPresent,
		"confirmation":      r.Confirmation,
		"idempotent_replay": r.IdempotentReplay,
	}
	for k, v := range map[string]string{
		"args_hmac": r.ArgsHMAC, "idempotency_key_hmac": r.IdempotencyKeyHMAC, "jsonrpc_id": r.JSONRPCID,
		"client_name": r.ClientName, "client_version": r.ClientVersion, "action": r.Action,
	} {
		if v != "" {
			u[k] = v
		}
	}
	return u
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
