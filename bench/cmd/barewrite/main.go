// Command barewrite serves the bench's bare mcp-go write peer (package barewrite)
// on loopback, over a SQLite file it seeds from the bench's peer data file.
//
//	barewrite -issues issues.json -db writes.db -user u_bench [-addr 127.0.0.1:0]
//
// The listening address is printed on stdout as "listening http://ADDR" once the
// server accepts connections.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"

	"github.com/aacworkflow/aacmcp/bench/bare"
	"github.com/aacworkflow/aacmcp/bench/barewrite"
	"github.com/aacworkflow/aacmcp/bench/peerfile"
	"github.com/aacworkflow/aacmcp/shared/store"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	file := flag.String("issues", "", "peer data file: workspace and issues")
	db := flag.String("db", "", "SQLite file to create and write")
	user := flag.String("user", "", "the user the writes are made as")
	flag.Parse()
	if err := run(*addr, *file, *db, *user); err != nil {
		slog.Error("barewrite peer failed", "err", err)
		os.Exit(1)
	}
}

func run(addr, file, db, user string) error {
	data, err := peerfile.Read(file)
	if err != nil {
		return err
	}
	if len(data.Issues) == 0 {
		return errors.New("no issues to seed")
	}
	prefix, _, ok := store.ParseIssueKey(data.Issues[0].Key)
	if !ok {
		return fmt.Errorf("issue key %q", data.Issues[0].Key)
	}
	s, err := barewrite.Open(context.Background(), db, data.Workspace, prefix, user, data.Issues)
	if err != nil {
		return err
	}
	defer s.Close()
	return bare.Serve(addr, s.Handler())
}
