// Package jwtconf holds the settings of the external issuer whose JWT access tokens
// are accepted (shared/auth/jwtaccess). It has no dependencies, so that lambdaenv,
// which every function links, can read them without linking the JOSE code into the
// MCP function.
package jwtconf

// Settings are an external issuer's configuration; Issuer "" means none.
type Settings struct {
	// Issuer is the exact iss value, such as https://login.example.com/oauth2/default.
	Issuer string
	// Audiences: aud must contain one of them. A token for another resource of
	// the same issuer must not work here (RFC 9068 section 4), so this is
	// required unless Clients is set.
	Audiences []string
	// Clients, when set, are the only client_id (or azp) values accepted. With
	// Clients and no Audiences, aud is not checked: that is for issuers whose
	// access tokens carry no aud, such as Amazon Cognito, where an app client
	// dedicated to this server stands in for the audience.
	Clients []string
	// JWKSURL skips discovery when set.
	JWKSURL string
	// Algorithms accepted ("RS256", "ES256", ...); empty means jwtaccess.DefaultAlgorithms.
	Algorithms []string
	// UserClaim names the claim holding the person's e-mail, looked up among the
	// members' e-mail addresses; "" means jwtaccess.DefaultUserClaim.
	UserClaim string
	// A person may be a member of several workspaces. Workspace pins the one this
	// issuer's tokens act in; WorkspaceClaim names a claim that says which. With
	// neither, the person must be a member of exactly one workspace. At most one
	// of the two may be set.
	Workspace      string
	WorkspaceClaim string
	// RequireATJWT refuses tokens whose typ is not at+jwt (RFC 9068 section 4).
	// Off by default: Entra ID, Cognito and Okta send typ JWT or none.
	RequireATJWT bool
}
