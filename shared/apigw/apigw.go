// Package apigw holds what more than one Lambda function reads from an API
// Gateway REST event, so that no function imports another function's package.
package apigw

import (
	"strings"

	"github.com/aws/aws-lambda-go/events"
)

// BasePath is the prefix the client's URL has before the route: the stage on the
// execute-api domain ("/prod"), a base path mapping on a custom domain, or "". The
// request context's path is the full path the client used, the event's path the
// route's; their difference is the prefix. The MCP function serves its routes under
// it, and the OAuth function names its issuer and endpoints with it.
func BasePath(ev events.APIGatewayProxyRequest) string {
	full, route := ev.RequestContext.Path, ev.Path
	if full != "" && route != "" && full != route && strings.HasSuffix(full, route) {
		return strings.TrimSuffix(full, route)
	}
	// Paths that differ in escaping: fall back to the stage when the full path starts
	// with it.
	if st := ev.RequestContext.Stage; st != "" && strings.HasPrefix(full, "/"+st+"/") {
		return "/" + st
	}
	return ""
}
