// Package upstream signs a person in at an upstream OpenID Connect provider for the
// authorization server: authorization code flow with PKCE (S256) and a nonce, the ID
// token verified by go-oidc. It has no HTTP handlers; the caller owns the callback
// route and keeps the state, nonce and verifier of each pending sign-in.
package upstream

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// Config names the upstream provider and this server's registration there.
type Config struct {
	Issuer, ClientID, ClientSecret string
	Scopes                         []string     // default openid email profile
	HTTPClient                     *http.Client // nil: http.DefaultClient
}

// Identity is who the provider says signed in. Email is only an account identifier
// when EmailVerified is true.
type Identity struct {
	Issuer, Subject, Email, Name string
	EmailVerified                bool
}

// Provider is a discovered upstream provider. It is safe for concurrent use.
type Provider struct {
	oidc     *oidc.Provider
	verifier *oidc.IDTokenVerifier
	oauth    oauth2.Config // RedirectURL is set per request
	client   *http.Client
	clientID string
}

// New runs OIDC discovery against cfg.Issuer (go-oidc), which also checks that the
// discovery document names cfg.Issuer as its issuer.
func New(ctx context.Context, cfg Config) (*Provider, error) {
	switch {
	case cfg.Issuer == "":
		return nil, errors.New("upstream: issuer is required")
	case cfg.ClientID == "":
		return nil, errors.New("upstream: client id is required")
	case cfg.ClientSecret == "":
		return nil, errors.New("upstream: client secret is required")
	}
	client := cfg.HTTPClient
	if client == nil {
		client = http.DefaultClient
	}
	// go-oidc keeps the client of this context for its JWKS fetches too.
	op, err := oidc.NewProvider(oidc.ClientContext(ctx, client), cfg.Issuer)
	if err != nil {
		return nil, fmt.Errorf("upstream: discovery of %s: %w", cfg.Issuer, err)
	}
	var meta struct {
		AuthMethods   []string `json:"token_endpoint_auth_methods_supported"`
		PKCEMethods   []string `json:"code_challenge_methods_supported"`
		ResponseTypes []string `json:"response_types_supported"`
	}
	if err := op.Claims(&meta); err != nil {
		return nil, fmt.Errorf("upstream: discovery document of %s: %w", cfg.Issuer, err)
	}
	// Many providers support PKCE without advertising it (the field is optional), so
	// only an explicit list without S256 is a refusal.
	if meta.PKCEMethods != nil && !slices.Contains(meta.PKCEMethods, "S256") {
		return nil, fmt.Errorf("upstream: %s does not support PKCE S256 (code_challenge_methods_supported %q)", cfg.Issuer, meta.PKCEMethods)
	}
	if !slices.Contains(meta.ResponseTypes, "code") {
		return nil, fmt.Errorf("upstream: %s does not support response_type code (response_types_supported %q)", cfg.Issuer, meta.ResponseTypes)
	}
	style, err := authStyle(meta.AuthMethods)
	if err != nil {
		return nil, fmt.Errorf("upstream: %s: %w", cfg.Issuer, err)
	}
	endpoint := op.Endpoint()
	endpoint.AuthStyle = style
	return &Provider{
		oidc:     op,
		verifier: op.Verifier(&oidc.Config{ClientID: cfg.ClientID}),
		oauth: oauth2.Config{
			ClientID:     cfg.ClientID,
			ClientSecret: cfg.ClientSecret,
			Endpoint:     endpoint,
			Scopes:       scopes(cfg.Scopes),
		},
		client:   client,
		clientID: cfg.ClientID,
	}, nil
}

// authStyle picks the client authentication the provider advertises, so that a code
// is posted once: oauth2's auto-detection retries a failed exchange with the other
// style, which sends a single-use code twice and hides the first error.
func authStyle(methods []string) (oauth2.AuthStyle, error) {
	switch {
	case methods == nil, slices.Contains(methods, "client_secret_basic"):
		// OpenID Connect Discovery: the default when the field is absent.
		return oauth2.AuthStyleInHeader, nil
	case slices.Contains(methods, "client_secret_post"):
		return oauth2.AuthStyleInParams, nil
	default:
		return 0, fmt.Errorf("supports neither client_secret_basic nor client_secret_post (token_endpoint_auth_methods_supported %q)", methods)
	}
}

func scopes(s []string) []string {
	if len(s) == 0 {
		return []string{oidc.ScopeOpenID, "email", "profile"}
	}
	if slices.Contains(s, oidc.ScopeOpenID) {
		return slices.Clone(s)
	}
	// Without openid the provider answers plain OAuth, with no ID token to verify.
	return append([]string{oidc.ScopeOpenID}, s...)
}

