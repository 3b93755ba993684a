// Package coldgc sets the garbage collector's target of a Lambda function process
// before the package initializers that allocate the most run.
//
// With the default GOGC=100 the first collection starts once the heap reaches 4 MB.
// The MCP function's package initializers alone allocate about 3.2 MB (the AWS SDK
// clients' schemas and endpoint tables, the JSON Schema metaschemas), and its setup
// and first answer cross the 4 MB: one collection, nearly all of it garbage, inside
// every cold start, about 2.5 ms of the 12 ms from the process's start to its first
// answer on the bench machine. GOGC=400 moves the first collection to 16 MB (the
// runtime scales its minimum heap with GOGC) and lets the heap grow to five times
// what is live instead of twice afterwards: a few MB in a sandbox of at least
// 128 MB that serves one request at a time, for a quarter of the collections.
//
// The package imports nothing but os and runtime/debug, so Go's initialization
// order (dependencies first, then by import path) runs it before the SDK and the
// schema compiler, whose paths sort after this module's. It changes nothing outside
// Lambda (no AWS_LAMBDA_RUNTIME_API) or when GOGC is set: the operator's setting
// wins.
package coldgc

import (
	"os"
	"runtime/debug"
)

// Percent is the GOGC of a Lambda function process that does not set GOGC.
const Percent = 400

func init() {
	if applies(os.Getenv) {
		debug.SetGCPercent(Percent)
	}
}

// applies: a process the Lambda runtime started (it sets AWS_LAMBDA_RUNTIME_API for
// custom runtimes, such as provided.al2023), whose environment does not choose GOGC.
func applies(getenv func(string) string) bool {
	return getenv("AWS_LAMBDA_RUNTIME_API") != "" && getenv("GOGC") == ""
}
