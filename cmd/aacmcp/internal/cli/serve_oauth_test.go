package cli

import (
	"strings"
	"testing"
)

// TestOAuthMode: the banner says how people sign in, and with --dev behind a public
// URL it says that no one can, because the dev sign-in page refuses every request
// that reaches the server by a name other than loopback.
func TestOAuthMode(t *testing.T) {
	upstream := oauthFlags{issuer: "https://id.example.com"}
	for _, tc := range []struct {
		name  string
		of    oauthFlags
		on    bool
		base  string
		want  string // contained; "" means the line is empty
		avoid string
	}{
		{"no authorization server", oauthFlags{}, false, "http://127.0.0.1:8080", "", ""},
		{"dev on loopback", oauthFlags{}, true, "http://127.0.0.1:8080", "through the dev sign-in page", "no one"},
		{"dev on localhost", oauthFlags{}, true, "http://localhost:8080", "through the dev sign-in page", "no one"},
		{"dev behind a public URL", oauthFlags{}, true, "https://mcp.example.com", "no one can sign in: the dev sign-in page answers only at a loopback URL, not at https://mcp.example.com; give --oidc-issuer", "through the dev sign-in page"},
		{"upstream provider behind a public URL", upstream, true, "https://mcp.example.com", "people sign in at https://id.example.com", "dev sign-in"},
	} {
		got := oauthMode(tc.of, tc.on, tc.base)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) || (tc.avoid != "" && strings.Contains(got, tc.avoid)) {
			t.Errorf("%s: oauthMode = %q, want it to contain %q and not %q", tc.name, got, tc.want, tc.avoid)
		}
	}
}
