// Command authorizer is the API Gateway REQUEST authorizer Lambda (see authorizerfn).
package main

import (
	"github.com/aacworkflow/aacmcp/functions/authorizer/authorizerfn"
	"github.com/aacworkflow/aacmcp/shared/lambdaenv"
)

func main() {
	lambdaenv.Main("authorizer", authorizerfn.FromEnv, func(a *authorizerfn.Authorizer) any { return a.Handle })
}
