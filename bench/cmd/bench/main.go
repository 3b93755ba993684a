// Command bench is `make bench`: it builds aacmcp and the peers, seeds the data, runs
// every measurement of issue 7 side by side (A and B interleaved, medians of at least
// five rounds) and writes bench/REPORT.md.
//
//	go run ./bench/cmd/bench [-out bench/REPORT.md] [-rounds 5] [-only throughput,scale,...]
//
// The TypeScript peer's packages must be installed first (npm ci --prefix
// bench/tspeer); make bench does it.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aacworkflow/aacmcp/bench/report"
	"github.com/aacworkflow/aacmcp/test/emulator"
)

type options struct {
	out         string
	rounds      int
	requests    int
	concurrency int
	only        []string
	keep        bool
	profile     bool
	auditN      int
}

// bench is the state of one run.
type bench struct {
	opt  options
	root string // repository root
	work string // scratch folder: binaries, data, logs
	log  *slog.Logger
	bins binaries
	rep  report.Report
}

type binaries struct {
	aacmcp, bare, bareWrite, rie string
	mcpLambda, bareLambda        string // host arch, for the emulator
	sdkLambda                    string // bare plus the SDK clients (the floor), host arch
	mcpLambdaArm, bareLambdaArm  string // arm64, for the size goal
}

var sections = []string{"throughput", "scale", "handler", "coldstart", "writes", "roundtrips", "audit", "soak"}

