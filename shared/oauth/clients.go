package oauth

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"strings"

	"github.com/aacworkflow/aacmcp/shared/oauth/clientmeta"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// client is a resolved client: from its metadata document, or registered here.
type client struct {
	clientmeta.Client
	registered bool
	secretHash string // registered confidential clients only
}

// resolveClient finds the client and applies the admin policy. Every refusal is
// invalid_client with a description that says which check failed; a store failure
// is server_error.
func (q *request) resolveClient(ctx context.Context, clientID string) (client, *Error) {
	if clientID == "" {
		return client{}, oerr(ErrInvalidClient, "client_id is required")
	}
	if len(clientID) > maxParamLen {
		return client{}, oerr(ErrInvalidClient, "client_id is longer than 2048 bytes")
	}
	var c client
	if clientmeta.IsMetadataURL(clientID) {
		if q.s.cfg.Clients == nil {
			return client{}, oerr(ErrInvalidClient, "this server does not accept client metadata documents; register the client (RFC 7591) instead")
		}
		doc, err := q.s.cfg.Clients.Fetch(ctx, clientID)
		if err != nil {
			var ce *clientmeta.Error
			if errors.As(err, &ce) {
				return client{}, oerr(ErrInvalidClient, "the client metadata document at "+quote(clientID)+" was refused: "+ce.Description)
			}
			q.s.log.WarnContext(ctx, "oauth: client metadata document fetch failed", "client_id", clientID, "err", err)
			return client{}, oerr(ErrInvalidClient, "the client metadata document at "+quote(clientID)+" could not be fetched")
		}
		c = client{Client: doc}
	} else {
		rc, err := q.s.cfg.Store.GetOAuthClient(ctx, clientID)
		if errors.Is(err, store.ErrNotFound) {
			return client{}, oerr(ErrInvalidClient, "unknown client_id "+quote(clientID)+": it is not registered here (a registration lapses after 90 days unused) and is not an https metadata-document URL")
		}
		if err != nil {
			return client{}, q.internal("looked up the client", err)
		}
		last := rc.LastUsedAt
		if last.Before(rc.CreatedAt) {
			last = rc.CreatedAt
		}
		if q.s.now().Sub(last) > store.OAuthClientLapse {
			return client{}, oerr(ErrInvalidClient, "the registration of client "+quote(clientID)+" lapsed after 90 days unused; the client must register again")
		}
		c = client{Client: fromRegistered(rc), registered: true, secretHash: rc.SecretHash}
	}
	pol, err := q.s.cfg.Store.GetOAuthPolicy(ctx)
	if err != nil {
		return client{}, q.internal("read the client policy", err)
	}
	if pol.Mode == store.OAuthPolicyAllowlist && !slices.Contains(pol.Allowed, clientID) {
		return client{}, oerr(ErrInvalidClient, "this server's administrator allows only listed clients, and "+quote(clientID)+" is not one; an admin can allow it with `aacmcp oauth clients allow`")
	}
	return c, nil
}

// touch records a registered client's use, which keeps its registration from
// lapsing. A failure is logged, not fatal: the request itself is fine.
func (q *request) touch(ctx context.Context, c client) {
	if !c.registered {
		return
	}
	if err := q.s.cfg.Store.UpdateOAuthClientUsed(ctx, c.ClientID, q.s.now().UTC()); err != nil {
		q.s.log.WarnContext(ctx, "oauth: recording client use failed", "client_id", c.ClientID, "err", err)
	}
}

func fromRegistered(rc store.OAuthClient) clientmeta.Client {
	return clientmeta.Client{
		ClientID:                rc.ClientID,
		Name:                    rc.Name,
		ClientURI:               rc.ClientURI,
		RedirectURIs:            slices.Clone(rc.RedirectURIs),
		TokenEndpointAuthMethod: rc.TokenEndpointAuthMethod,
		GrantTypes:              slices.Clone(rc.GrantTypes),
		ApplicationType:         rc.ApplicationType,
		JWKSURI:                 rc.JWKSURI,
		JWKS:                    rc.JWKS,
		SigningAlg:              rc.SigningAlg,
	}
}

// displayName is what a page calls the client: its self-asserted name, or its id.
func (c client) displayName() string {
	if c.Name != "" {
		return c.Name
	}
	return c.ClientID
}

// hostOf is the host a page shows for a URL: the host (with port) of an http(s) URL,
// "scheme:" plus host of another scheme (native apps' private-use schemes); an
// internationalized host as its A-label (clientmeta.DisplayHost).
func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	if u.Scheme == "http" || u.Scheme == "https" {
		return clientmeta.DisplayHost(u.Host)
	}
	if u.Host != "" {
		return u.Scheme + "://" + clientmeta.DisplayHost(u.Host)
	}
	return u.Scheme + ":"
}

// originOf is the CSP source for a redirect URI: its origin for http(s), its scheme
// for any other (a CSP source cannot name a host of a private-use scheme).
func originOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return ""
	}
	o := u.Scheme + ":"
	if u.Scheme == "http" || u.Scheme == "https" {
		o = u.Scheme + "://" + clientmeta.DisplayHost(u.Host) // a CSP source is ASCII
	}
	// A source list is split on spaces and ends at ';': a redirect URI must not be
	// able to add a directive to the policy that is meant to confine it.
	if strings.ContainsAny(o, " \t\r\n;,'\"") {
		return ""
	}
	return o
}
