// Command compare sets this checkout's bench figures beside an earlier commit's, to
// show what a change cost or saved (make bench-compare BASE=<commit>). Two figures of
// different commits cannot be put into one bench run (each serve reads its own data
// folder layout), so it alternates whole runs: BASE, HEAD, BASE, HEAD..., each
// `go run ./bench/cmd/bench -only throughput,writes` in a git worktree of its commit.
// Every run's figures are already ratios over the bare peers, measured interleaved in
// that run, and the report lists any change to the peers between the two commits (a
// changed peer changes the denominator), so the machine's minute-to-minute speed
// cancels out of each; the table gives
// each figure's median over the runs of each commit and HEAD's median over BASE's.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/aacworkflow/aacmcp/bench/report"
)

// figures are what a run's report gives, in the order of the table.
var figures = []struct {
	name string
	re   *regexp.Regexp
}{
	{"get_issue throughput vs bare", regexp.MustCompile(`get_issue aacmcp/bare ([0-9.]+)x`)},
	{"list_issues throughput vs bare", regexp.MustCompile(`list_issues aacmcp/bare ([0-9.]+)x`)},
	{"create_issue throughput vs bare", regexp.MustCompile(`create_issue throughput ([0-9.]+)x`)},
	{"update_issue throughput vs bare", regexp.MustCompile(`update_issue throughput ([0-9.]+)x`)},
	{"comment_issue throughput vs bare", regexp.MustCompile(`comment_issue throughput ([0-9.]+)x`)},
}

// peers are the bench's reference servers and load generator: a change to them
// between the two commits changes what the ratios are over, so the report lists it.
var peers = []string{"bench/bare", "bench/barewrite", "bench/cmd/bare", "bench/cmd/barewrite", "bench/tspeer/server.mjs", "bench/load"}

func main() {
	base := flag.String("base", "", "the commit to compare with (required)")
	runs := flag.Int("runs", 3, "runs of each commit, alternating")
	out := flag.String("out", "bench/COMPARE.md", "report path, relative to the repository root")
	slack := flag.Float64("slack", 0.05, "a HEAD median more than this fraction below BASE's is reported as a slowdown")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(context.Background(), log, *base, *runs, *out, *slack); err != nil {
		log.Error("compare failed", "err", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, log *slog.Logger, base string, runs int, out string, slack float64) error {
	if base == "" || runs < 1 {
		return errors.New("usage: compare -base <commit> [-runs 3] [-out bench/COMPARE.md]")
	}
	root, err := git(ctx, ".", "rev-parse", "--show-toplevel")
	if err != nil {
		return err
	}
	head, err := git(ctx, root, "rev-parse", "--short=7", "HEAD")
	if err != nil {
		return err
	}
	if base, err = git(ctx, root, "rev-parse", "--short=7", base+"^{commit}"); err != nil {
		return err
	}
	peerDiff, err := git(ctx, root, append([]string{"diff", "--stat", base, "HEAD", "--"}, peers...)...)
	if err != nil {
		return err
	}
	if st, _ := git(ctx, root, "status", "--porcelain", "--untracked-files=no"); st != "" {
		return fmt.Errorf("the working tree has uncommitted changes; commit them so that HEAD is the code measured:\n%s", st)
	}
	work, err := os.MkdirTemp("", "aacmcp-compare-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	commits := []string{base, head}
	for _, c := range commits {
		dir := filepath.Join(work, c)
		if _, err := git(ctx, root, "worktree", "add", "--detach", dir, c); err != nil {
			return err
		}
		defer func() { _, _ = git(context.Background(), root, "worktree", "remove", "--force", dir) }()
		// The TypeScript peer's packages, installed by make bench from the same lockfile.
		if err := os.Symlink(filepath.Join(root, "bench", "tspeer", "node_modules"), filepath.Join(dir, "bench", "tspeer", "node_modules")); err != nil {
			return err
		}
	}
	start := time.Now()
	loadStart := report.LoadAverage()
	got := map[string][][]float64{} // commit -> figure -> per-run values
	for i := range runs {
		for _, c := range commits {
			report := filepath.Join(work, fmt.Sprintf("%s-%d.md", c, i))
			log.Info("bench run", "commit", c, "run", i+1, "of", runs)
			cmd := exec.CommandContext(ctx, "go", "run", "./bench/cmd/bench", "-only", "throughput,writes", "-profile=false", "-out", report)
			cmd.Dir = filepath.Join(work, c)
			if b, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("bench on %s: %w\n%s", c, err, b)
			}
			text, err := os.ReadFile(report)
			if err != nil {
				return err
			}
			if got[c] == nil {
				got[c] = make([][]float64, len(figures))
			}
			for j, f := range figures {
				m := f.re.FindSubmatch(text)
				if m == nil {
					return fmt.Errorf("%s's report has no %q", c, f.name)
				}
				v, _ := strconv.ParseFloat(string(m[1]), 64)
				got[c][j] = append(got[c][j], v)
			}
		}
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# aacmcp bench comparison\n\nGenerated by `make bench-compare BASE=%s` (bench/cmd/compare); do not edit by hand.\n\n", base)
	fmt.Fprintf(&b, "- Date: %s\n- BASE: %s, HEAD: %s\n- Runs: %d of each, alternating, each `bench -only throughput,writes` (bench/README.md, sections 1 and 7)\n", start.UTC().Format(time.RFC3339), base, head, runs)
	fmt.Fprintf(&b, "- Wall time: %s\n- Load average at the start and the end (1, 5, 15 min): %s; %s\n\n", time.Since(start).Round(time.Second), loadStart, report.LoadAverage())
	b.WriteString("Each figure is that run's median of its per-round ratios over the bare peer, " +
		"measured interleaved with it in the same run; the table gives each run's figure, the median per commit, " +
		fmt.Sprintf("and HEAD's median over BASE's. A HEAD median more than %.0f%% below BASE's is a slowdown.\n\n", slack*100))
	if peerDiff == "" {
		b.WriteString("The peers and the load generator are the same in both commits.\n\n")
	} else {
		fmt.Fprintf(&b, "The peers or the load generator changed between the commits (read the diff before trusting a ratio):\n\n```\n%s\n```\n\n", peerDiff)
	}
	b.WriteString("| figure | BASE runs | HEAD runs | BASE median | HEAD median | HEAD / BASE | verdict |\n|---|---|---|---|---|---|---|\n")
	var slower []string
	for j, f := range figures {
		bm, hm := report.Median(got[base][j]), report.Median(got[head][j])
		verdict := "no slowdown"
		if hm < bm*(1-slack) {
			verdict = "slowdown"
			slower = append(slower, f.name)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %.2fx | %.2fx | %.2f | %s |\n", f.name, list(got[base][j]), list(got[head][j]), bm, hm, hm/bm, verdict)
	}
	if len(slower) == 0 {
		fmt.Fprintf(&b, "\nNo figure of HEAD is more than %.0f%% below BASE's.\n", slack*100)
	} else {
		fmt.Fprintf(&b, "\nMore than %.0f%% below BASE: %s.\n", slack*100, strings.Join(slower, ", "))
	}
	if err := os.WriteFile(filepath.Join(root, out), b.Bytes(), 0o644); err != nil {
		return err
	}
	log.Info("comparison written", "path", out, "slower", len(slower))
	return nil
}

func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimRight(string(b), " \n"), nil // a diff --stat's lines start with a space
}

func list(v []float64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprintf("%.2f", x)
	}
	return strings.Join(s, " ")
}
