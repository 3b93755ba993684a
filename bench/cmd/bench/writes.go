package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/aacworkflow/aacmcp/bench/fixture"
	"github.com/aacworkflow/aacmcp/bench/load"
	"github.com/aacworkflow/aacmcp/bench/report"
)

// writeTools are the write section's calls; body builds the i-th call of run n,
// different from every other call of every run, so that no update repeats an
// applied one (aacmcp answers a repeat without writing).
var writeTools = []struct {
	tool string
	body func(ds fixture.Dataset, run string, i int) []byte
}{
	{"create_issue", func(_ fixture.Dataset, run string, i int) []byte {
		return callBody(i+1, "create_issue", map[string]any{"title": fmt.Sprintf("Write bench %s %d", run, i), "labels": []string{"bench"}})
	}},
	{"update_issue", func(ds fixture.Dataset, run string, i int) []byte {
		return callBody(i+1, "update_issue", map[string]any{"issue_id": ds.Keys[(i*7919)%len(ds.Keys)%64], "title": fmt.Sprintf("Updated %s %d", run, i)})
	}},
	{"comment_issue", func(ds fixture.Dataset, run string, i int) []byte {
		return callBody(i+1, "comment_issue", map[string]any{"issue_id": ds.Keys[(i*7919)%len(ds.Keys)%64], "body": fmt.Sprintf("Comment %s %d", run, i)})
	}},
}

// writes measures create_issue, update_issue and comment_issue at 32 connections:
// `aacmcp serve` with its real stack against bench/barewrite, which writes the same
// rows to SQLite with the same durability and nothing else.
func (b *bench) writes(ctx context.Context) error {
	ds, peerFile, err := b.peerDataset(ctx)
	if err != nil {
		return err
	}
	ap, aacmcp, err := b.startAacmcp(ctx, ds, "aacmcp-writes")
	if err != nil {
		return err
	}
	defer ap.stop()
	bp, err := startProc(ctx, "barewrite", filepath.Join(b.work, "barewrite.log"), nil, b.bins.bareWrite,
		"-issues", peerFile, "-db", filepath.Join(b.work, "barewrite.db"), "-user", fixture.User)
	if err != nil {
		return err
	}
	defer bp.stop()
	peers := []peer{aacmcp, {name: "bare", url: bp.url + "/mcp"}}
	client := load.NewClient(b.opt.concurrency)
	run := func(p peer, tool int, label string, n int) (load.Result, error) {
		bodies := make([][]byte, n)
		for i := range bodies {
			bodies[i] = writeTools[tool].body(ds, p.name+"-"+label, i)
		}
		t := load.Target{URL: p.url, Header: p.header(), Bodies: bodies, Check: checkToolResult}
		return load.Run(ctx, client, t, n, b.opt.concurrency)
	}
	var tools []string
	for _, w := range writeTools {
		tools = append(tools, w.tool)
	}
	requests := max(b.opt.requests/3, 500)
	res, err := b.interleave("writes", peers, tools, 200, requests, run)
	if err != nil {
		return err
	}
	sec := report.Section{
		Title: "7. Writes at 32 connections",
		Text: []string{fmt.Sprintf("`tools/call` create_issue, update_issue (a new title each call, on 64 issues) and "+
			"comment_issue (on 64 issues) over loopback, %d requests per run, %d concurrent keep-alive connections, "+
			"%d interleaved rounds (median shown), on the data folder of section 1 (10,000 issues in the workspace, "+
			"10 other workspaces). aacmcp is `aacmcp serve` with its real stack (token, guard, member record, "+
			"SQLite store, audit file sink, usage counter, access log). bare is bench/barewrite: mcp-go, no "+
			"auth, no audit, writing the same rows to SQLite with the same durability (WAL, synchronous=NORMAL, "+
			"one writer connection, each call one transaction): the issue row and its labels; the changed "+
			"columns and version; the comment row and the issue's comment_count.",
			requests, b.opt.concurrency, b.opt.rounds)},
		Table: report.Table{Header: []string{"tool", "peer", "req/s (median)", "p50", "p99", "req/s per round"}},
	}
	var line []string
	for _, w := range writeTools {
		for _, p := range peers {
			shown := p.name
			if shown == aacmcp.name {
				shown = "aacmcp"
			}
			sec.Table.Rows = append(sec.Table.Rows, res.row(w.tool, p.name, shown))
		}
		t, p := res.ratio(w.tool, aacmcp.name, "bare", rps), res.ratio(w.tool, aacmcp.name, "bare", p99)
		b.addGoal("7. "+w.tool+" throughput vs bare", ">= 0.8x", fmt.Sprintf("%.2fx", t), t >= 0.8,
			"see section 7: what aacmcp writes beyond the rows (audit line, usage, member read) and docs/security.md's lock-wait figures")
		b.addGoal("7. "+w.tool+" p99 vs bare", "<= 3x", fmt.Sprintf("%.2fx", p), p <= 3, "see section 7")
		line = append(line, fmt.Sprintf("%s throughput %.2fx, p99 %.2fx", w.tool, t, p))
	}
	sec.After = append(sec.After, "Per-round ratios aacmcp/bare, median: "+strings.Join(line, "; ")+".")
	b.rep.Sections = append(b.rep.Sections, sec)
	return nil
}
