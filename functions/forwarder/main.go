// Command forwarder is the audit forwarder Lambda fed by CloudWatch Logs
// subscriptions (see forwarderfn).
package main

import (
	"github.com/aacworkflow/aacmcp/functions/forwarder/forwarderfn"
	"github.com/aacworkflow/aacmcp/shared/lambdaenv"
)

func main() {
	lambdaenv.Main("forwarder", forwarderfn.FromEnv, func(f *forwarderfn.Forwarder) any { return f.Handle })
}
