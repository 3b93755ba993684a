package record

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/auth"
)

func TestTransport(t *testing.T) {
	tests := []struct {
		resource, path, want string
	}{
		{"/mcp", "/prod/mcp", audit.TransportMCP},
		{" /mcp ", "", audit.TransportMCP},
		{"/tools/{name}", "/prod/tools/get_issue", audit.TransportREST},
		// A tool named "mcp" is still a REST call.
		{"/tools/{name}", "/prod/tools/mcp", audit.TransportREST},
		// No resource (a request API Gateway routed nowhere): judged by the path.
		{"", "/custom/prefix/mcp", audit.TransportMCP},
		{"", "/custom/prefix/mcp ", audit.TransportMCP},
		{"-", "/prod/tools/get_issue", audit.TransportREST},
		{"", "", audit.TransportREST},
	}
	for _, tt := range tests {
		if got := Transport(tt.resource, tt.path); got != tt.want {
			t.Errorf("Transport(%q, %q) = %q, want %q", tt.resource, tt.path, got, tt.want)
		}
	}
}

// TestRoute: the tool and transport of a request, as every record builder reads
// them (API Gateway's resource and path parameters, the WAF log's URI, the local
// server's path).
func TestRoute(t *testing.T) {
	tests := []struct {
		resource, path  string
		params          map[string]string
		tool, transport string
	}{
		{"/tools/{name}", "/tools/get_issue", map[string]string{"name": "get_issue"}, "get_issue", audit.TransportREST},
		{"/tools/{name}", "/tools/get%20issue", nil, "get issue", audit.TransportREST},
		{"/tools/{name}", "/prod/tools/delete_issue", nil, "delete_issue", audit.TransportREST},
		{"/tools/{name}", "/tools/a/b", nil, "", audit.TransportREST},
		{"/tools/{name}", "/prod/tools/mcp", nil, "mcp", audit.TransportREST},
		{"/mcp", "/mcp", nil, "", audit.TransportMCP},
		// A stage or custom-domain prefix named tools is not a tool.
		{"/mcp", "/tools/mcp", nil, "", audit.TransportMCP},
		{"/tools", "/tools", nil, "", audit.TransportREST},
		// No resource (the WAF log, the local server): judged by the path.
		{"", "/prod/tools/get_issue", nil, "get_issue", audit.TransportREST},
		{"", "/tools/mcp", nil, "mcp", audit.TransportREST},
		{"-", "/prod/tools/get_issue", nil, "get_issue", audit.TransportREST},
		{"", "/prod/mcp", nil, "", audit.TransportMCP},
		{"", "/prod/mcp/", nil, "", audit.TransportMCP},
		{"", "/mcp", nil, "", audit.TransportMCP},
		{"", "/", nil, "", audit.TransportREST},
		{"", "", nil, "", audit.TransportREST},
	}
	for _, tt := range tests {
		tool, transport := Route(tt.resource, tt.path, tt.params)
		if tool != tt.tool || transport != tt.transport {
			t.Errorf("Route(%q, %q, %v) = %q, %q, want %q, %q", tt.resource, tt.path, tt.params, tool, transport, tt.tool, tt.transport)
		}
	}
}

func TestToolFromPath(t *testing.T) {
	tests := []struct{ path, want string }{
		{"/prod/tools/get_issue", "get_issue"},
		{"/tools/get_issue", "get_issue"},
		{"/prod/tools/get_issue/", "get_issue"},
		{" /prod/tools/get_issue ", "get_issue"},
		{"/prod/tools/get%5Fissue", "get_issue"},
		{"/prod/tools/%zz", "%zz"}, // not an escape: kept as sent
		{"/prod/tools/a/b", ""},
		{"/prod/tools/", ""},
		{"/prod/mcp", ""},
		{"", ""},
		{"/a/tools/b/tools/c", "c"},
	}
	for _, tt := range tests {
		if got := ToolFromPath(tt.path); got != tt.want {
			t.Errorf("ToolFromPath(%q) = %q, want %q", tt.path, got, tt.want)
		}
	}
}

