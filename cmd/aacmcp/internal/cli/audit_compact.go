package cli

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/aacworkflow/aacmcp/shared/audit/file"
)

// compactMinAge keeps compaction away from the hour that is still being written and
// from records a slow writer is about to append to the previous hour's file.
const compactMinAge = 5 * time.Minute

func newAuditCompactCmd(g *globals) *cobra.Command {
	var (
		minAge time.Duration
		asJSON bool
	)
	c := &cobra.Command{
		Use:   "compact [--min-age 5m]",
		Short: "Compact closed audit hours from JSON lines into Parquet",
		Long: `Rewrite every closed hour of the audit log (an hour that ended at least --min-age
ago) from JSON lines into one Parquet file per hour, the format the production bucket
holds. The Parquet file is written aside and renamed into place before the JSON files it
replaces are removed, so a crash at any step loses and doubles nothing; queries read both
formats. Files still open by a running server are left alone. aacmcp serve does this in
the background (--compact-every).`,
		Args: wrapArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			if minAge < 0 {
				return usagef("--min-age must not be negative")
			}
			st, err := file.Compact(g.dataDir, g.env.now().Add(-minAge))
			if err != nil {
				return err
			}
			w := c.OutOrStdout()
			if asJSON {
				return writeJSON(w, map[string]int{
					"partitions": st.Partitions, "files": st.Files, "records": st.Records, "skipped": st.Skipped,
				})
			}
			t := newTable(w, "HOURS", "JSON FILES", "RECORDS", "SKIPPED")
			t.row(fmt.Sprint(st.Partitions), fmt.Sprint(st.Files), fmt.Sprint(st.Records), fmt.Sprint(st.Skipped))
			return t.flush()
		},
	}
	c.Flags().DurationVar(&minAge, "min-age", compactMinAge, "compact only hours that ended at least this long ago")
	c.Flags().BoolVar(&asJSON, "json", false, "print the counts as JSON")
	return c
}

// startCompactor compacts closed hours every interval until ctx ends; the returned
// function stops it and waits for a compaction in progress to finish.
func startCompactor(ctx context.Context, dataDir string, every time.Duration, now func() time.Time, log *slog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			st, err := file.Compact(dataDir, now().Add(-compactMinAge))
			if err != nil {
				log.Error("audit compaction failed", "err", err)
				continue
			}
			if st.Files > 0 {
				log.Info("audit hours compacted into Parquet", "hours", st.Partitions, "files", st.Files, "records", st.Records)
			}
		}
	})
	return func() { cancel(); wg.Wait() }
}
