// Package record builds audit records. Every record is built here: the guard's
// (every tool call), the Lambda authorizer's (refused tokens), the forwarder's
// (requests API Gateway refused itself, from the access log; requests the web ACL
// blocked, from the WAF log) and the authorization server's (StartAuthorization).
// So a record means the same thing whoever wrote it: the same caps on
// caller-chosen text, the same transport and tool-from-path rules, and the same
// 1 KB bound on the line (Fit, which Finish and FinishLogged end with).
package record

import (
	"bytes"
	"crypto/sha256"
	"unicode/utf8"

	"github.com/oklog/ulid/v2"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/auth"
)

// MaxText bounds each caller-chosen string copied into a record (tool, ids, client
// name and version, User-Agent, source IP, resource id).
const MaxText = 128

// MaxClientID bounds the OAuth client id copied into a record. Client ids are
// chosen by the server (registrations) or are the URL of a client's metadata
// document, which real clients keep short (claude.ai's is 50 bytes). 104 bytes is
// what leaves a record of a real principal whole (tool, ids and a source at
// MaxSourceIP) under the 1 KB line beside the two 64-character HMACs of 1.2 and
// the confirmation of 1.3, with the longest reason (human_confirmation_required)
// and confirmation (elicited), once Fit has cut the descriptive text. It was 144
// before 1.3 added confirmation; at 144 such a record now loses its source.
const MaxClientID = 104

// MaxSourceIP bounds the source address. The longest textual address is 45 bytes
// (an IPv6 address with an IPv4 tail, ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255);
// anything longer is not an address but a forwarded header's text.
const MaxSourceIP = 45

// MaxLine is the bound on one encoded audit line, newline excluded: Fit keeps every
// record strictly under it.
const MaxLine = 1024

// ToolsResource is the REST route whose last path segment names the tool.
const ToolsResource = "/tools/{name}"

// Request is what a transport knows of one request when it builds its record.
type Request struct {
	// Principal is the authenticated caller; nil when the request carried no valid
	// token (a known but refused token may still name its TokenID).
	Principal *auth.Principal
	Tool      string
	Transport string // audit.TransportMCP or audit.TransportREST

	RequestID, JSONRPCID                       string
	ClientName, ClientVersion, ProtocolVersion string
	UserAgent, SourceIP                        string
}

// Start returns the record's who and what: every field known before the call runs,
// each caller-chosen text capped. Outcome, time and event id are Finish's.
func Start(req Request) audit.Record {
	r := audit.Record{
		EventVersion:    audit.EventVersion,
		Tool:            Truncate(req.Tool, MaxText),
		ScopesProvided:  []string{},
		ScopesRequired:  []string{},
		RequestID:       Truncate(req.RequestID, MaxText),
		JSONRPCID:       Truncate(req.JSONRPCID, MaxText),
		ClientName:      Truncate(req.ClientName, MaxText),
		ClientVersion:   Truncate(req.ClientVersion, MaxText),
		ProtocolVersion: Truncate(req.ProtocolVersion, MaxText),
		UserAgent:       Truncate(req.UserAgent, MaxText),
		SourceIP:        Truncate(req.SourceIP, MaxSourceIP),
		Transport:       req.Transport,
		EventType:       audit.EventToolCall,
	}
	if p := req.Principal; p != nil {
		// The ids are the server's own (a ULID-based token id is 30 bytes), except
		// that a refused token's id is derived from what the caller presented: the
		// cap keeps such a token from taking the line.
		r.WorkspaceID = Truncate(p.WorkspaceID, MaxText)
		r.UserID = Truncate(p.UserID, MaxText)
		r.TokenID = Truncate(p.TokenID, MaxText)
		// Which connector made the call ("" for a personal token): a client id may
		// be the URL of the connector's own metadata document.
		r.ClientID = Truncate(p.ClientID, MaxClientID)
		if len(p.Scopes) > 0 {
			// One exact-size copy, sorted in place (slices.Sorted grows its result
			// through several allocations). A copy, because the record outlives the
			// call and must not share the principal's array.
			r.ScopesProvided = slices.Clone(p.Scopes)
			slices.Sort(r.ScopesProvided)
		}
	}
	return r
}

// Authorization is what the authorization server knows of one of its events.
type Authorization struct {
	Action                                string // audit.Action*
	ClientID, ClientName                  string
	WorkspaceID, UserID, TokenID, GrantID string
	Scopes, Requested                     []string // granted (or held), and asked for
	RequestID, UserAgent, SourceIP        string
}