func TestTruncate(t *testing.T) {
	tests := []struct {
		s    string
		n    int
		want string
	}{
		{"abc", 3, "abc"},
		{"abcd", 3, "abc"},
		{"ab\u00e9", 3, "ab"}, // é is two bytes: never split
		{"\u00e9", 0, ""},
		{"", 5, ""},
	}
	for _, tt := range tests {
		if got := Truncate(tt.s, tt.n); got != tt.want {
			t.Errorf("Truncate(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}

func TestClean(t *testing.T) {
	tests := []struct{ in, want string }{
		{"-", ""},
		{" - ", ""},
		{"", ""},
		{"curl/8", "curl/8"},
		{"a\xffb", "a\uFFFDb"},
		{strings.Repeat("x", MaxText+10), strings.Repeat("x", MaxText)},
	}
	for _, tt := range tests {
		if got := Clean(tt.in); got != tt.want {
			t.Errorf("Clean(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// fullRequest has every caller-influenced field past its bound: the descriptive
// text, the source IP (from a header a proxy may pass on), and the ids of who (a
// refused token's id comes from the token it presented; a client id is the URL a
// connector chose for its metadata document).
func fullRequest(filler string) Request {
	long := strings.Repeat(filler, 2*MaxText)
	return Request{
		Principal: &auth.Principal{
			WorkspaceID: long, UserID: long, TokenID: long, Scopes: []string{"issues:write", "issues:read"},
			ClientID: strings.Repeat(filler, 4*MaxClientID),
		},
		Tool: long, Transport: audit.TransportREST,
		RequestID: long, JSONRPCID: long, ClientName: long, ClientVersion: long,
		ProtocolVersion: long, UserAgent: long, SourceIP: long,
	}
}

// realRequest is a record as production writes them: real ids, a 30-byte token
// id, an IPv6 source at its longest textual form, and long descriptive text that
// Fit must cut first.
func realRequest(filler string) Request {
	long := strings.Repeat(filler, 2*MaxText)
	return Request{
		Principal: &auth.Principal{
			WorkspaceID: "ws_acme", UserID: "usr_admin", TokenID: "tok_01KBF8ZQ5X8N2M4C7D9E1G3H6J", Scopes: []string{"issues:write", "issues:read"},
			ClientID: "https://connector.example/" + strings.Repeat("m", MaxClientID-len("https://connector.example/")),
		},
		Tool: "delete_issue", Transport: audit.TransportREST,
		RequestID: long, JSONRPCID: long, ClientName: long, ClientVersion: long,
		ProtocolVersion: long, UserAgent: long,
		SourceIP: "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255",
	}
}

func TestBuildStaysUnderTheLine(t *testing.T) {
	end := time.Date(2026, 12, 1, 23, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name, filler string
		code         apperr.Code
	}{
		{"ascii", "a", apperr.InvalidArguments},
		{"multi-byte", "\u00e9", apperr.InsufficientScope},
		{"escaped", "\"", apperr.InternalError},
		{"control", "\x01", ""},
		// The longest reason, on the record that also carries the longest
		// confirmation (the question put to a person).
		{"longest reason", "a", apperr.HumanConfirmationRequired},
	} {
		for _, req := range []struct {
			name string
			req  Request
		}{{"every field at its cap", fullRequest(tt.filler)}, {"real ids", realRequest(tt.filler)}} {
			t.Run(tt.name+"/"+req.name, func(t *testing.T) {
				r := Start(req.req)
				Describe(&r, false, true, []string{"issues:write"})
				SetResourceID(&r, strings.Repeat(tt.filler, 4*MaxText))
				r.ArgsHMAC = strings.Repeat("a", 64)
				r.IdempotencyKeyHMAC = strings.Repeat("b", 64)
				SetConfirmation(&r, audit.ConfirmationElicited)
				Finish(&r, end, tt.code, false, 1500*time.Millisecond)

				line, err := audit.MarshalLine(r)
				if err != nil {
					t.Fatal(err)
				}
				if len(line) >= MaxLine {
					t.Errorf("line is %d bytes, want < %d: %s", len(line), MaxLine, line)
				}
				if err := r.Validate(); err != nil {
					t.Errorf("record invalid: %v", err)
				}
				for name, f := range map[string]string{
					"tool": r.Tool, "user_agent": r.UserAgent, "resource_id": r.ResourceID, "source_ip": r.SourceIP,
					"workspace_id": r.WorkspaceID, "user_id": r.UserID, "token_id": r.TokenID,
				} {
					if len(f) > MaxText || !utf8.ValidString(f) {
						t.Errorf("%s = %q: over %d bytes or not UTF-8", name, f, MaxText)
					}
				}
				if len(r.SourceIP) > MaxSourceIP || len(r.ClientID) > MaxClientID {
					t.Errorf("source_ip %d bytes, client_id %d bytes: over their caps", len(r.SourceIP), len(r.ClientID))
				}
				// The outcome, the confirmation and the digests are never cut.
				if r.Reason != string(tt.code) || r.Confirmation != audit.ConfirmationElicited || r.Outcome != string(tt.code.Outcome()) || r.DurationMS != 1500 ||
					r.Timestamp != audit.FormatTime(end) || len(r.ArgsHMAC) != 64 || len(r.IdempotencyKeyHMAC) != 64 {
					t.Errorf("record lost its outcome or digests: %+v", r)
				}
				if got := strings.Join(r.ScopesProvided, " "); got != "issues:read issues:write" {
					t.Errorf("scopes_provided = %q, want sorted", got)
				}
				// With real ids the descriptive text gives way first: who, what and the
				// network source are whole.
				if want := req.req.Principal; req.name == "real ids" && (r.WorkspaceID != want.WorkspaceID || r.UserID != want.UserID ||
					r.TokenID != want.TokenID || r.ClientID != want.ClientID || r.Tool != req.req.Tool || r.SourceIP != req.req.SourceIP) {
					t.Errorf("record with real ids lost who, what or source: %+v", r)
				}
			})
		}
	}
}

func TestDigests(t *testing.T) {
	h, err := audit.NewHMAC([]byte(strings.Repeat("k", audit.MinHMACKeyBytes)))
	if err != nil {
		t.Fatal(err)
	}
	other := audit.EphemeralHMAC()
	canonical := []byte(`{"id":"AAC-1","title":"secret plans"}`)
	const key = "key-4d1f-secret"

	var a, b, c audit.Record
	SetArgs(&a, h, canonical)
	SetIdempotencyKey(&a, h, key)
	SetArgs(&b, h, canonical)
	SetIdempotencyKey(&b, h, key)
	SetArgs(&c, other, canonical)
	SetIdempotencyKey(&c, other, key)
	if a.ArgsHMAC != b.ArgsHMAC || a.IdempotencyKeyHMAC != b.IdempotencyKeyHMAC {
		t.Errorf("same key and input, different digests: %+v %+v", a, b)
	}
	if a.ArgsHMAC == c.ArgsHMAC || a.IdempotencyKeyHMAC == c.IdempotencyKeyHMAC {
		t.Error("digests do not depend on the deployment's key")
	}
	if a.ArgsHMAC == a.IdempotencyKeyHMAC || len(a.ArgsHMAC) != 64 || len(a.IdempotencyKeyHMAC) != 64 {
		t.Errorf("digests %q, %q: want two distinct 64-char HMACs", a.ArgsHMAC, a.IdempotencyKeyHMAC)
	}
	line, err := audit.MarshalLine(a)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(line), key) || strings.Contains(string(line), "secret plans") {
		t.Errorf("record carries the key or the arguments in clear: %s", line)
	}
	SetIdempotencyKey(&a, h, "")
	if a.IdempotencyKeyHMAC != "" {
		t.Errorf("no key: idempotency_key_hmac = %q, want empty", a.IdempotencyKeyHMAC)
	}
}

func TestStartWithoutPrincipal(t *testing.T) {
	r := Start(Request{Tool: "get_issue", Transport: audit.TransportMCP})
	if r.WorkspaceID != "" || r.TokenID != "" || r.ScopesProvided == nil || r.ScopesRequired == nil {
		t.Errorf("record of an anonymous request = %+v, want no who and empty (not nil) scopes", r)
	}
	Describe(&r, true, false, nil)
	if r.ScopesRequired == nil || !r.ReadOnly || r.Destructive {
		t.Errorf("Describe = %+v", r)
	}
}

func TestStableEventID(t *testing.T) {
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	a, b, c := StableEventID(at, "apigw:x"), StableEventID(at, "apigw:x"), StableEventID(at, "apigw:y")
	if a != b || a == c {
		t.Errorf("StableEventID: same seed %q/%q, other seed %q", a, b, c)
	}
}

func TestLoggedTime(t *testing.T) {
	if got := LoggedTime(1764547200000); !got.Equal(time.UnixMilli(1764547200000)) {
		t.Errorf("LoggedTime = %v", got)
	}
	if got := LoggedTime(-5); got.Year() < 2026 {
		t.Errorf("LoggedTime(-5) = %v, want now", got)
	}
}
