package forwarderfn

import (
	"testing"

	"github.com/aacworkflow/aacmcp/shared/catalog"
)

func TestWAFViewerAttributed(t *testing.T) {
	const edge = "130.176.0.12"
	type hdr = struct{ Name, Value string }
	tests := []struct {
		name    string
		trust   bool
		rule    string
		headers []hdr
		want    string
	}{
		{"behind the front door: the viewer", true, "AWSManagedRulesCommonRuleSet",
			[]hdr{{"cloudfront-viewer-address", "198.51.100.23:51734"}}, "198.51.100.23"},
		{"not trusted: WAF's client", false, "AWSManagedRulesCommonRuleSet",
			[]hdr{{"cloudfront-viewer-address", "198.51.100.23:51734"}}, edge},
		{"blocked for not coming through CloudFront: the sender's own header is ignored", true, OriginVerifyRule,
			[]hdr{{"CloudFront-Viewer-Address", "198.51.100.23:51734"}}, edge},
		{"two copies: WAF's client", true, "BodySizeLimit",
			[]hdr{{"CloudFront-Viewer-Address", "203.0.113.9:1"}, {"cloudfront-viewer-address", "198.51.100.23:2"}}, edge},
		{"malformed: WAF's client", true, "BodySizeLimit", []hdr{{"CloudFront-Viewer-Address", "198.51.100.23"}}, edge},
		{"absent: WAF's client", true, "BodySizeLimit", nil, edge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var e WAFLogEntry
			e.Action = "BLOCK"
			e.TerminatingRuleID = tt.rule
			e.HTTPRequest.ClientIP = edge
			e.HTTPRequest.URI = "/prod/tools/get_issue"
			e.HTTPRequest.HTTPMethod = "POST"
			for _, h := range tt.headers {
				e.HTTPRequest.Headers = append(e.HTTPRequest.Headers, struct {
					Name  string `json:"name"`
					Value string `json:"value"`
				}{h.Name, h.Value})
			}
			r, ok := e.ViewerAttributed(tt.trust).Record(catalog.New(catalog.Deps{}))
			if !ok || r.SourceIP != tt.want {
				t.Errorf("record %v source %q, want %q", ok, r.SourceIP, tt.want)
			}
			if e.HTTPRequest.ClientIP != edge {
				t.Error("the caller's entry was changed")
			}
		})
	}
}
