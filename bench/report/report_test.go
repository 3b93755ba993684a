package report

import (
	"strings"
	"testing"
	"time"
)

func TestWrite(t *testing.T) {
	r := Report{
		Date:     time.Date(2026, 5, 1, 12, 0, 0, 0, time.FixedZone("x", 3600)),
		Command:  "make bench",
		Duration: 90*time.Second + 400*time.Millisecond,
		Machine:  []string{"CPU: test"},
		Goals: []Goal{
			{Name: "throughput", Target: ">= 0.7x", Measured: "0.80x", Status: Check(true)},
			{Name: "p99", Target: "<= 3x", Measured: "4x", Status: Check(false), Note: "a | b\nc"},
		},
		Sections: []Section{{Title: "Throughput", Text: []string{"para"}, Table: Table{
			Header: []string{"peer", "rps"}, Rows: [][]string{{"bare", "100"}, {"short"}},
		}}},
	}
	var b strings.Builder
	if err := r.Write(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"- Date: 2026-05-01T11:00:00Z\n",
		"- Command: `make bench`\n",
		"- Wall time: 1m30s\n",
		"| throughput | >= 0.7x | 0.80x | met |  |\n",
		`| p99 | <= 3x | 4x | MISSED | a \| b c |` + "\n",
		"## Throughput\n\npara\n\n| peer | rps |\n|---|---|\n| bare | 100 |\n| short |  |\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if !strings.HasSuffix(out, "|\n") || strings.HasSuffix(out, "\n\n") {
		t.Errorf("report should end with exactly one newline")
	}
}

func TestRatio(t *testing.T) {
	tests := []struct {
		a, b float64
		want string
	}{{3, 2, "1.50x"}, {1, 0, "n/a"}, {0, 4, "0.00x"}}
	for _, tc := range tests {
		if got := Ratio(tc.a, tc.b); got != tc.want {
			t.Errorf("Ratio(%v, %v) = %q, want %q", tc.a, tc.b, got, tc.want)
		}
	}
}
