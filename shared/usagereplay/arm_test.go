package usagereplay_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/store/sqlite"
	"github.com/aacworkflow/aacmcp/shared/usagereplay"
)

// A clean stop sealed the watermark at T0; the clock was set back an hour while the
// server was down. After Replay, the watermark must cover the new run's records.
func TestReplayArmsAfterSeal(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	now := t0
	clk := func() time.Time { return now }
	db := filepath.Join(dir, "aacmcp.db")
	s, err := sqlite.Open(ctx, db, sqlite.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SealUsage(ctx); err != nil {
		t.Fatal(err)
	}
	s.Close()
	now = t0.Add(-time.Hour)
	s2, err := sqlite.Open(ctx, db, sqlite.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if _, err := usagereplay.Replay(ctx, dir, s2, func(string) bool { return true }); err != nil {
		t.Fatal(err)
	}
	from, err := s2.UsageReplayFrom(ctx)
	if err != nil || from.After(now) {
		t.Fatalf("watermark after Replay = %v, %v; records of this run (from %v) would not be replayed", from, err, now)
	}
}