// NewVerifier returns a PKCE code verifier (RFC 7636, 256 bits).
func NewVerifier() string { return oauth2.GenerateVerifier() }

// NewNonce returns an unguessable nonce (130 bits) for one sign-in.
func NewNonce() string { return rand.Text() }

// AuthCodeURL is where the browser goes: code flow, S256 challenge of verifier, nonce,
// state, redirectURL (our /oauth/callback). nonce and verifier come from NewNonce and
// NewVerifier, fresh for each sign-in.
func (p *Provider) AuthCodeURL(redirectURL, state, nonce, verifier string) string {
	c := p.oauth
	c.RedirectURL = redirectURL
	return c.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oidc.Nonce(nonce))
}

// Exchange redeems the code, verifies the ID token (signature, iss, aud, azp, exp,
// nonce) and returns the identity. When the ID token carries no e-mail (OpenID Connect
// Core 5.4 lets a provider keep profile and e-mail claims for the UserInfo endpoint
// when it issues an access token), they are read from UserInfo, whose subject must be
// the ID token's. Errors are plain errors (never shown to the person verbatim); those
// of oauth2 (*oauth2.RetrieveError) and go-oidc are wrapped.
func (p *Provider) Exchange(ctx context.Context, redirectURL, code, verifier, nonce string) (Identity, error) {
	// An empty nonce would accept an ID token minted without one.
	if code == "" || verifier == "" || nonce == "" {
		return Identity{}, errors.New("upstream: code, verifier and nonce are required")
	}
	ctx = oidc.ClientContext(ctx, p.client)
	c := p.oauth
	c.RedirectURL = redirectURL
	tok, err := c.Exchange(ctx, code, oauth2.VerifierOption(verifier))
	if err != nil {
		return Identity{}, fmt.Errorf("upstream: token exchange: %w", err)
	}
	raw, ok := tok.Extra("id_token").(string)
	if !ok || raw == "" {
		return Identity{}, errors.New("upstream: token response has no id_token")
	}
	idt, err := p.verifier.Verify(ctx, raw)
	if err != nil {
		return Identity{}, fmt.Errorf("upstream: id token: %w", err)
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(nonce)) != 1 {
		return Identity{}, errors.New("upstream: id token nonce does not match the sign-in")
	}
	var payload json.RawMessage
	if err := idt.Claims(&payload); err != nil {
		return Identity{}, fmt.Errorf("upstream: id token claims: %w", err)
	}
	claims, err := decodeClaims(payload)
	if err != nil {
		return Identity{}, fmt.Errorf("upstream: id token claims: %w", err)
	}
	if err := checkAuthorizedParty(idt.Audience, claims.AuthorizedParty, p.clientID); err != nil {
		return Identity{}, fmt.Errorf("upstream: id token: %w", err)
	}
	if idt.Subject == "" {
		return Identity{}, errors.New("upstream: id token has no subject")
	}
	id := Identity{
		Issuer:        idt.Issuer,
		Subject:       idt.Subject,
		Email:         claims.Email,
		EmailVerified: claims.EmailVerified,
		Name:          claims.Name,
	}
	if id.Email != "" || p.oidc.UserInfoEndpoint() == "" {
		return id, nil
	}
	ui, err := p.userInfo(ctx, idt, tok)
	if err != nil {
		return Identity{}, err
	}
	// E-mail and its verification come from one source, never one from each.
	id.Email, id.EmailVerified = ui.Email, ui.EmailVerified
	if id.Name == "" {
		id.Name = ui.Name
	}
	return id, nil
}

func (p *Provider) userInfo(ctx context.Context, idt *oidc.IDToken, tok *oauth2.Token) (claims, error) {
	// at_hash binds the access token to the verified ID token (OpenID Connect Core
	// 3.1.3.8); it is optional in the code flow, so only a present one is checked.
	if idt.AccessTokenHash != "" {
		if err := idt.VerifyAccessToken(tok.AccessToken); err != nil {
			return claims{}, fmt.Errorf("upstream: access token: %w", err)
		}
	}
	ui, err := p.oidc.UserInfo(ctx, oauth2.StaticTokenSource(tok))
	if err != nil {
		return claims{}, fmt.Errorf("upstream: userinfo: %w", err)
	}
	var payload json.RawMessage
	if err := ui.Claims(&payload); err != nil {
		return claims{}, fmt.Errorf("upstream: userinfo claims: %w", err)
	}
	c, err := decodeClaims(payload)
	if err != nil {
		return claims{}, fmt.Errorf("upstream: userinfo claims: %w", err)
	}
	// OpenID Connect Core 5.3.2: a UserInfo response for another subject is discarded.
	if c.Subject != idt.Subject {
		return claims{}, errors.New("upstream: userinfo subject differs from the id token's")
	}
	return c, nil
}
