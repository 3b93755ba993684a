// Package approval is the workspace policy approve: a destructive call runs only
// once a person has approved it on aacmcp's own page, where they sign in as they
// did to connect the client. No client and no model can produce that answer: the
// page is on the server's origin, behind the authorization server's sign-in, and
// what it approves is bound to the call.
//
// An approval is a store.Approval keyed by Binding (workspace, member, principal,
// tool, argument HMAC, item version) and named by a link token: a confirm seal of
// the same claims, so a forged or edited link fails authentication before anything
// is read, and an expired one (confirm.Lifetime) fails by its own expiry. The same
// token is the MRTR requestState of a URL elicitation. The store makes the
// decision and its use single: pending -> granted|denied (the page) -> spent (the
// call), each one conditional write.
package approval

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"net/url"
	"strings"

	"github.com/aacworkflow/aacmcp/shared/confirm"
)

// PagePath is the approval page, one of the authorization server's routes: it
// shares their origin, their sign-in and their cookie path.
const PagePath = "/oauth/approve"

// TokenParam is the page's query parameter that carries the link token.
const TokenParam = "approval"

// ErrMalformedToken is what ParseToken returns for text that cannot be a token.
var ErrMalformedToken = errors.New("approval: the link token is malformed")

// Link is the page's URL for token on the server whose public base URL is base.
func Link(base, token string) string {
	return strings.TrimRight(base, "/") + PagePath + "?" + TokenParam + "=" + url.QueryEscape(token)
}

// ParseToken checks that s has a token's shape before it is opened: non-empty,
// at most confirm.MaxStateLen, base64url without padding. It exists so that the
// page refuses junk with one answer before any key is looked up.
func ParseToken(s string) (string, error) {
	if s == "" || len(s) > confirm.MaxStateLen {
		return "", ErrMalformedToken
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return "", ErrMalformedToken
		}
	}
	return s, nil
}

// Binding is the store key of the approval for the call c describes: a digest of
// every bound field, each length-prefixed so that no two calls share one. The
// nonce and the expiry are not part of it: the same call made again finds the
// approval its first attempt asked for.
func Binding(c confirm.Claims) string {
	h := sha256.New()
	h.Write([]byte("aacmcp-approval-binding-v1"))
	for _, f := range []string{c.Workspace, c.User, c.Principal, c.Tool, c.ArgsDigest, c.ItemVersion} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(f)))
		h.Write(n[:])
		h.Write([]byte(f))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Message is what a person reads with the link: in the refusal's text for a
// client that cannot open URLs (a model can show it in the chat), and in the URL
// elicitation. The link comes last, on a line of its own, so nothing around it
// is read as part of it.
func Message(it confirm.Item, link string) string {
	what := it.Kind
	if it.Key != "" {
		what += " " + confirm.Plain(it.Key, 32)
	}
	return "A person must approve deleting " + what + " on AACWorkflow's own page. Open the link, sign in, check what will be deleted, " +
		"type its key and press Approve; then make the same call again. The link is valid for 5 minutes and approves this one call:\n" + link
}
