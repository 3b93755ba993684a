package report

import (
	"os"
	"slices"
	"strings"
)

// Median is the middle of v (the mean of the two middle values for an even count),
// 0 for none. Every goal is judged on medians of rounds or runs.
func Median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// LoadAverage is the 1, 5 and 15 minute load averages, "unknown" off Linux: a
// report states them at its start and end, since the machines are shared.
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], ", ")
}
