package clientmeta

import (
	"errors"
	"net/url"
	"testing"
)

// A look-alike host (one label mixing scripts, such as "clаude.ai" with a Cyrillic
// "а") is refused wherever this package accepts a URL: a redirect URI, a client_uri
// and a client id URL. A single-script internationalized host is accepted, and is
// shown as its A-label (punycode), which no script can disguise.
func TestLookAlikeHosts(t *testing.T) {
	for _, tc := range []struct {
		host    string
		refused bool
		display string
	}{
		{"claude.ai", false, "claude.ai"},
		{"cl\u0430ude.ai", true, ""},   // Cyrillic а among Latin letters
		{"xn--clude-5ve.ai", true, ""}, // the same host spelled as its A-label
		{"CL\u0410UDE.ai", true, ""},   // upper case changes nothing
		{"p\u0430ypal.com", true, ""},  // Cyrillic а
		{"\u03b1pple.com", true, ""},   // Greek alpha
		{"m\u00fcnchen.example", false, "xn--mnchen-3ya.example"},
		{"\u043f\u0440\u0438\u043c\u0435\u0440.\u0440\u0444", false, "xn--e1afmkfd.xn--p1ai"}, // all Cyrillic
		{"\u6771\u4eac\u30bf\u30ef\u30fcabc.jp", false, "xn--abc-tl4bpjwc921zmo2b.jp"},        // Han, Katakana and Latin: Japanese
		{"example.com:8443", false, "example.com:8443"},
		{"127.0.0.1", false, "127.0.0.1"},
		{"[::1]:8080", false, "[::1]:8080"},
		{"a\u200db.example", true, ""}, // a joiner outside its context
	} {
		t.Run(tc.host, func(t *testing.T) {
			hostname := (&url.URL{Host: tc.host}).Hostname()
			if p := hostProblem(hostname); (p != "") != tc.refused {
				t.Fatalf("hostProblem(%q) = %q, refused want %v", hostname, p, tc.refused)
			}
			if !tc.refused {
				if got := DisplayHost(tc.host); got != tc.display {
					t.Errorf("DisplayHost(%q) = %q, want %q", tc.host, got, tc.display)
				}
			}
		})
	}
}

func TestLookAlikeHostsAreRefusedInMetadata(t *testing.T) {
	const lookalike = "https://cl\u0430ude.ai/api/mcp/auth_callback"
	for _, body := range []string{
		`{"redirect_uris":["` + lookalike + `"]}`,
		`{"redirect_uris":["https://cl%D0%B0ude.ai/api/mcp/auth_callback"]}`,
		`{"redirect_uris":["https://xn--clude-5ve.ai/cb"]}`,
	} {
		_, err := ParseRegistration([]byte(body))
		var ce *Error
		if !errors.As(err, &ce) || ce.Code != CodeInvalidRedirectURI {
			t.Errorf("ParseRegistration(%s) = %v, want invalid_redirect_uri", body, err)
		}
	}
	body := `{"redirect_uris":["https://claude.ai/cb"],"client_uri":"https://cl\u0430ude.ai/"}`
	if _, err := ParseRegistration([]byte(body)); err == nil {
		t.Errorf("ParseRegistration(%s) accepted a look-alike client_uri", body)
	}
	if _, err := ParseRegistration([]byte(`{"redirect_uris":["https://m\u00fcnchen.example/cb"]}`)); err != nil {
		t.Errorf("a single-script host was refused: %v", err)
	}
	for _, id := range []string{"https://cl\u0430ude.ai/oauth/mcp-oauth-client-metadata", "https://xn--clude-5ve.ai/oauth/meta"} {
		if IsMetadataURL(id) {
			t.Errorf("IsMetadataURL(%q) = true for a look-alike host", id)
		}
	}
	if !IsMetadataURL("https://claude.ai/oauth/mcp-oauth-client-metadata") {
		t.Error("the real client id URL is refused")
	}
}

// FuzzDisplayHost: whatever host a URL brings, what a page or a header shows is
// ASCII, and a host hostProblem accepts keeps its A-label form on a second pass.
func FuzzDisplayHost(f *testing.F) {
	for _, s := range []string{"claude.ai", "cl\u0430ude.ai", "xn--clude-5ve.ai", "m\u00fcnchen.example:8443", "[::1]:80", "\xff.example", "xn--.example", "a\u200db"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, hostport string) {
		d := DisplayHost(hostport)
		host := (&url.URL{Host: hostport}).Hostname()
		if isIDN(host) {
			for i := 0; i < len(d); i++ {
				if d[i] >= 0x80 {
					t.Fatalf("DisplayHost(%q) = %q is not ASCII", hostport, d)
				}
			}
		}
		if hostProblem(host) == "" && isIDN(host) {
			if again := DisplayHost(d); again != d {
				t.Fatalf("DisplayHost(%q) = %q, then %q", hostport, d, again)
			}
		}
	})
}
