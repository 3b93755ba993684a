package oauth

import (
	"net/http"
	"slices"

	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/oauth/clientmeta"
)

// Metadata is the authorization server metadata document (RFC 8414), with the
// client_id_metadata_document_supported flag of the MCP client-registration draft and
// authorization_response_iss_parameter_supported of RFC 9207.
type Metadata struct {
	Issuer                                     string   `json:"issuer"`
	AuthorizationEndpoint                      string   `json:"authorization_endpoint"`
	TokenEndpoint                              string   `json:"token_endpoint"`
	RegistrationEndpoint                       string   `json:"registration_endpoint"`
	RevocationEndpoint                         string   `json:"revocation_endpoint"`
	ResponseTypesSupported                     []string `json:"response_types_supported"`
	ResponseModesSupported                     []string `json:"response_modes_supported"`
	GrantTypesSupported                        []string `json:"grant_types_supported"`
	CodeChallengeMethodsSupported              []string `json:"code_challenge_methods_supported"`
	TokenEndpointAuthMethodsSupported          []string `json:"token_endpoint_auth_methods_supported"`
	TokenEndpointAuthSigningAlgValuesSupported []string `json:"token_endpoint_auth_signing_alg_values_supported"`
	RevocationEndpointAuthMethodsSupported     []string `json:"revocation_endpoint_auth_methods_supported"`
	RevocationEndpointAuthSigningAlgValues     []string `json:"revocation_endpoint_auth_signing_alg_values_supported"`
	ScopesSupported                            []string `json:"scopes_supported"`
	ClientIDMetadataDocumentSupported          bool     `json:"client_id_metadata_document_supported"`
	AuthorizationResponseIssParameterSupported bool     `json:"authorization_response_iss_parameter_supported"`
	ServiceDocumentation                       string   `json:"service_documentation,omitempty"`
}

// Client authentication methods at the token and revocation endpoints.
const (
	authNone        = "none"
	authSecretPost  = "client_secret_post"
	authSecretBasic = "client_secret_basic"
)

var authMethods = []string{authNone, authSecretPost, authSecretBasic, authPrivateKeyJWT}

// signingAlgs are the algorithms private_key_jwt assertions may use.
func signingAlgs() []string {
	out := make([]string, len(clientmeta.SigningAlgs))
	for i, a := range clientmeta.SigningAlgs {
		out[i] = string(a)
	}
	return out
}

// Metadata is the RFC 8414 document for issuer (no trailing slash).
func (s *Server) Metadata(issuer string) Metadata {
	return Metadata{
		Issuer:                                 issuer,
		AuthorizationEndpoint:                  issuer + pathAuthorize,
		TokenEndpoint:                          issuer + pathToken,
		RegistrationEndpoint:                   issuer + pathRegister,
		RevocationEndpoint:                     issuer + pathRevoke,
		ResponseTypesSupported:                 []string{"code"},
		ResponseModesSupported:                 []string{"query"},
		GrantTypesSupported:                    []string{"authorization_code", "refresh_token"},
		CodeChallengeMethodsSupported:          []string{"S256"},
		TokenEndpointAuthMethodsSupported:      slices.Clone(authMethods),
		RevocationEndpointAuthMethodsSupported: slices.Clone(authMethods),
		// RFC 8414 section 2: required once private_key_jwt is listed.
		TokenEndpointAuthSigningAlgValuesSupported: signingAlgs(),
		RevocationEndpointAuthSigningAlgValues:     signingAlgs(),
		ScopesSupported:                            slices.Clone(auth.AllScopes),
		// Metadata documents are only fetched when a fetcher is configured; without
		// one, advertising them would send clients down a path that fails.
		ClientIDMetadataDocumentSupported:          s.cfg.Clients != nil,
		AuthorizationResponseIssParameterSupported: true,
		ServiceDocumentation:                       s.cfg.ServiceDocumentation,
	}
}

func (q *request) metadata() {
	// The document changes only with the deployment: clients may cache it briefly.
	q.w.Header().Set("Cache-Control", "public, max-age=300")
	writeJSON(q.w, http.StatusOK, q.s.Metadata(q.issuer))
}
