// Command aacmcp is the AACWorkflow MCP server's local server, local API Gateway and
// admin CLI. Everything but signal handling and the exit code lives in internal/cli.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/aacworkflow/aacmcp/cmd/aacmcp/internal/cli"
)

func main() {
	// The first SIGINT or SIGTERM cancels the context (serve and gateway then shut down
	// gracefully, audit tail stops); stop() restores the default so a second one kills.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()
	code := cli.Run(ctx, os.Args[1:], cli.Env{Stdout: os.Stdout, Stderr: os.Stderr})
	stop()
	os.Exit(code)
}