func main() {
	var o options
	var only string
	flag.StringVar(&o.out, "out", "bench/REPORT.md", "report path (relative to the repository root)")
	flag.IntVar(&o.rounds, "rounds", 5, "interleaved rounds per measurement (medians of these)")
	flag.IntVar(&o.requests, "requests", 3000, "requests per throughput run")
	flag.IntVar(&o.concurrency, "concurrency", 32, "concurrent connections of the throughput runs")
	flag.StringVar(&only, "only", "", "comma-separated subset of "+strings.Join(sections, ","))
	flag.BoolVar(&o.keep, "keep", false, "keep the scratch folder (binaries, data, logs)")
	flag.BoolVar(&o.profile, "profile", true, "take a CPU profile of aacmcp serve under the get_issue load")
	flag.IntVar(&o.auditN, "audit-records", 1_000_000, "audit records for the query measurement")
	flag.Parse()
	if only != "" {
		o.only = strings.Split(only, ",")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if err := run(ctx, o, log); err != nil {
		log.Error("bench failed", "err", err)
		os.Exit(1)
	}
}

func (b *bench) enabled(s string) bool { return len(b.opt.only) == 0 || slices.Contains(b.opt.only, s) }

func run(ctx context.Context, o options, log *slog.Logger) error {
	start := time.Now()
	root, err := emulator.RepoRoot()
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "aacmcp-bench-")
	if err != nil {
		return err
	}
	b := &bench{opt: o, root: root, work: work, log: log}
	if o.keep {
		log.Info("scratch folder kept", "dir", work)
	} else {
		defer os.RemoveAll(work)
	}
	b.rep = report.Report{
		Date:    start,
		Command: "make bench  (go run ./bench/cmd/bench " + strings.Join(os.Args[1:], " ") + ")",
		Machine: append([]string{"Commit: " + commitOf(root)}, machine()...),
	}
	b.rep.Method = []string{
		"Every goal is a ratio of two figures measured in the same run, A and B interleaved " +
			"(the order rotates each round), and the median of the per-round ratios of " +
			fmt.Sprint(o.rounds) + " rounds. The machine is shared, so absolute figures move between runs; " +
			"the ratios are what the goals judge. The load generator (bench/load, Go) runs on the same " +
			"cores as the servers, over loopback keep-alive connections, with a fixed request count; " +
			"every response is checked (HTTP 200, no isError) and a bad one stops the run.",
	}
	if err := b.build(ctx); err != nil {
		return err
	}
	steps := []struct {
		name string
		fn   func(context.Context) error
	}{
		{"throughput", b.throughput},
		{"scale", b.scale},
		{"handler", b.handler},
		{"coldstart", b.coldStart},
		{"writes", b.writes},
		{"roundtrips", b.roundTrips},
		{"audit", b.auditQueries},
		{"soak", b.soak},
	}
	for _, s := range steps {
		if !b.enabled(s.name) {
			continue
		}
		t0 := time.Now()
		log.Info("measuring", "section", s.name)
		if err := s.fn(ctx); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		log.Info("measured", "section", s.name, "took", time.Since(t0).Round(time.Second))
	}
	b.rep.Machine = append(b.rep.Machine, "Load average at the end (1, 5, 15 min): "+report.LoadAverage())
	b.rep.Duration = time.Since(start)
	out := o.out
	if !filepath.IsAbs(out) {
		out = filepath.Join(root, out)
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if err := b.rep.Write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	log.Info("report written", "path", out, "took", time.Since(start).Round(time.Second))
	return nil
}

// build compiles every binary the run needs, in parallel.
func (b *bench) build(ctx context.Context) error {
	bin := func(n string) string { return filepath.Join(b.work, "bin", n) }
	b.bins = binaries{
		aacmcp: bin("aacmcp"), bare: bin("bare"), bareWrite: bin("barewrite"), rie: bin("aws-lambda-rie"),
		mcpLambda: bin("mcp/bootstrap"), bareLambda: bin("bare-lambda/bootstrap"), sdkLambda: bin("sdk-lambda/bootstrap"),
		mcpLambdaArm: bin("arm64/mcp/bootstrap"), bareLambdaArm: bin("arm64/bare-lambda/bootstrap"),
	}
	lambdaFlags := []string{"-tags", "lambda.norpc", "-trimpath", "-ldflags", "-s -w"}
	host := []string{"GOOS=linux", "CGO_ENABLED=0"}
	arm := []string{"GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0"}
	type job struct {
		out, pkg string
		env      []string
		flags    []string
	}
	jobs := []job{
		{b.bins.aacmcp, "./cmd/aacmcp", nil, nil},
		{b.bins.bare, "./bench/cmd/bare", nil, nil},
		{b.bins.bareWrite, "./bench/cmd/barewrite", nil, nil},
	}
	if b.enabled("coldstart") {
		jobs = append(jobs,
			job{b.bins.rie, "github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie", nil, nil},
			job{b.bins.mcpLambda, "./functions/mcp", host, lambdaFlags},
			job{b.bins.bareLambda, "./bench/cmd/barelambda", host, lambdaFlags},
			job{b.bins.sdkLambda, "./bench/cmd/barelambdasdk", host, lambdaFlags},
			job{b.bins.mcpLambdaArm, "./functions/mcp", arm, lambdaFlags},
			job{b.bins.bareLambdaArm, "./bench/cmd/barelambda", arm, lambdaFlags},
		)
	}
	b.log.Info("building", "binaries", len(jobs))
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(2, runtime.NumCPU()))
	for i, j := range jobs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[i] = goBuild(b.root, j.out, j.pkg, j.env, j.flags...)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return ctx.Err()
}

// machine describes where the run happened.
func machine() []string {
	cpu := "unknown"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		first, _, _ := strings.Cut(string(b), "\n")
		mem = strings.Join(strings.Fields(first)[1:], " ")
	}
	kernel, _ := exec.Command("uname", "-srm").Output()
	node, _ := exec.Command("node", "--version").Output()
	return []string{
		fmt.Sprintf("CPU: %s, %d logical cores (GOMAXPROCS %d)", cpu, runtime.NumCPU(), runtime.GOMAXPROCS(0)),
		"Memory: " + mem,
		"OS: " + strings.TrimSpace(string(kernel)),
		"Go: " + runtime.Version() + ", Node.js: " + strings.TrimSpace(string(node)),
		"Load average at the start (1, 5, 15 min): " + report.LoadAverage(),
	}
}
