// Command mcp is the MCP Lambda behind API Gateway (see mcpfn).
package main

import (
	"github.com/aacworkflow/aacmcp/functions/mcp/mcpfn"
	"github.com/aacworkflow/aacmcp/shared/lambdaenv"
)

func main() {
	lambdaenv.Main("mcp function", mcpfn.FromEnv, func(f *mcpfn.Function) any { return f.Handle })
}