// StartAuthorization is Start for an authorization event (event type
// authorization, transport oauth): the account, token and client it concerns take
// the places of a tool call's principal, so they get the same caps, and the grant
// it acts on is the resource.
func StartAuthorization(a Authorization) audit.Record {
	r := Start(Request{
		Principal: &auth.Principal{WorkspaceID: a.WorkspaceID, UserID: a.UserID, TokenID: a.TokenID, ClientID: a.ClientID, Scopes: a.Scopes},
		Transport: audit.TransportOAuth,
		RequestID: a.RequestID, ClientName: a.ClientName, UserAgent: a.UserAgent, SourceIP: a.SourceIP,
	})
	r.EventType, r.Action = audit.EventAuthorization, a.Action
	r.ScopesRequired = slices.Clone(a.Requested)
	if r.ScopesRequired == nil {
		r.ScopesRequired = []string{}
	}
	SetResourceID(&r, a.GrantID)
	return r
}

// Describe copies a known tool's annotations and required scopes into r.
func Describe(r *audit.Record, readOnly, destructive bool, scopes []string) {
	r.ReadOnly = readOnly
	r.Destructive = destructive
	r.ScopesRequired = slices.Clone(scopes)
	if r.ScopesRequired == nil {
		r.ScopesRequired = []string{}
	}
}

// SetResourceID records the id of the resource a call acted on, capped like any
// caller-chosen text.
func SetResourceID(r *audit.Record, id string) { r.ResourceID = Truncate(id, MaxText) }

// SetConfirmation records how a destructive call was confirmed (audit.ConfirmationFlag
// or audit.ConfirmationElicited). The guard calls it as the call passes each step,
// so the record keeps the furthest one the call reached.
func SetConfirmation(r *audit.Record, kind string) { r.Confirmation = kind }

// SetArgs records the keyed digest of a call's arguments in their canonical
// encoding (the guard decodes and canonicalises them once, for every step), never
// the arguments: they may hold personal data.
func SetArgs(r *audit.Record, h *audit.HMAC, canonical []byte) { r.ArgsHMAC = h.Args(canonical) }

// SetIdempotencyKey records the keyed digest of the caller's idempotency key (""
// when the call had none): the key is the caller's text, and the record must not
// become a place to read it back.
func SetIdempotencyKey(r *audit.Record, h *audit.HMAC, key string) {
	r.IdempotencyKeyHMAC = h.IdempotencyKey(key)
}

// Finish stamps the outcome of code ("" for success) at time end, gives the record
// its event id and fits it under MaxLine.
func Finish(r *audit.Record, end time.Time, code apperr.Code, replay bool, d time.Duration) {
	r.EventID = audit.NewEventIDAt(end)
	finish(r, end, code, replay, d)
}

// FinishLogged is Finish for a record made from a log line (the access log, the
// WAF log): stamped with the line's time at, and with an event id derived from
// seed (StableEventID), so a line delivered twice gives the same record.
func FinishLogged(r *audit.Record, at time.Time, seed string, code apperr.Code, d time.Duration) {
	r.EventID = StableEventID(at, seed)
	finish(r, at, code, false, d)
}

func finish(r *audit.Record, end time.Time, code apperr.Code, replay bool, d time.Duration) {
	r.Timestamp = audit.FormatTime(end)
	r.Outcome = string(code.Outcome())
	r.Reason = string(code)
	r.IdempotentReplay = replay
	r.DurationMS = d.Milliseconds()
	Fit(r)
}

// Fit keeps the record's line under MaxLine. Each caller-influenced text is
// already capped, but together they can still push a record past the bound, so
// Fit cuts them in this order, each group longest field first, until the line
// fits:
//
//  1. the descriptive text: user_agent, client_name, client_version, jsonrpc_id,
//     request_id, resource_id, protocol_version;
//  2. source_ip;
//  3. tool (only an unknown tool's name, the caller's text, is long);
//  4. the ids of who: client_id, token_id, user_id, workspace_id.
//
// A record of a real principal (server-made ids, a client id within MaxClientID)
// fits once group 1 is cut, so groups 2 to 4 give way only for text no real
// request carries: ids as long as MaxText, which only a refused token's presented
// id reaches. Cutting the longest first keeps the short ids whole longest.
//
// The outcome, reason, confirmation, time, event id, scopes, flags and the digests
// (fixed-size HMACs) are never cut; they fit in a third of the line.
//
// The line is measured by encoding it with the sinks' own encoder, so the bound
// holds for the bytes they write, escapes included; into a buffer on the stack,
// because this runs on every call and a line that fits then costs no allocation.
func Fit(r *audit.Record) {
	// AppendLine sizes its buffer from the unescaped lengths plus the widest
	// integer, so any line that fits the bound fits this buffer without regrowing.
	var buf [MaxLine + 64]byte
	groups := [...][]*string{
		{&r.UserAgent, &r.ClientName, &r.ClientVersion, &r.JSONRPCID, &r.RequestID, &r.ResourceID, &r.ProtocolVersion},
		{&r.SourceIP},
		{&r.Tool},
		{&r.ClientID, &r.TokenID, &r.UserID, &r.WorkspaceID},
	}
	for _, group := range groups {
		for {
			line := audit.AppendLine(buf[:0], *r)
			if len(line) < MaxLine {
				return
			}
			longest := group[0]
			for _, f := range group[1:] {
				if len(*f) > len(*longest) {
					longest = f
				}
			}
			if len(*longest) == 0 {
				break // this group is spent: on to the next
			}
			// Escaped characters take more bytes on the wire than in the string, so
			// cut at least what is over and loop until it fits.
			over := len(line) - MaxLine + 1
			*longest = Truncate(*longest, max(0, len(*longest)-over))
		}
	}
}

