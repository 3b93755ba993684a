package oauth

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/oauth/clientmeta"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// registrationWindow is the rate limit's window.
const registrationWindow = time.Hour

// registrationResponse is RFC 7591 section 3.2.1: the registered metadata, the new
// client_id and, for a confidential client, its secret (shown this once).
type registrationResponse struct {
	ClientID                string   `json:"client_id"`
	ClientSecret            string   `json:"client_secret,omitempty"`
	ClientIDIssuedAt        int64    `json:"client_id_issued_at"`
	ClientSecretExpiresAt   *int64   `json:"client_secret_expires_at,omitempty"`
	ClientName              string   `json:"client_name,omitempty"`
	ClientURI               string   `json:"client_uri,omitempty"`
	LogoURI                 string   `json:"logo_uri,omitempty"`
	RedirectURIs            []string `json:"redirect_uris"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	ApplicationType         string   `json:"application_type"`
	// A private_key_jwt client's keys, as registered.
	JWKSURI    string          `json:"jwks_uri,omitempty"`
	JWKS       json.RawMessage `json:"jwks,omitempty"`
	SigningAlg string          `json:"token_endpoint_auth_signing_alg,omitempty"`
}

// register is POST /oauth/register (RFC 7591). Registration is open under either
// client policy: under the allow-list, the new client_id must then be allowed by an
// admin before it can authorize (a registration cannot know it in advance).
func (q *request) register() {
	ctx := q.ctx()
	if mt, _, _ := strings.Cut(q.r.Header.Get("Content-Type"), ";"); !strings.EqualFold(strings.TrimSpace(mt), "application/json") {
		q.jsonError(oerr(ErrInvalidClientMetadata, "the registration request must be application/json"))
		return
	}
	// Every attempt counts, valid or not: the limit is on the source, so a flood of
	// malformed requests is throttled too.
	now := q.s.now().UTC()
	ip := sourceIP(q.r.RemoteAddr)
	retry, e := q.countSource("oauth_register", registrationWindow, q.s.cfg.RegistrationLimit)
	if e != nil {
		q.jsonError(e)
		return
	}
	if retry > 0 {
		writeJSON(q.w, http.StatusTooManyRequests, errorBody{Error: string(ErrTemporarilyUnavailable),
			Description: "too many registrations from this address; retry after " + strconv.FormatInt(retry, 10) + " seconds"})
		return
	}
	// One byte more than the parser accepts, so that it can say the body is too large.
	body, err := io.ReadAll(io.LimitReader(q.r.Body, clientmeta.MaxRegistrationBytes+1))
	if err != nil {
		q.jsonError(oerr(ErrInvalidClientMetadata, "the registration request body could not be read"))
		return
	}
	c, err := clientmeta.ParseRegistration(body)
	if err != nil {
		var ce *clientmeta.Error
		if errors.As(err, &ce) {
			q.jsonError(oerr(ErrorCode(ce.Code), ce.Description))
			return
		}
		q.jsonError(oerr(ErrInvalidClientMetadata, "the registration request is not valid client metadata"))
		return
	}
	rc := store.OAuthClient{
		ClientID: randomString(), Name: c.Name, RedirectURIs: c.RedirectURIs,
		ApplicationType: c.ApplicationType, TokenEndpointAuthMethod: c.TokenEndpointAuthMethod,
		GrantTypes: c.GrantTypes, ClientURI: c.ClientURI, SourceIP: ip,
		CreatedAt: now, LastUsedAt: now, JWKSURI: c.JWKSURI, JWKS: c.JWKS, SigningAlg: c.SigningAlg,
	}
	if rc.TokenEndpointAuthMethod == "" {
		rc.TokenEndpointAuthMethod = authNone
	}
	var secret string
	if rc.TokenEndpointAuthMethod == authSecretPost || rc.TokenEndpointAuthMethod == authSecretBasic {
		secret = randomString()
		rc.SecretHash = auth.Hash(secret)
	}
	if err := q.s.cfg.Store.CreateOAuthClient(ctx, rc); err != nil {
		q.jsonError(q.internal("stored the registration", err))
		return
	}
	ev := q.event(audit.ActionClientRegistered)
	ev.clientID, ev.name = rc.ClientID, rc.Name
	if q.s.record(ctx, ev) != nil {
		if err := q.s.cfg.Store.DeleteOAuthClient(ctx, rc.ClientID); err != nil {
			q.s.log.ErrorContext(ctx, "oauth: removing an unaudited registration failed", "client_id", rc.ClientID, "err", err)
		}
		q.jsonError(oerr(ErrServerError, "the registration could not be audited, so it was not kept; try again"))
		return
	}
	resp := registrationResponse{
		ClientID: rc.ClientID, ClientSecret: secret, ClientIDIssuedAt: now.Unix(),
		ClientName: rc.Name, ClientURI: rc.ClientURI, LogoURI: c.LogoURI, RedirectURIs: rc.RedirectURIs,
		GrantTypes: rc.GrantTypes, ResponseTypes: []string{"code"},
		TokenEndpointAuthMethod: rc.TokenEndpointAuthMethod, ApplicationType: rc.ApplicationType,
		JWKSURI: rc.JWKSURI, SigningAlg: rc.SigningAlg,
	}
	if rc.JWKS != "" {
		resp.JWKS = json.RawMessage(rc.JWKS)
	}
	if secret != "" {
		var never int64 // RFC 7591: 0 means the secret does not expire
		resp.ClientSecretExpiresAt = &never
	}
	writeJSON(q.w, http.StatusCreated, resp)
}
