// Command digest is the scheduled Lambda function that writes the audit bucket's
// hourly digests (see digestfn).
package main

import (
	"github.com/aacworkflow/aacmcp/functions/digest/digestfn"
	"github.com/aacworkflow/aacmcp/shared/lambdaenv"
)

func main() {
	lambdaenv.Main("digest", digestfn.FromEnv, func(f *digestfn.Function) any { return f.Handle })
}
