package cli

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/aacworkflow/aacmcp/shared/store/dynamo"
)

func newInitCmd(g *globals) *cobra.Command {
	var b backendFlags
	c := &cobra.Command{
		Use:   "init [--backend dynamodb --table T --tokens-table T2]",
		Short: "Create the store: the SQLite database, or the two DynamoDB tables",
		Long: `Create the store the other commands use.

With the default backend it creates the data folder and the SQLite database
(<data>/aacmcp.db) with its current schema; serve does the same on start.

With --backend dynamodb it creates the main table (with its GSI) and the tokens table
exactly as the CDK stack declares them (shared/store/dynamo/tablespec.go), waits until both are ACTIVE and
turns on TTL. Tables that exist with the same layout are kept, so init can run twice.
Local emulators without UpdateTimeToLive (dynalite) get a one-line warning; against AWS
a TTL failure is an error.`,
		Example: `  aacmcp init
  aacmcp init --backend dynamodb --table aacmcp-main --tokens-table aacmcp-tokens --endpoint-url http://127.0.0.1:8000`,
		Args: wrapArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			if err := b.validate(); err != nil {
				return err
			}
			if b.kind == backendSQLite {
				_, done, err := b.open(c.Context(), c, g)
				if err != nil {
					return err
				}
				done()
				fmt.Fprintf(c.OutOrStdout(), "initialised %s\n", dbFile(g.dataDir))
				return nil
			}
			if b.table == b.tokensTable {
				return usagef("--table and --tokens-table must differ")
			}
			client, err := b.dynamoClient(c.Context())
			if err != nil {
				return err
			}
			err = withSpinner(c.ErrOrStderr(), "creating DynamoDB tables", func() error {
				return dynamo.CreateTables(c.Context(), client, b.table, b.tokensTable)
			})
			var warn *dynamo.TTLWarning
			if errors.As(err, &warn) {
				fmt.Fprintln(c.ErrOrStderr(), warn.Error())
				err = nil
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(c.OutOrStdout(), "tables %s and %s are ready\n", b.table, b.tokensTable)
			return nil
		},
	}
	addBackendFlags(c, g, &b)
	return c
}

// withSpinner runs fn, showing a spinner on w while it runs if w is a terminal (a
// spinner in a log file or a pipe is only noise).
func withSpinner(w io.Writer, desc string, fn func() error) error {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return fn()
	}
	// A bar of unknown length that has started redraws itself (every 100 ms), so
	// nothing here needs to tick it; the blank render starts it.
	bar := progressbar.NewOptions(-1,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionSpinnerType(14),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSetRenderBlankState(true),
	)
	err := fn()
	_ = bar.Finish()
	return err
}
