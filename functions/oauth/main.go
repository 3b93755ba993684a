// Command oauth is the authorization server's Lambda behind API Gateway (see
// oauthfn).
package main

import (
	"github.com/aacworkflow/aacmcp/functions/oauth/oauthfn"
	"github.com/aacworkflow/aacmcp/shared/lambdaenv"
)

func main() {
	lambdaenv.Main("oauth function", oauthfn.FromEnv, func(f *oauthfn.Function) any { return f.Handle })
}
