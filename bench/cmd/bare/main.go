// Command bare serves the bench's bare mcp-go peer (package bare) on loopback.
//
//	bare -issues issues.json [-addr 127.0.0.1:0]
//
// issues.json is the bench's peer data file (package fixture): the workspace and
// its issues in list order. The listening address is
// printed on stdout as "listening http://ADDR" once the server accepts connections.
package main

import (
	"flag"
	"log/slog"
	"os"

	"github.com/aacworkflow/aacmcp/bench/bare"
	"github.com/aacworkflow/aacmcp/bench/peerfile"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	file := flag.String("issues", "", "peer data file: workspace and issues in list order")
	flag.Parse()
	if err := run(*addr, *file); err != nil {
		slog.Error("bare peer failed", "err", err)
		os.Exit(1)
	}
}

func run(addr, file string) error {
	data, err := peerfile.Read(file)
	if err != nil {
		return err
	}
	return bare.Serve(addr, bare.New(data.Workspace, data.Issues).Handler())
}
