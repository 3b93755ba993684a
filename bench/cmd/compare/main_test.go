package main

import "testing"

// The figures are read from the lines bench writes (throughput.go, writes.go); a
// change to their wording must fail here, not give an empty comparison.
func TestFiguresReadBenchLines(t *testing.T) {
	report := []byte("Per-round ratios, median: get_issue aacmcp/bare 1.03x, aacmcp/ts-sdk 8.08x, bare/ts-sdk 8.11x; " +
		"list_issues aacmcp/bare 1.35x, aacmcp/ts-sdk 3.62x, bare/ts-sdk 2.66x.\n\n" +
		"Per-round ratios aacmcp/bare, median: create_issue throughput 2.33x, p99 0.26x; update_issue throughput 1.85x, " +
		"p99 0.44x; comment_issue throughput 2.38x, p99 0.38x.\n")
	want := []string{"1.03", "1.35", "2.33", "1.85", "2.38"}
	for i, f := range figures {
		m := f.re.FindSubmatch(report)
		if m == nil || string(m[1]) != want[i] {
			t.Errorf("%s: got %q, want %s", f.name, m, want[i])
		}
	}
}
