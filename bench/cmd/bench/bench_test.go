package main

import (
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/bench/load"
	"github.com/aacworkflow/aacmcp/bench/report"
)

func TestSequential(t *testing.T) {
	at := func(start, end int) awsCall {
		base := time.Unix(0, 0)
		return awsCall{start: base.Add(time.Duration(start) * time.Millisecond), end: base.Add(time.Duration(end) * time.Millisecond)}
	}
	tests := []struct {
		name  string
		calls []awsCall
		want  int
	}{
		{"none", nil, 0},
		{"one", []awsCall{at(0, 30)}, 1},
		{"two in parallel", []awsCall{at(0, 30), at(1, 32)}, 1},
		{"two in a row", []awsCall{at(0, 30), at(31, 61)}, 2},
		{"parallel pair then a chain of three", []awsCall{at(0, 30), at(2, 33), at(34, 64), at(65, 95), at(96, 126)}, 4},
		{"reads in parallel, audit beside a chain of three", []awsCall{at(0, 30), at(0, 31), at(32, 62), at(32, 63), at(64, 94), at(95, 125)}, 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := sequential(tc.calls); got != tc.want {
				t.Errorf("sequential = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestMedianAndRotate(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := report.Median(tc.in); got != tc.want {
			t.Errorf("report.Median(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
	s := []string{"a", "b", "c"}
	for n, want := range [][]string{{"a", "b", "c"}, {"b", "c", "a"}, {"c", "a", "b"}, {"a", "b", "c"}} {
		if got := rotate(s, n); !slices.Equal(got, want) {
			t.Errorf("rotate(%d) = %v, want %v", n, got, want)
		}
	}
	if !slices.Equal(s, []string{"a", "b", "c"}) {
		t.Error("rotate changed its input")
	}
}

func TestPlainListenLine(t *testing.T) {
	for line, want := range map[string]string{
		"listening http://127.0.0.1:4242":                 "http://127.0.0.1:4242",
		"aacmcp serving http://127.0.0.1:39001/mcp":       "http://127.0.0.1:39001",
		"aacmcp serving http://0.0.0.0:1/mcp":             "",
		"time=... msg=listening url=http://127.0.0.1:5/x": "",
	} {
		got := ""
		if m := listenRE.FindStringSubmatch(line); m != nil {
			got = m[1]
		}
		if got != want {
			t.Errorf("%q: got %q, want %q", line, got, want)
		}
	}
}

func TestParseInitTrace(t *testing.T) {
	out := []byte("init internal/bytealg @0 ms, 0.012 ms clock, 0 bytes, 0 allocs\n" +
		"some log line\n" +
		"init github.com/santhosh-tekuri/jsonschema/v6 @4.3 ms, 5.4 ms clock, 1702736 bytes, 21301 allocs\n" +
		"init net/http @9.8 ms, 0.23 ms clock, 4872 bytes, 50 allocs\n")
	got := parseInitTrace(out)
	want := []pkgInit{{"internal/bytealg", 0.012}, {"github.com/santhosh-tekuri/jsonschema/v6", 5.4}, {"net/http", 0.23}}
	if !slices.Equal(got.pkgs, want) {
		t.Errorf("pkgs = %v, want %v", got.pkgs, want)
	}
	if d := got.total - 5.642; d > 1e-9 || d < -1e-9 {
		t.Errorf("total = %v, want 5.642", got.total)
	}
	if len(parseInitTrace([]byte("no trace here\n")).pkgs) != 0 {
		t.Error("found packages in output without a trace")
	}
}

// TestInterleave: every peer warms up on every tool before the first round, each
// round runs every tool on every peer with the peers rotated, and the rounds' results
// come back by peer and tool, in round order.
func TestInterleave(t *testing.T) {
	b := &bench{opt: options{rounds: 3}, log: slog.New(slog.DiscardHandler)}
	peers := []peer{{name: "a"}, {name: "b"}}
	var calls []string
	res, err := b.interleave("test", peers, []string{"x", "y"}, 7, 100, func(p peer, tool int, label string, n int) (load.Result, error) {
		calls = append(calls, fmt.Sprintf("%s%d:%s:%d", p.name, tool, label, n))
		// a's runs take 1 s per round number plus one, b's twice that.
		r, _ := strconv.Atoi(label)
		el := time.Duration(r+1) * time.Second
		if p.name == "b" {
			el *= 2
		}
		return load.Result{Requests: n, Elapsed: el, Latencies: []time.Duration{el}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a0:warm:7", "a1:warm:7", "b0:warm:7", "b1:warm:7",
		"a0:0:100", "b0:0:100", "a1:0:100", "b1:0:100",
		"b0:1:100", "a0:1:100", "b1:1:100", "a1:1:100",
		"a0:2:100", "b0:2:100", "a1:2:100", "b1:2:100"}
	if !slices.Equal(calls, want) {
		t.Fatalf("calls\n%v\nwant\n%v", calls, want)
	}
	if got := res.median("a", "y", rps); got != 50 {
		t.Errorf("median req/s of a on y = %v, want 50 (100 requests in 2 s)", got)
	}
	if got := res.ratio("x", "a", "b", rps); got != 2 {
		t.Errorf("a/b req/s = %v, want 2", got)
	}
	if got, want := res.row("x", "b", "B"), []string{"x", "B", "25", "4.00 s", "4.00 s", "[50 25 17]"}; !slices.Equal(got, want) {
		t.Errorf("row %v, want %v", got, want)
	}
}
