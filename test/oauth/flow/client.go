package flow

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"golang.org/x/oauth2"
)

// RegisterPublicClient registers a public client (no secret) for redirectURI
// through dynamic client registration (RFC 7591), as any MCP client may, and
// returns its client id.
func RegisterPublicClient(t testing.TB, issuer, name, redirectURI string) string {
	t.Helper()
	body, err := json.Marshal(map[string]any{
		"client_name":                name,
		"redirect_uris":              []string{redirectURI},
		"grant_types":                []string{"authorization_code"},
		"response_types":             []string{"code"},
		"token_endpoint_auth_method": "none",
		"application_type":           "native",
	})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(issuer+"/oauth/register", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var reg struct {
		ClientID    string `json:"client_id"`
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&reg); err != nil {
		t.Fatalf("registration answer: HTTP %d: %v", resp.StatusCode, err)
	}
	if resp.StatusCode != http.StatusCreated || reg.ClientID == "" {
		t.Fatalf("registration: HTTP %d %s %s", resp.StatusCode, reg.Error, reg.Description)
	}
	return reg.ClientID
}

// AuthorizationURL is a public client's authorization request at the issuer's
// /oauth/authorize: the code flow with a PKCE S256 challenge of verifier, for the
// resource <issuer>/mcp.
func AuthorizationURL(issuer, clientID, redirectURI, scope, state, verifier string) string {
	q := url.Values{
		"response_type":         {"code"},
		"client_id":             {clientID},
		"redirect_uri":          {redirectURI},
		"state":                 {state},
		"code_challenge":        {oauth2.S256ChallengeFromVerifier(verifier)},
		"code_challenge_method": {"S256"},
		"resource":              {issuer + "/mcp"},
	}
	if scope != "" {
		q.Set("scope", scope)
	}
	return issuer + "/oauth/authorize?" + q.Encode()
}
