// Package usagereplay rebuilds, on start, the usage increments that a server killed
// with kill -9 had accepted but not yet committed. The SQLite store commits usage
// in the background (shared/store/sqlite, usage.go); the audit log is the journal
// that makes this safe: every counted call's audit record is written before the call
// is answered, and its event id is the increment's event id, which the store
// remembers for a day so that a replayed increment already counted is dropped.
package usagereplay

import (
	"context"
	"fmt"
	"time"

	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/audit/file"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// Store is what the replay needs of the usage store.
type Store interface {
	// UsageReplayFrom is the durable watermark: records before it are counted.
	UsageReplayFrom(ctx context.Context) (time.Time, error)
	// RecoverUsage counts the increments whose events were not counted yet and
	// returns how many it counted.
	RecoverUsage(ctx context.Context, incs []store.UsageIncrement) (int, error)
	// ArmUsageReplay makes the watermark cover the records written from now on (a
	// clean stop may have sealed it at the last run's clock).
	ArmUsageReplay(ctx context.Context) error
}

// Stats describes one replay.
type Stats struct {
	From      time.Time // the watermark
	Records   int       // audit records at or after From
	Counted   int       // of those, records of calls that count usage
	Recovered int       // increments that were missing and are now counted
	Damaged   int       // lines that are not records (a torn last line), skipped
}

// Replay counts again every audit record under dataDir from the store's watermark
// on that a call counted usage for, and commits those whose event id the store has
// not counted. Running it twice changes nothing the second time.
//
// known reports whether a tool name is in the catalog. A record counts usage when
// it names a workspace and a known tool: exactly the calls guard.finish counts (a
// principal, whose workspace the record names, and a known tool), including calls
// the MCP transport refused as malformed after authentication
// (guard.RecordRejected). A record cut short by the crash is skipped; so is its
// call's increment, if it was still queued.
func Replay(ctx context.Context, dataDir string, st Store, known func(tool string) bool) (Stats, error) {
	from, err := st.UsageReplayFrom(ctx)
	if err != nil {
		return Stats{}, fmt.Errorf("usage replay: %w", err)
	}
	s := Stats{From: from}
	var incs []store.UsageIncrement
	err = file.ScanFrom(dataDir, from, func(e file.Entry) error {
		if e.Err != nil {
			s.Damaged++
			return nil
		}
		r := e.Record
		ts, err := audit.ParseTime(r.Timestamp)
		if err != nil {
			s.Damaged++ // no writer produces one; not a reason to refuse to start
			return nil
		}
		if ts.Before(from) {
			return nil
		}
		s.Records++
		if r.EventID == "" || r.WorkspaceID == "" || !known(r.Tool) {
			return nil
		}
		s.Counted++
		incs = append(incs, store.UsageIncrement{
			WorkspaceID: r.WorkspaceID,
			Date:        ts.UTC().Format(time.DateOnly),
			Tool:        r.Tool,
			Outcome:     r.Outcome,
			EventID:     r.EventID,
		})
		return ctx.Err()
	})
	if err != nil {
		return s, fmt.Errorf("usage replay: %w", err)
	}
	s.Recovered, err = st.RecoverUsage(ctx, incs)
	if err != nil {
		return s, fmt.Errorf("usage replay: %w", err)
	}
	if err := st.ArmUsageReplay(ctx); err != nil {
		return s, fmt.Errorf("usage replay: %w", err)
	}
	return s, nil
}
