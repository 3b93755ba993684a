package forwarderfn

import (
	"strings"

	"github.com/aacworkflow/aacmcp/shared/audit/accesslog"
)

// sampleLine renders accesslog.Format the way API Gateway would, with vars filled in
// and "-" for everything not given.
func sampleLine(vars map[string]string) string {
	out := accesslog.Format
	for _, v := range []string{
		"$context.requestTimeEpoch", "$context.extendedRequestId", "$context.requestId", "$context.identity.sourceIp",
		"$context.identity.userAgent", "$context.httpMethod", "$context.resourcePath",
		"$context.path", "$context.stage", "$context.protocol", "$context.status",
		"$context.error.responseType", "$context.responseLatency", "$context.integration.latency",
		"$context.authorizer.status", "$context.authorizer.latency", "$context.authorizer.requestId",
		"$context.authorizer.error",
	} {
		val, ok := vars[v]
		if !ok {
			val = "-"
		}
		out = strings.ReplaceAll(out, `"`+v+`"`, `"`+val+`"`)
	}
	return out
}
