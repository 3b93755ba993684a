package lambdaenv

import (
	"slices"
	"strings"
	"testing"
)

func TestLoadJWT(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    JWT
		wantErr string
	}{
		{name: "none", env: map[string]string{}, want: JWT{}},
		{name: "audience from the public URL", env: map[string]string{EnvJWTIssuer: "https://idp.example.com", EnvPublicURL: "https://mcp.example.com/"},
			want: JWT{Issuer: "https://idp.example.com", Audiences: []string{"https://mcp.example.com/mcp"}}},
		{name: "everything", env: map[string]string{EnvJWTIssuer: "https://idp", EnvJWTAudience: "api://a, https://b/mcp", EnvJWTJWKSURL: "https://idp/keys",
			EnvJWTAlgorithms: "RS256,ES384", EnvJWTUserClaim: "upn", EnvJWTWorkspaceClaim: "ws", EnvJWTRequireATJWT: "true"},
			want: JWT{Issuer: "https://idp", Audiences: []string{"api://a", "https://b/mcp"}, JWKSURL: "https://idp/keys",
				Algorithms: []string{"RS256", "ES384"}, UserClaim: "upn", WorkspaceClaim: "ws", RequireATJWT: true}},
		{name: "clients instead of an audience", env: map[string]string{EnvJWTIssuer: "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_x", EnvJWTClients: "abc"},
			want: JWT{Issuer: "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_x", Clients: []string{"abc"}}},
		{name: "no audience", env: map[string]string{EnvJWTIssuer: "https://idp"}, wantErr: EnvJWTAudience},
		{name: "options without an issuer", env: map[string]string{EnvJWTAudience: "x"}, wantErr: EnvJWTIssuer},
		{name: "bad bool", env: map[string]string{EnvJWTIssuer: "https://idp", EnvJWTAudience: "x", EnvJWTRequireATJWT: "yes please"}, wantErr: EnvJWTRequireATJWT},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := LoadJWT(envOf(tt.env))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Issuer != tt.want.Issuer || !slices.Equal(got.Audiences, tt.want.Audiences) || !slices.Equal(got.Clients, tt.want.Clients) || got.JWKSURL != tt.want.JWKSURL ||
				!slices.Equal(got.Algorithms, tt.want.Algorithms) || got.UserClaim != tt.want.UserClaim || got.Workspace != tt.want.Workspace ||
				got.WorkspaceClaim != tt.want.WorkspaceClaim || got.RequireATJWT != tt.want.RequireATJWT {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestLoadAdvertisesTheJWTIssuer: the MCP function's resource metadata names the
// external issuer without a second variable, once.
func TestLoadAdvertisesTheJWTIssuer(t *testing.T) {
	for _, servers := range []string{"", "https://idp.example.com", "https://as.example.com"} {
		c, err := Load(envOf(map[string]string{EnvJWTIssuer: "https://idp.example.com", EnvAuthorizationServers: servers}))
		if err != nil {
			t.Fatal(err)
		}
		if n := len(slices.DeleteFunc(slices.Clone(c.AuthorizationServers), func(s string) bool { return s != "https://idp.example.com" })); n != 1 {
			t.Errorf("servers %q: advertised %q", servers, c.AuthorizationServers)
		}
	}
}
