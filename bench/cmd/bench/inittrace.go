package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// initTrace is one run of a binary's package initializers, as GODEBUG=inittrace=1
// prints them: the clock time of each package's init, in run order.
type initTrace struct {
	total float64 // ms, the sum of every package's clock
	pkgs  []pkgInit
}

type pkgInit struct {
	pkg string
	ms  float64
}

// inittraceLine is the runtime's format: "init <pkg> @<t> ms, <clock> ms clock, ...".
var inittraceLine = regexp.MustCompile(`^init (\S+) @[0-9.]+ ms, ([0-9.]+) ms clock`)

// parseInitTrace reads GODEBUG=inittrace=1 output; other lines are ignored.
func parseInitTrace(out []byte) initTrace {
	var t initTrace
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		m := inittraceLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		ms, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			continue
		}
		t.pkgs = append(t.pkgs, pkgInit{m[1], ms})
		t.total += ms
	}
	return t
}

// runInitTrace starts bin with GODEBUG=inittrace=1 and no Lambda runtime: the
// package initializers run before main, which then fails for want of the runtime
// API; only the trace is wanted.
func runInitTrace(ctx context.Context, bin string, env []string) (initTrace, error) {
	cmd := exec.CommandContext(ctx, bin)
	cmd.Env = append(slices.Clone(env), "GODEBUG=inittrace=1")
	out, _ := cmd.CombinedOutput() // main's own failure is expected
	t := parseInitTrace(out)
	if len(t.pkgs) == 0 {
		return t, fmt.Errorf("%s printed no init trace:\n%s", bin, out)
	}
	return t, nil
}

// initTable runs each binary runs times, interleaved, and describes the median run
// of each (by total): its total and its slowest package initializers.
func initTable(ctx context.Context, bins [][2]string, env []string, runs, top int) (string, error) {
	traces := map[string][]initTrace{}
	for i := range runs {
		for _, b := range rotate(bins, i) {
			t, err := runInitTrace(ctx, b[1], env)
			if err != nil {
				return "", err
			}
			traces[b[0]] = append(traces[b[0]], t)
		}
	}
	var sb strings.Builder
	sb.WriteString("| binary | package init, total (median run) | slowest package initializers in that run |\n|---|---|---|\n")
	for _, b := range bins {
		ts := traces[b[0]]
		slices.SortFunc(ts, func(x, y initTrace) int { return cmpFloat(x.total, y.total) })
		med := ts[len(ts)/2]
		pk := slices.Clone(med.pkgs)
		slices.SortStableFunc(pk, func(x, y pkgInit) int { return cmpFloat(y.ms, x.ms) })
		var parts []string
		for _, p := range pk[:min(top, len(pk))] {
			parts = append(parts, fmt.Sprintf("`%s` %.2f ms", p.pkg, p.ms))
		}
		fmt.Fprintf(&sb, "| %s | %.2f ms | %s |\n", b[0], med.total, strings.Join(parts, ", "))
	}
	return sb.String(), nil
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
