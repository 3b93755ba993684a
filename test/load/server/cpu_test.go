package server

import (
	"os"
	"testing"
	"time"
)

func TestParseStatCPU(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		want       time.Duration
		bad        bool
	}{
		{name: "plain", line: "4242 (aacmcp) S 1 4242 4242 0 -1 4194560 1234 0 0 0 150 37 0 0 20 0 9 0 100 1 1 18446744073709551615",
			want: 1870 * time.Millisecond},
		{name: "command with spaces and parentheses", line: "7 (a (b) c) R 1 7 7 0 -1 0 0 0 0 0 5 5 0 0 20 0 1 0",
			want: 100 * time.Millisecond},
		{name: "no command name", line: "7 a R 1 7 7 0 -1 0 0 0 0 0 5 5", bad: true},
		{name: "too short", line: "7 (a) R 1 7 7 0 -1 0 0 0 0 0 5", bad: true},
		{name: "not a number", line: "7 (a) R 1 7 7 0 -1 0 0 0 0 0 x 5 0", bad: true},
		{name: "negative", line: "7 (a) R 1 7 7 0 -1 0 0 0 0 0 -5 5 0", bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseStatCPU([]byte(tc.line))
			if tc.bad {
				if err == nil {
					t.Fatalf("parseStatCPU(%q) = %v, want an error", tc.line, got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("parseStatCPU(%q) = %v, %v; want %v", tc.line, got, err, tc.want)
			}
		})
	}
}

// The reading moves with work done. The spin ends once the reading has moved or after
// a deadline far above what the work needs, so a busy machine slows it, not fails it.
func TestProcessCPUCountsWork(t *testing.T) {
	before, err := ProcessCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		for end := time.Now().Add(10 * time.Millisecond); time.Now().Before(end); {
		}
		after, err := ProcessCPU(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if after-before >= 50*time.Millisecond {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("a minute of spinning moved the process's CPU time by %v", after-before)
		}
	}
}
