package oauth

import (
	"net/http"
	"net/url"
	"slices"

	"github.com/aacworkflow/aacmcp/shared/oauth/clientmeta"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// Purposes of a pending record.
const (
	purposeAuthorize = "authorize" // ends in a code
	purposeGrants    = "grants"    // a sign-in to the grants page; ends in a session
	purposeSession   = "session"   // a grants-page session (ID = hash of its cookie)
)

// authzParams are the authorization request's parameters after the client and the
// redirect URI have been validated: an error among them may be sent back to the
// client's redirect URI (refuseAuthorization decides).
type authzParams struct {
	State         string
	CodeChallenge string
	Resource      string   // "" when absent
	Scopes        []string // nil: the person chooses
}

// parseAuthorizeParams decodes and checks the parameters of an authorization request
// other than client_id and redirect_uri (RFC 6749 section 4.1.1, RFC 7636, RFC 8707).
// The state is returned even with an error when it could be read, so that the error
// redirect carries it.
func parseAuthorizeParams(v url.Values) (authzParams, *Error) {
	var p authzParams
	state, e := param(v, "state", false)
	if e != nil {
		return p, e
	}
	p.State = state
	rt, e := param(v, "response_type", true)
	if e != nil {
		return p, e
	}
	if rt != "code" {
		return p, oerr(ErrUnsupportedResponseType, "response_type must be code (the authorization code flow); got "+quote(rt))
	}
	ch, e := param(v, "code_challenge", false)
	if e != nil {
		return p, e
	}
	method, e := param(v, "code_challenge_method", false)
	if e != nil {
		return p, e
	}
	switch {
	case ch == "":
		return p, oerr(ErrInvalidRequest, "PKCE is required: send code_challenge with code_challenge_method=S256")
	case method == "":
		// RFC 7636 section 4.3: an absent method means plain.
		return p, oerr(ErrInvalidRequest, "code_challenge_method is missing, which means plain; only S256 is accepted")
	case method != "S256":
		return p, oerr(ErrInvalidRequest, "code_challenge_method "+quote(method)+" is not accepted; only S256 is")
	case !validChallenge(ch):
		return p, oerr(ErrInvalidRequest, "code_challenge must be the 43-character base64url SHA-256 of the code verifier")
	}
	p.CodeChallenge = ch
	res, e := single(v, "resource")
	if e != nil {
		return p, oerr(ErrInvalidTarget, "only one resource may be requested: this server's /mcp")
	}
	p.Resource = res
	sc, e := single(v, "scope")
	if e != nil {
		return p, oerr(ErrInvalidScope, "the parameter scope is repeated; send one space-separated list")
	}
	scopes, e := parseScope(sc)
	if e != nil {
		return p, e
	}
	p.Scopes = scopes
	return p, nil
}

// authorize is GET /oauth/authorize.
func (q *request) authorize() {
	ctx := q.ctx()
	v := q.r.URL.Query()
	// Until the client and its redirect URI are known good, nothing is sent to the
	// redirect URI: an error there would make this server an open redirector.
	clientID, e := param(v, "client_id", true)
	if e != nil {
		q.errorPage(http.StatusBadRequest, "This sign-in link is not valid", e.Description)
		return
	}
	c, e := q.resolveClient(ctx, clientID)
	if e != nil {
		q.errorPageFor(e, "The application asking for access is not accepted")
		return
	}
	redirectURI, e := param(v, "redirect_uri", true)
	if e != nil {
		q.errorPage(http.StatusBadRequest, "This sign-in link is not valid", e.Description)
		return
	}
	if !clientmeta.RedirectAllowed(c.Client, redirectURI) {
		q.errorPage(http.StatusBadRequest, "This sign-in link is not valid",
			"The redirect_uri "+quote(redirectURI)+" is not one the client "+quote(c.displayName())+" registered, so this server will not send you there.")
		return
	}

	p, e := parseAuthorizeParams(v)
	if e != nil {
		q.refuseAuthorization(c.ClientID, redirectURI, p.State, e)
		return
	}
	if p.Resource != "" && p.Resource != q.resource() {
		q.refuseAuthorization(c.ClientID, redirectURI, p.State, oerr(ErrInvalidTarget, "resource must be "+q.resource()+" (or absent); got "+quote(p.Resource)))
		return
	}
	if len(c.GrantTypes) > 0 && !slices.Contains(c.GrantTypes, "authorization_code") {
		q.refuseAuthorization(c.ClientID, redirectURI, p.State, oerr(ErrUnauthorizedClient, "the client did not register the authorization_code grant type"))
		return
	}
	q.touch(ctx, c)
	q.startSignin(store.OAuthPending{
		Purpose:       purposeAuthorize,
		ClientID:      c.ClientID,
		ClientName:    c.displayName(),
		RedirectURI:   redirectURI,
		State:         p.State,
		CodeChallenge: p.CodeChallenge,
		Resource:      q.resource(), // absent means this server's /mcp (RFC 8707)
		Scopes:        p.Scopes,
	})
}
