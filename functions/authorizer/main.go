// Command authorizer is the API Gateway REQUEST authorizer Lambda (see authorizerfn).
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/aacworkflow/aacmcp/functions/authorizer/authorizerfn"
)

func main() {
	a, log, err := authorizerfn.FromEnv(context.Background(), os.Getenv, os.Stdout)
	if err != nil {
		// Exiting during init makes Lambda report an init error with this line in the
		// log, instead of failing each request later.
		log.Error("authorizer init failed", "err", err)
		os.Exit(1)
	}
	// Library code that logs through slog's default (the catalog) logs JSON too.
	slog.SetDefault(log)
	lambda.Start(a.Handle)
}
