package oauthfn

import (
	"context"
	"testing"
)

// TestRegistrationSourceBehindCloudFront: behind the front door a registration is
// attributed (per-address limit, audit record) to the viewer CloudFront names, and
// only when the function is told to trust it.
func TestRegistrationSourceBehindCloudFront(t *testing.T) {
	const edge = "130.176.0.12"
	for _, tt := range []struct {
		name  string
		trust bool
		want  string
	}{
		{"trusted", true, "198.51.100.23"},
		{"not trusted", false, edge},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f, sink := devFunction(t, "https://d111111abcdef8.cloudfront.net")
			f.trustViewer = tt.trust
			reg := `{"client_name":"Test","redirect_uris":["https://client.example/cb"],"token_endpoint_auth_method":"none"}`
			ev := event("POST", "/prod/oauth/register", "/oauth/register", "prod", "abc.execute-api.eu-west-1.amazonaws.com", reg)
			ev.MultiValueHeaders["CloudFront-Viewer-Address"] = []string{"198.51.100.23:51734"}
			ev.RequestContext.Identity.SourceIP = edge
			resp, err := f.Handle(context.Background(), ev)
			if err != nil || resp.StatusCode != 201 {
				t.Fatalf("register: %d %s %v", resp.StatusCode, resp.Body, err)
			}
			if len(sink.recs) != 1 || sink.recs[0].SourceIP != tt.want {
				t.Errorf("audit records %+v, want source %s", sink.recs, tt.want)
			}
		})
	}
}
