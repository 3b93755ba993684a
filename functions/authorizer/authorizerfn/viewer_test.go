package authorizerfn

import (
	"context"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/auth"
)

// edgeIP is a CloudFront edge server: API Gateway's source IP of every request that
// came through the front door.
const edgeIP = "130.176.0.12"

func viewerRequest(t *testing.T, viewer string) events.APIGatewayCustomAuthorizerRequestTypeRequest {
	t.Helper()
	// A well-formed token, so that each refusal is the verifier's (a lookup).
	secret, _, err := auth.Mint()
	if err != nil {
		t.Fatal(err)
	}
	req := events.APIGatewayCustomAuthorizerRequestTypeRequest{
		MethodArn: "arn:aws:execute-api:eu-west-1:123456789012:api1/prod/POST/mcp", Resource: "/mcp", Path: "/mcp",
		Headers:           map[string]string{"Authorization": "Bearer " + secret},
		MultiValueHeaders: map[string][]string{"Authorization": {"Bearer " + secret}},
		RequestContext: events.APIGatewayCustomAuthorizerRequestTypeRequestContext{
			Identity: events.APIGatewayCustomAuthorizerRequestTypeRequestIdentity{SourceIP: edgeIP},
		},
	}
	if viewer != "" {
		req.Headers["CloudFront-Viewer-Address"] = viewer
		req.MultiValueHeaders["CloudFront-Viewer-Address"] = []string{viewer}
	}
	return req
}

func TestSourceIPBehindCloudFront(t *testing.T) {
	refuse := verifierFunc(func(context.Context, string) (auth.Principal, error) {
		return auth.Principal{}, apperr.New(apperr.InvalidToken, auth.PublicMessage)
	})
	tests := []struct {
		name   string
		trust  bool
		viewer string
		want   string // the address counted and audited
	}{
		{"trusted viewer address", true, "198.51.100.23:51734", "198.51.100.23"},
		{"trusted IPv6 viewer address", true, "2001:db8::23:51734", "2001:db8::23"},
		{"trusted but absent: the peer", true, "", edgeIP},
		{"trusted but malformed: the peer", true, "198.51.100.23", edgeIP},
		{"not trusted: the peer, whatever the header says", false, "198.51.100.23:51734", edgeIP},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rej := &rejections{}
			fails := &memFailures{n: map[string]int64{}}
			a := New(Config{Verifier: refuse, Audit: rej, Failures: fails, FailureLimit: 5, TrustViewerAddress: tt.trust})
			resp, err := a.Handle(context.Background(), viewerRequest(t, tt.viewer))
			if err != nil || !Denied(resp) {
				t.Fatalf("answer %+v, %v; want the Deny", resp, err)
			}
			if len(fails.n) != 1 || fails.n[tt.want] != 1 {
				t.Errorf("failures counted %v, want one for %s", fails.n, tt.want)
			}
			if len(rej.reqs) != 1 || rej.reqs[0].SourceIP != tt.want {
				t.Errorf("audited %+v, want source %s", rej.reqs, tt.want)
			}
		})
	}
}
