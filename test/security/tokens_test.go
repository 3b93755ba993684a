package security

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/auth"
	gt "github.com/aacworkflow/aacmcp/shared/guard/guardtest"
	"github.com/aacworkflow/aacmcp/test/load/server"
)

// TestTokenMatrix presents every kind of bad credential on both transports. Each is
// refused with 401, the same public message (no oracle telling unknown from revoked),
// a WWW-Authenticate challenge, and exactly one audit record with reason
// invalid_token that never holds the secret. A valid token is the control.
func TestTokenMatrix(t *testing.T) {
	e := newEnv(t, mcpserverConfig())
	ctx := context.Background()
	now := time.Now()
	valid := e.admin

	expired, expRec, err := auth.IssueToken(ctx, e.w.Store, auth.TokenRequest{WorkspaceID: gt.WS, UserID: gt.Admin, Name: "expired", Scopes: auth.AllScopes, TTL: time.Hour}, now.Add(-2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	revoked, revRec, err := auth.IssueToken(ctx, e.w.Store, auth.TokenRequest{WorkspaceID: gt.WS, UserID: gt.Admin, Name: "revoked", Scopes: auth.AllScopes, TTL: time.Hour}, now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.w.Store.UpdateTokenRevoked(ctx, revRec.TokenID, now); err != nil {
		t.Fatal(err)
	}
	unknown, _, err := auth.Mint() // well-formed, checksum right, never stored
	if err != nil {
		t.Fatal(err)
	}
	body := valid[len(auth.TokenPrefix):]
	lastFlipped := valid[:len(valid)-1] + string(flip(valid[len(valid)-1]))

	cases := []struct {
		name    string
		header  string // Authorization header value; "" sends none
		tokenID string // the public id the record must name ("" for unknown secrets)
		secret  string // what must never be echoed
	}{
		{"no header", "", "", ""},
		{"empty bearer", "Bearer ", "", ""},
		{"basic scheme", "Basic " + valid, "", valid},
		{"scheme only", "Bearer", "", ""},
		{"two tokens", "Bearer " + valid + " " + valid, "", valid},
		{"expired", "Bearer " + expired, expRec.TokenID, expired},
		{"revoked", "Bearer " + revoked, revRec.TokenID, revoked},
		{"wrong prefix", "Bearer aak_" + body, "", body},
		{"upper-case prefix", "Bearer AAC_" + body, "", body},
		{"no prefix", "Bearer " + body, "", body},
		{"wrong checksum", "Bearer " + lastFlipped, "", lastFlipped},
		{"truncated by one", "Bearer " + valid[:len(valid)-1], "", valid[:len(valid)-1]},
		{"truncated to the prefix", "Bearer " + valid[:8], "", ""},
		{"one character more", "Bearer " + valid + "0", "", valid},
		{"unknown but well-formed", "Bearer " + unknown, "", unknown},
		{"non-base62 character", "Bearer " + valid[:10] + "-" + valid[11:], "", valid[11:]},
		{"tab inside", "Bearer " + valid[:10] + "\t" + valid[11:], "", valid[11:]},
		{"very long", "Bearer aac_" + strings.Repeat("A", 8000), "", strings.Repeat("A", 64)},
	}
	refMessage := ""
	for _, tr := range transports {
		for _, tc := range cases {
			t.Run(tr+"/"+tc.name, func(t *testing.T) {
				before := len(e.sink.Records())
				hdr := http.Header{}
				if tc.header != "" {
					hdr["Authorization"] = []string{tc.header}
				}
				r, err := e.post(tr, "list_issues", `{}`, hdr)
				if err != nil {
					t.Fatal(err)
				}
				if r.Status != http.StatusUnauthorized || r.Code != string(apperr.InvalidToken) {
					t.Fatalf("status %d code %q, want 401 invalid_token; body %s", r.Status, r.Code, r.Body)
				}
				if refMessage == "" {
					refMessage = r.Message
				}
				if r.Message != refMessage {
					t.Errorf("message %q differs from %q: the refusal tells token failures apart", r.Message, refMessage)
				}
				ch := r.Header.Get("WWW-Authenticate")
				if !strings.HasPrefix(ch, "Bearer ") || !strings.Contains(ch, "resource_metadata=") {
					t.Errorf("WWW-Authenticate %q", ch)
				}
				recs := e.sink.Records()[before:]
				if len(recs) != 1 {
					t.Fatalf("%d audit records, want 1", len(recs))
				}
				rec := recs[0]
				if rec.Reason != "invalid_token" || rec.Outcome != "denied" || rec.WorkspaceID != "" || rec.TokenID != tc.tokenID {
					t.Errorf("record reason=%q outcome=%q workspace=%q token_id=%q, want invalid_token denied, no workspace, token_id %q",
						rec.Reason, rec.Outcome, rec.WorkspaceID, rec.TokenID, tc.tokenID)
				}
				if tc.secret != "" {
					if strings.Contains(string(r.Body), tc.secret) || strings.Contains(strings.Join(headerValues(r.Header), "\n"), tc.secret) {
						t.Errorf("the response echoes the presented secret")
					}
					if strings.Contains(string(mustJSON(t, rec)), tc.secret) {
						t.Errorf("the audit record holds the presented secret")
					}
				}
			})
		}
		// Control: the scheme is case-insensitive (RFC 9110) and the valid token works.
		r, err := e.post(tr, "list_issues", `{}`, http.Header{"Authorization": {"bearer " + valid}})
		if err != nil || r.Code != "" {
			t.Errorf("%s: valid token with a lower-case scheme: %v %q", tr, err, r.Code)
		}
		// A token in the query string is not a credential.
		r, err = e.c.Post(context.Background(), e.url(tr, "list_issues")+"?access_token="+valid, e.body(tr, "list_issues", `{}`), nil)
		if err != nil || r.Status != http.StatusUnauthorized {
			t.Errorf("%s: token in the query string: %v status %d, want 401", tr, err, r.Status)
		}
	}
}

// TestTokenOfRemovedMember: a valid token whose user has lost its member record
// reaches nothing, whatever its scopes.
func TestTokenOfRemovedMember(t *testing.T) {
	e := newEnv(t, mcpserverConfig())
	tok := e.w.Token(t, gt.WS, gt.Removed, auth.AllScopes...)
	for _, tr := range transports {
		for _, tool := range e.w.Catalog.Tools() {
			r, rec := e.call(t, tr, tok, tool.Name, e.w.Args(t, tool.Name))
			if r.Code != string(apperr.PermissionDenied) || rec.Reason != "permission_denied" {
				t.Errorf("%s %s as a removed member: code %q, record %q; want permission_denied", tr, tool.Name, r.Code, rec.Reason)
			}
		}
	}
}

// post sends a tools/call (MCP) or POST /tools/{tool} (REST) with raw arguments.
func (e *env) post(transport, tool, args string, hdr http.Header) (server.Response, error) {
	return e.c.Post(context.Background(), e.url(transport, tool), e.body(transport, tool, args), hdr)
}

func (e *env) url(transport, tool string) string {
	if transport == server.MCP {
		return e.c.Base + "/mcp"
	}
	return e.c.Base + "/tools/" + tool
}

func (e *env) body(transport, tool, args string) []byte {
	if transport == server.REST {
		return []byte(args)
	}
	return []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}`)
}

func flip(c byte) byte {
	if c == 'A' {
		return 'B'
	}
	return 'A'
}

func headerValues(h http.Header) []string {
	var out []string
	for k, vs := range h {
		for _, v := range vs {
			out = append(out, k+": "+v)
		}
	}
	return out
}