// Truncate cuts s to at most n bytes on a rune boundary, so the record stays
// valid UTF-8.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// Transport is the transport of an API Gateway request from its resource (the
// route template) and path: /mcp is MCP, /tools/{name} is REST even for a tool
// whose name ends the path in /mcp, and a path under a custom domain's prefix is
// judged by its last segment.
func Transport(resource, path string) string {
	switch strings.TrimSpace(resource) {
	case "/mcp":
		return audit.TransportMCP
	case ToolsResource:
		return audit.TransportREST
	}
	if strings.HasSuffix(strings.TrimSpace(path), "/mcp") {
		return audit.TransportMCP
	}
	return audit.TransportREST
}

// ToolFromPath returns the (unescaped) segment after the last /tools/ in a request
// path such as /prod/tools/get_issue (the stage prefix varies with custom domains),
// or "" when there is none or it is not a single segment.
func ToolFromPath(p string) string {
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

// Clean is Truncate(v, MaxText) for text read from a log line: the "-" API Gateway
// writes for a value that does not apply becomes "", and invalid UTF-8 is
// replaced, so the record stays valid.
func Clean(v string) string {
	if Absent(v) {
		return ""
	}
	if !utf8.ValidString(v) {
		v = strings.ToValidUTF8(v, "\uFFFD")
	}
	return Truncate(v, MaxText)
}

// Absent reports a log value API Gateway left out ("-" or empty).
func Absent(v string) bool { v = strings.TrimSpace(v); return v == "" || v == "-" }

// Request times outside 2000..2200 are not AWS's: a record then carries the time it
// was made, which still files it in a valid partition.
const (
	minEpochMS = 946684800000  // 2000-01-01
	maxEpochMS = 7258118400000 // 2200-01-01
)

// LoggedTime is the time of a log line's epoch-milliseconds stamp, or now when the
// stamp is implausible.
func LoggedTime(ms int64) time.Time {
	if ms > minEpochMS && ms < maxEpochMS {
		return time.UnixMilli(ms).UTC()
	}
	return time.Now().UTC()
}

// StableEventID is a ULID at t whose random part is a hash of seed: the same logged
// request always gets the same event id, so a log batch delivered twice (the
// pipeline is at-least-once) yields duplicates that can be dropped downstream.
func StableEventID(t time.Time, seed string) string {
	sum := sha256.Sum256([]byte(seed))
	id, err := ulid.New(ulid.Timestamp(t), bytes.NewReader(sum[:10]))
	if err != nil {
		return audit.NewEventIDAt(t)
	}
	return id.String()
}

// Route is the tool and transport of a request, from its route template (resource:
// "/mcp", ToolsResource, or "" or "-" when unknown), its path, and the path
// parameters API Gateway matched (nil for none). It is the one reading of a
// request's route for every record builder: the MCP server, the authorizer, the
// access log and the WAF log. A /tools/{name} request is REST and names its tool
// (the name parameter, else the path's last segment), even a tool named "mcp";
// with no resource known, a path with a /tools/ segment is such a request. Any
// other request names no tool here (an MCP call names it in its body) and takes
// Transport's answer.
func Route(resource, path string, params map[string]string) (tool, transport string) {
	resource = strings.TrimSpace(resource)
	if resource == ToolsResource || (Absent(resource) && strings.Contains(path, "/tools/")) {
		if tool = params["name"]; tool == "" {
			tool = ToolFromPath(path)
		}
		return tool, audit.TransportREST
	}
	return "", Transport(resource, strings.TrimRight(strings.TrimSpace(path), "/"))
}
