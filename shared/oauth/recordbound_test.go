package oauth

import (
	"context"
	"strings"
	"testing"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/audit/record"
	"github.com/aacworkflow/aacmcp/shared/auth"
)

// Every authorization record stays under the 1 KB line, whatever its caller-chosen
// text (a client name, a metadata-document client id, a User-Agent, all at the
// longest a request can bring and made of characters the line writes as escapes):
// it is built by shared/audit/record like every other record.
func TestAuthorizationRecordsStayUnderTheLine(t *testing.T) {
	h := newHarness(t)
	for _, text := range []string{
		strings.Repeat("\x01", maxParamLen),
		strings.Repeat(`"`, maxParamLen),
		strings.Repeat("\u2028", maxParamLen/3),
		strings.Repeat("a", 8192),
	} {
		for _, action := range audit.Actions {
			for _, denied := range []apperr.Code{"", apperr.PermissionDenied, apperr.InvalidToken} {
				ev := event{
					action: action, denied: denied,
					clientID: "https://" + text, name: text,
					workspace: text, user: text, tokenID: text, grantID: text,
					scopes: auth.AllScopes, requested: auth.AllScopes,
					requestID: text, ua: text, addr: text,
				}
				if err := h.srv.record(context.Background(), ev); err != nil {
					t.Fatalf("%s: %v", action, err)
				}
				rec, _ := h.sink.last(action)
				line, err := audit.MarshalLine(rec)
				if err != nil {
					t.Fatal(err)
				}
				if n := len(line) - 1; n >= record.MaxLine {
					t.Fatalf("%s (%q...): line is %d bytes, want < %d", action, text[:4], n, record.MaxLine)
				}
			}
		}
	}
}
