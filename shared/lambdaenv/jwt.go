package lambdaenv

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/aacworkflow/aacmcp/shared/auth/jwtaccess/jwtconf"
)

// The external authorization server whose JWT access tokens the authorizer accepts
// (shared/auth/jwtaccess). Unset AACMCP_JWT_ISSUER means none. The MCP function
// reads only the issuer: Load adds it to AuthorizationServers, so the resource
// metadata names it.
const (
	EnvJWTIssuer         = "AACMCP_JWT_ISSUER"
	EnvJWTAudience       = "AACMCP_JWT_AUDIENCE" // comma-separated; default AACMCP_PUBLIC_URL + "/mcp"
	EnvJWTJWKSURL        = "AACMCP_JWT_JWKS_URL" // default: the issuer's metadata jwks_uri
	EnvJWTClients        = "AACMCP_JWT_CLIENTS"  // comma-separated client_id values accepted
	EnvJWTAlgorithms     = "AACMCP_JWT_ALGORITHMS"
	EnvJWTUserClaim      = "AACMCP_JWT_USER_CLAIM"
	EnvJWTWorkspace      = "AACMCP_JWT_WORKSPACE"
	EnvJWTWorkspaceClaim = "AACMCP_JWT_WORKSPACE_CLAIM"
	EnvJWTRequireATJWT   = "AACMCP_JWT_REQUIRE_AT_JWT"
	EnvPublicURL         = "AACMCP_PUBLIC_URL"
)

// JWT is the external issuer's configuration; Issuer "" means none.
type JWT = jwtconf.Settings

// LoadJWT reads the AACMCP_JWT_* variables. The audience defaults to the public
// /mcp URL (unless only AACMCP_JWT_CLIENTS is set); with neither it is an error, since a token must be checked to be meant
// for this resource and the authorizer cannot know its own URL otherwise.
func LoadJWT(getenv func(string) string) (JWT, error) {
	get := func(k string) string { return strings.TrimSpace(getenv(k)) }
	j := JWT{
		Issuer:         get(EnvJWTIssuer),
		Audiences:      SplitList(get(EnvJWTAudience)),
		Clients:        SplitList(get(EnvJWTClients)),
		JWKSURL:        get(EnvJWTJWKSURL),
		Algorithms:     SplitList(get(EnvJWTAlgorithms)),
		UserClaim:      get(EnvJWTUserClaim),
		Workspace:      get(EnvJWTWorkspace),
		WorkspaceClaim: get(EnvJWTWorkspaceClaim),
	}
	if j.Issuer == "" {
		for _, k := range []string{EnvJWTAudience, EnvJWTClients, EnvJWTJWKSURL, EnvJWTAlgorithms, EnvJWTUserClaim, EnvJWTWorkspace, EnvJWTWorkspaceClaim, EnvJWTRequireATJWT} {
			if get(k) != "" {
				return JWT{}, fmt.Errorf("environment variable %s is set but %s is not", k, EnvJWTIssuer)
			}
		}
		return JWT{}, nil
	}
	if v := get(EnvJWTRequireATJWT); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return JWT{}, fmt.Errorf("environment variable %s: %q is not true or false", EnvJWTRequireATJWT, v)
		}
		j.RequireATJWT = b
	}
	// Allowed clients without an audience: the issuer's tokens carry no aud
	// (Amazon Cognito); see jwtaccess.Config.Clients.
	if len(j.Audiences) == 0 && len(j.Clients) == 0 {
		pub := strings.TrimRight(get(EnvPublicURL), "/")
		if pub == "" {
			return JWT{}, fmt.Errorf("environment variable %s is set but neither %s nor %s is (the audience tokens must name)", EnvJWTIssuer, EnvJWTAudience, EnvPublicURL)
		}
		j.Audiences = []string{pub + "/mcp"}
	}
	return j, nil
}
