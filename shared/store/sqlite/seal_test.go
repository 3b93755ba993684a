package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/store"
)

// TestSealAndArmUsage: a clean stop commits the queue and seals the watermark at its
// now, so the next start replays nothing of that run; once that start's replay is
// done, the watermark is lowered to cover the new run whatever the clock did.
func TestSealAndArmUsage(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		restart time.Duration // clock at the next start, from the seal
		want    time.Duration // watermark after ArmUsageReplay, from the seal
	}{
		{"restart within the slack", time.Minute, time.Minute - usageReplaySlack},
		{"restart much later", time.Hour, 0},
		{"clock stepped back", -time.Hour, -time.Hour - usageReplaySlack},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			clk := &fakeClock{t: t0}
			path := filepath.Join(t.TempDir(), "aacmcp.db")
			s := openAt(t, path, WithClock(clk.now))
			if err := s.UpdateUsage(ctx, store.UsageIncrement{WorkspaceID: "ws", Date: "2026-03-01", Tool: "get_issue",
				Outcome: "success", EventID: "e1"}); err != nil {
				t.Fatal(err)
			}
			if err := s.SealUsage(ctx); err != nil {
				t.Fatal(err)
			}
			if n := s.queuedUsage(); n != 0 {
				t.Fatalf("%d increments still queued after the seal", n)
			}
			if from, err := s.UsageReplayFrom(ctx); err != nil || !from.Equal(t0) {
				t.Fatalf("watermark after the seal = %v, %v; want %v", from, err, t0)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}

			clk.add(tc.restart)
			s2 := openAt(t, path, WithClock(clk.now))
			rows, err := s2.ListUsage(ctx, "ws", "2026-03-01", "2026-03-01")
			if err != nil || len(rows) != 1 || rows[0].Calls != 1 {
				t.Fatalf("usage after the sealed stop = %+v, %v; want one call", rows, err)
			}
			if from, _ := s2.UsageReplayFrom(ctx); !from.Equal(t0) {
				t.Fatalf("watermark at the next start = %v, want the seal's %v (nothing to replay)", from, t0)
			}
			if err := s2.ArmUsageReplay(ctx); err != nil {
				t.Fatal(err)
			}
			if from, _ := s2.UsageReplayFrom(ctx); !from.Equal(t0.Add(tc.want)) {
				t.Errorf("watermark after ArmUsageReplay = %v, want %v", from, t0.Add(tc.want))
			}
		})
	}
}
