package main

import (
	"context"
	"fmt"

	"github.com/aacworkflow/aacmcp/bench/load"
	"github.com/aacworkflow/aacmcp/bench/report"
)

// scale measures get_issue and list_issues latency on three servers whose measured
// workspace holds 1k, 10k and 100k issues (each beside 10 other workspaces of the
// same size), one caller at a time, interleaved.
func (b *bench) scale(ctx context.Context) error {
	sizes := []int{1_000, 10_000, 100_000}
	type srv struct {
		size int
		p    peer
		wls  []workload
	}
	var srvs []srv
	for _, n := range sizes {
		ds, err := b.dataset(ctx, n)
		if err != nil {
			return err
		}
		pr, p, err := b.startAacmcp(ctx, ds, fmt.Sprintf("aacmcp-%d", n))
		if err != nil {
			return err
		}
		defer pr.stop()
		srvs = append(srvs, srv{n, p, workloads(ds)})
	}
	const requests = 400
	client := load.NewClient(1)
	for _, s := range srvs {
		for _, w := range s.wls {
			if _, err := load.Run(ctx, client, b.target(s.p, w), 100, 1); err != nil {
				return fmt.Errorf("warm-up %d %s: %w", s.size, w.tool, err)
			}
		}
	}
	type key struct {
		size int
		tool string
	}
	p50 := map[key][]float64{}
	p99 := map[key][]float64{}
	ratio := map[string][]float64{}
	for r := range b.opt.rounds {
		round := map[key]float64{}
		for _, s := range rotate(srvs, r) {
			for _, w := range s.wls {
				lr, err := load.Run(ctx, client, b.target(s.p, w), requests, 1)
				if err != nil {
					return fmt.Errorf("%d %s: %w", s.size, w.tool, err)
				}
				k := key{s.size, w.tool}
				p50[k] = append(p50[k], float64(lr.Percentile(0.5)))
				p99[k] = append(p99[k], float64(lr.Percentile(0.99)))
				round[k] = float64(lr.Percentile(0.5))
			}
		}
		for _, t := range []string{"get_issue", "list_issues"} {
			ratio[t] = append(ratio[t], round[key{100_000, t}]/round[key{1_000, t}])
		}
	}
	sec := reportSection("2. Scale: 1k, 10k and 100k issues per workspace",
		fmt.Sprintf("Three `aacmcp serve` processes, each on a data folder whose measured workspace holds N issues "+
			"beside 10 other workspaces of N issues (11N in the database). One caller, %d calls per run, "+
			"%d interleaved rounds; median of the per-run p50 and p99.", requests, b.opt.rounds),
		[]string{"tool", "issues", "p50", "p99"})
	for _, t := range []string{"get_issue", "list_issues"} {
		for _, n := range sizes {
			k := key{n, t}
			sec.Table.Rows = append(sec.Table.Rows, []string{t, fmt.Sprint(n), dur(report.Median(p50[k])), dur(report.Median(p99[k]))})
		}
		r := report.Median(ratio[t])
		b.addGoal("2. "+t+" p50 at 100k vs 1k", "<= 1.5x", fmt.Sprintf("%.2fx", r), r <= 1.5, "")
	}
	b.rep.Sections = append(b.rep.Sections, sec)
	return nil
}
