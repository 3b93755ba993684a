// Command digest is the scheduled Lambda function that writes the audit bucket's
// hourly digests (see digestfn).
package main

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/aacworkflow/aacmcp/functions/digest/digestfn"
)

func main() {
	fn, log, err := digestfn.FromEnv(context.Background(), os.Getenv, os.Stdout)
	if err != nil {
		// Exiting during init makes Lambda report an init error with this line.
		log.Error("digest init failed", "err", err)
		os.Exit(1)
	}
	lambda.Start(fn.Handle)
}
