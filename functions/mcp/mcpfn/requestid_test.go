package mcpfn

import (
	"context"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aacworkflow/aacmcp/shared/catalog"
)

// The request id of a call (its audit records, its X-Request-Id) is API Gateway's
// extended request id: a client can set $context.requestId with x-amzn-RequestId,
// but not the extended one.
func TestRequestIDIsTheExtendedRequestID(t *testing.T) {
	fn := New(Config{Catalog: catalog.New(catalog.Deps{})})
	ev := events.APIGatewayProxyRequest{
		Resource: "/healthz", Path: "/healthz", HTTPMethod: "GET",
		Headers: map[string]string{"Host": "api.example.com", "x-amzn-RequestId": "chosen-by-the-client"},
		RequestContext: events.APIGatewayProxyRequestContext{
			Stage: "prod", Path: "/prod/healthz", HTTPMethod: "GET",
			RequestID: "chosen-by-the-client", ExtendedRequestID: "Ext0Gw=",
		},
	}
	resp, err := fn.Handle(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	got := resp.Headers["X-Request-Id"]
	if got == "" && len(resp.MultiValueHeaders["X-Request-Id"]) > 0 {
		got = resp.MultiValueHeaders["X-Request-Id"][0]
	}
	if got != "Ext0Gw=" {
		t.Errorf("X-Request-Id = %q, want the extended request id", got)
	}
}
