// Command oauth is the authorization server's Lambda behind API Gateway (see
// oauthfn).
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/aacworkflow/aacmcp/functions/oauth/oauthfn"
)

func main() {
	f, log, err := oauthfn.FromEnv(context.Background(), os.Getenv, os.Stdout)
	if err != nil {
		// Exiting during init makes Lambda report an init error with this line.
		log.Error("oauth function init failed", "err", err)
		os.Exit(1)
	}
	slog.SetDefault(log)
	lambda.Start(f.Handle)
}
