// Command mcp is the MCP Lambda behind API Gateway (see mcpfn).
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/aacworkflow/aacmcp/functions/mcp/mcpfn"
)

func main() {
	f, log, err := mcpfn.FromEnv(context.Background(), os.Getenv, os.Stdout)
	if err != nil {
		// Exiting during init makes Lambda report an init error with this line in the
		// log, instead of failing each request later.
		log.Error("mcp function init failed", "err", err)
		os.Exit(1)
	}
	// Library code that logs through slog's default (the catalog) logs JSON too.
	slog.SetDefault(log)
	// f.Close is not called: Lambda ends a sandbox with SIGKILL, and SIGTERM first
	// only when an extension is registered (lambda.WithEnableSIGTERM registers one,
	// adding a call to every cold start). What Close would wait for is the store's
	// housekeeping after an answer; a sandbox frozen with some in flight finishes it
	// when the next invocation thaws it, and one shut down while frozen loses it,
	// which costs a few bytes in an item and no count (dynamo.Store.UpdateUsage).
	lambda.Start(f.Handle)
}
