package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/aacworkflow/aacmcp/bench/report"
	"github.com/aacworkflow/aacmcp/test/load/server"
)

// Issue 17's tail goals, which are absolute: make soak's load on this machine.
const (
	soakClients       = 200
	soakCalls         = 20000
	soakMinThroughput = 4208 // calls/s: the soak's throughput when the goals were set
	soakMaxP95        = 60.0 // ms
	soakMaxP99        = 200.0
)

// soak runs make soak's load test (test/load TestLoadConsistency: a built aacmcp
// serve, every consistency check) once and reports its figures.
func (b *bench) soak(ctx context.Context) error {
	out := filepath.Join(b.work, "soak.json")
	cmd := exec.CommandContext(ctx, "go", "test", "-count=1", "-timeout", "20m", "-run", "^TestLoadConsistency$", "./test/load",
		"-args", "-clients", fmt.Sprint(soakClients), "-calls", fmt.Sprint(soakCalls), "-summary", out)
	cmd.Dir = b.root
	cmd.Env = os.Environ()
	if log, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("the soak's load test failed: %w\n%s", err, log)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		return err
	}
	var s server.Summary
	if err := json.Unmarshal(raw, &s); err != nil {
		return fmt.Errorf("%s: %w", out, err)
	}
	const why = "see section 8 and docs/security.md: the server and the load generator share the 2 cores; " +
		"each write transaction of a call is one more wait for the CPU"
	b.addGoal("8. soak throughput (make soak's load, absolute)", fmt.Sprintf(">= %d calls/s", soakMinThroughput),
		fmt.Sprintf("%.0f calls/s", s.CallsPerSec), s.CallsPerSec >= soakMinThroughput, why)
	b.addGoal("8. soak p95 (absolute)", fmt.Sprintf("<= %.0f ms", soakMaxP95), fmt.Sprintf("%.1f ms", s.P95), s.P95 <= soakMaxP95,
		littleNote(s, soakMaxP95, s.P95)+"; "+why)
	b.addGoal("8. soak p99 (absolute)", fmt.Sprintf("<= %.0f ms", soakMaxP99), fmt.Sprintf("%.1f ms", s.P99), s.P99 <= soakMaxP99, why)

	sec := report.Section{
		Title: fmt.Sprintf("8. The soak's load: %d clients, %d mixed calls", s.Clients, s.Calls),
		Text: []string{
			"One run of `make soak`'s load test (test/load `TestLoadConsistency`): a built `aacmcp serve` on its own " +
				"data folder, three workspaces, tokens of every role, all eleven tools over both transports, two thirds " +
				"of the calls writes and a share that must be refused, each of the clients calling again as soon as it " +
				"is answered; the run counts only if every consistency check passes (one audit record per call, " +
				"comment counts, no lost update, usage equal to the audit records). Unlike the ratios above, issue 17 " +
				"states these goals as absolute figures on this machine, so they move with its load: " +
				"docs/security.md gives several runs.",
			fmt.Sprintf("%.0f calls/s over %.1f s; latency mean %.1f ms, p50 %.1f ms, p95 %.1f ms, p99 %.1f ms, max %.1f ms; "+
				"%.0f%% of the slowest 1%% were writes.", s.CallsPerSec, s.Seconds, s.Mean, s.P50, s.P95, s.P99, s.Max, 100*s.SlowestWrites),
			fmt.Sprintf("The clients are a closed loop, so the mean latency is bounded by Little's law: %d clients at %.0f calls/s "+
				"are answered in at most %.1f ms on average (measured: %.1f ms). A quantile can only be cut below that "+
				"by raising the throughput or by narrowing the spread around the mean: %s.",
				s.Clients, s.CallsPerSec, float64(s.Clients)/s.CallsPerSec*1000, s.Mean, littleNote(s, soakMaxP95, s.P95)),
		},
		Table: report.Table{Header: []string{"tool", "calls", "p50", "p95", "p99"}},
	}
	for _, t := range s.Tools {
		sec.Table.Rows = append(sec.Table.Rows, []string{t.Tool, fmt.Sprint(t.Calls),
			fmt.Sprintf("%.1f ms", t.P50), fmt.Sprintf("%.1f ms", t.P95), fmt.Sprintf("%.1f ms", t.P99)})
	}
	b.rep.Sections = append(b.rep.Sections, sec)
	return nil
}

// littleNote says how far a latency quantile q is from its goal in terms of the
// mean: the spread q/mean that the goal would need at this run's mean, against
// the measured one.
func littleNote(s server.Summary, goal, q float64) string {
	if s.Mean <= 0 {
		return "mean latency not reported"
	}
	return fmt.Sprintf("%.0f ms needs the quantile within %.2fx of the %.1f ms mean; it was %.2fx", goal, goal/s.Mean, s.Mean, q/s.Mean)
}
