package lambdaenv

import (
	"context"
	"io"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	// The GC target of a Lambda process, set before the other package
	// initializers allocate (see the package).
	_ "github.com/aacworkflow/aacmcp/shared/lambdaenv/internal/coldgc"
)

// FromEnv is every function package's constructor: the function built from the
// environment, and the logger it logs through (also on failure, to report it).
type FromEnv[F any] func(ctx context.Context, getenv func(string) string, stdout io.Writer) (F, *slog.Logger, error)

// Main is the whole of a function's main. The function is built once, at init; a
// failure exits there, so that Lambda reports an init error with the log line
// instead of failing each request later. The function's logger becomes slog's
// default, so library code that logs through it (the catalog) logs JSON too.
// handler picks the function's handler (its Handle method) for the runtime.
//
// Close is never called: Lambda ends a sandbox with SIGKILL, and sends SIGTERM
// first only when an extension is registered (lambda.WithEnableSIGTERM registers
// one, adding a call to every cold start). What a Close would wait for is
// housekeeping after an answer; a frozen sandbox finishes it when the next
// invocation thaws it, and one shut down while frozen loses it, which the stores
// are built to tolerate (dynamo.Store.UpdateUsage).
func Main[F any](name string, fromEnv FromEnv[F], handler func(F) any) {
	f, log, err := fromEnv(context.Background(), os.Getenv, os.Stdout)
	if err != nil {
		log.Error(name+" init failed", "err", err)
		os.Exit(1)
	}
	slog.SetDefault(log)
	lambda.Start(handler(f))
}
