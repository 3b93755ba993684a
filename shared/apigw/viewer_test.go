package apigw

import (
	"net/netip"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

func TestViewerIP(t *testing.T) {
	tests := []struct {
		in   string
		want string // "" = not a viewer address
	}{
		{"198.51.100.10:46532", "198.51.100.10"},
		{" 198.51.100.10:443 ", "198.51.100.10"},
		{"2001:db8:85a3::8a2e:370:7334:46532", "2001:db8:85a3::8a2e:370:7334"},
		{"[2001:db8::1]:443", "2001:db8::1"},
		{"::ffff:198.51.100.10:443", "198.51.100.10"},
		{"198.51.100.10", ""},
		{"198.51.100.10:", ""},
		{"198.51.100.10:70000", ""},
		{"198.51.100.10:-1", ""},
		{"2001:db8::1", ""},
		{"2001:db8::1:+443", ""},
		{"fe80::1%eth0:443", ""},
		{"[fe80::1%eth0]:443", ""},
		{"203.0.113.9, 198.51.100.10:443", ""},
		{"localhost:443", ""},
		{":443", ""},
		{"", ""},
	}
	for _, tt := range tests {
		a, ok := ViewerIP(tt.in)
		if got := map[bool]string{true: a.String(), false: ""}[ok]; got != tt.want {
			t.Errorf("ViewerIP(%q) = %q, %v; want %q", tt.in, a, ok, tt.want)
		}
	}
}

func TestSourceIP(t *testing.T) {
	const edge = "130.176.0.12" // a CloudFront edge server, as API Gateway sees it
	tests := []struct {
		name    string
		headers map[string]string
		multi   map[string][]string
		trust   bool
		want    string
	}{
		{"not trusted: the peer, whatever the header says", map[string]string{"CloudFront-Viewer-Address": "198.51.100.10:1"},
			map[string][]string{"CloudFront-Viewer-Address": {"198.51.100.10:1"}}, false, edge},
		{"trusted: the viewer", map[string]string{"CloudFront-Viewer-Address": "198.51.100.10:46532"},
			map[string][]string{"CloudFront-Viewer-Address": {"198.51.100.10:46532"}}, true, "198.51.100.10"},
		{"name in another case", map[string]string{"cloudfront-viewer-address": "2001:db8::7:443"}, nil, true, "2001:db8::7"},
		{"single-value map only", map[string]string{"CloudFront-Viewer-Address": "198.51.100.10:80"}, nil, true, "198.51.100.10"},
		{"missing: the peer", map[string]string{"X-Forwarded-For": "203.0.113.9, 198.51.100.10"}, nil, true, edge},
		{"two copies: the peer", map[string]string{"CloudFront-Viewer-Address": "198.51.100.10:1"},
			map[string][]string{"CloudFront-Viewer-Address": {"203.0.113.9:2", "198.51.100.10:1"}}, true, edge},
		{"two spellings: the peer", nil,
			map[string][]string{"CloudFront-Viewer-Address": {"203.0.113.9:2"}, "cloudfront-viewer-address": {"198.51.100.10:1"}}, true, edge},
		{"malformed: the peer", map[string]string{"CloudFront-Viewer-Address": "198.51.100.10"}, nil, true, edge},
	}
	for _, tt := range tests {
		if got := SourceIP(tt.headers, tt.multi, edge, tt.trust); got != tt.want {
			t.Errorf("%s: SourceIP = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestWithViewerSourceIP(t *testing.T) {
	ev := events.APIGatewayProxyRequest{MultiValueHeaders: map[string][]string{ViewerAddressHeader: {"198.51.100.10:46532"}}}
	ev.RequestContext.Identity.SourceIP = "130.176.0.12"
	if got := WithViewerSourceIP(ev, true).RequestContext.Identity.SourceIP; got != "198.51.100.10" {
		t.Errorf("trusted: source IP = %q", got)
	}
	if got := WithViewerSourceIP(ev, false).RequestContext.Identity.SourceIP; got != "130.176.0.12" {
		t.Errorf("not trusted: source IP = %q", got)
	}
	if ev.RequestContext.Identity.SourceIP != "130.176.0.12" {
		t.Error("the caller's event was changed")
	}
}

func FuzzViewerIP(f *testing.F) {
	for _, s := range []string{"198.51.100.10:46532", "2001:db8::1:443", "[::1]:1", "::ffff:1.2.3.4:5", "x:1", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, ok := ViewerIP(s)
		if !ok {
			return
		}
		// Whatever is accepted is a plain address a store key and an audit field can
		// hold: valid, no zone, never longer than the longest textual address.
		if !a.IsValid() || a.Zone() != "" || a.Is4In6() || len(a.String()) > 45 {
			t.Fatalf("ViewerIP(%q) = %v", s, a)
		}
		if b, err := netip.ParseAddr(a.String()); err != nil || b != a {
			t.Fatalf("ViewerIP(%q) = %v does not round-trip: %v", s, a, err)
		}
	})
}
