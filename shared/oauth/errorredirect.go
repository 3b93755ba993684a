package oauth

import (
	"net/http"
	"slices"
	"strings"

	"github.com/aacworkflow/aacmcp/shared/store"
)

// An authorization error is sent to the client's redirect URI (RFC 6749 section
// 4.1.2.1) only when that cannot make this server an open redirector (RFC 9700
// section 4.11.2): registration is open, so anyone can register a redirect URI
// that is a phishing page, and an error sent there at once would take a person
// from this server's link straight to it. Before the person has answered the
// consent page, which names the host they will be sent to, an error goes there
// only when the redirect URI cannot be an attacker's page:
//   - a loopback http URI (RFC 8252 section 7.3): it stays on the person's own
//     machine, and a native client waiting there learns why nothing came;
//   - a client an administrator allowed by name (the allow-list policy).
//
// Every other error before consent is an error page that names the error and links
// nowhere. The person is not known before sign-in, so "has this person approved
// this client" cannot be asked then; after the consent page it has been answered.

// errorsMayRedirect reports whether an error of an authorization request from
// clientID may be sent to redirectURI before the person has answered the consent
// page. A store failure answers no: the safe side is the page.
func (q *request) errorsMayRedirect(clientID, redirectURI string) bool {
	if strings.HasPrefix(redirectURI, "http://") && loopbackIssuer(redirectURI) {
		return true
	}
	pol, err := q.s.cfg.Store.GetOAuthPolicy(q.ctx())
	if err != nil {
		q.s.log.WarnContext(q.ctx(), "oauth: reading the client policy failed", "err", err)
		return false
	}
	return pol.Mode == store.OAuthPolicyAllowlist && slices.Contains(pol.Allowed, clientID)
}

// refuseAuthorization answers an authorization request's error before consent:
// at the redirect URI when errorsMayRedirect allows it, else on an error page.
func (q *request) refuseAuthorization(clientID, redirectURI, state string, e *Error) {
	if q.errorsMayRedirect(clientID, redirectURI) {
		q.redirectError(redirectURI, state, e)
		return
	}
	q.errorPage(http.StatusBadRequest, "This sign-in request was refused",
		"The application's request was refused ("+string(e.Code)+": "+e.Description+"). "+
			"This server does not send you back to an application you have not approved. Close this page and try connecting again from the application.")
}
