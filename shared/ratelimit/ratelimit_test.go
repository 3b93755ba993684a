package ratelimit

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/auth"
)

func TestParse(t *testing.T) {
	cases := []struct {
		in      string
		want    Rate
		wantErr bool
	}{
		{"120/m", Rate{120, time.Minute}, false},
		{"10/s", Rate{10, time.Second}, false},
		{" 1000 / h ", Rate{1000, time.Hour}, false},
		{"0/m", Rate{}, true},
		{"-1/m", Rate{}, true},
		{"10", Rate{}, true},
		{"10/d", Rate{}, true},
		{"x/m", Rate{}, true},
		{"", Rate{}, true},
	}
	for _, c := range cases {
		got, err := Parse(c.in)
		if (err != nil) != c.wantErr || got != c.want {
			t.Errorf("Parse(%q) = %v, %v; want %v, err=%v", c.in, got, err, c.want, c.wantErr)
		}
		if err == nil {
			if again, _ := Parse(got.String()); again != got {
				t.Errorf("String() of %v does not parse back", got)
			}
		}
	}
}

// memCounter counts per (ws, key, window start) like the store does.
type memCounter struct {
	n    map[string]int64
	fail error
}

func (m *memCounter) UpdateRateCounter(_ context.Context, ws, key string, start time.Time, _ time.Duration) (int64, error) {
	if m.fail != nil {
		return 0, m.fail
	}
	k := ws + "|" + key + "|" + start.Format(time.RFC3339Nano)
	m.n[k]++
	return m.n[k], nil
}

func TestAllow(t *testing.T) {
	c := &memCounter{n: map[string]int64{}}
	l := New(c, Rate{Limit: 2, Window: time.Minute})
	p := auth.Principal{WorkspaceID: "ws", TokenID: "tok_1"}
	base := time.Date(2026, 1, 1, 10, 0, 15, 0, time.UTC)
	steps := []struct {
		at    time.Time
		p     auth.Principal
		tool  string
		retry time.Duration
	}{
		{base, p, "get_issue", 0},
		{base.Add(time.Second), p, "get_issue", 0},
		{base.Add(2 * time.Second), p, "get_issue", 43 * time.Second}, // window ends at 10:01:00
		{base.Add(2 * time.Second), p, "list_issues", 0},              // per tool
		{base.Add(2 * time.Second), auth.Principal{WorkspaceID: "ws", TokenID: "tok_2"}, "get_issue", 0},
		{base.Add(45*time.Second + 500*time.Millisecond), p, "get_issue", 0}, // next window
		{base.Add(45*time.Second + 900*time.Millisecond), p, "get_issue", 0},
		{base.Add(104*time.Second + 999*time.Millisecond), p, "get_issue", time.Second}, // rounds up to 1 s
	}
	for i, s := range steps {
		retry, err := l.Allow(context.Background(), s.p, s.tool, s.at)
		if err != nil {
			t.Fatal(err)
		}
		if retry != s.retry {
			t.Errorf("step %d: retry = %v, want %v", i, retry, s.retry)
		}
	}
	c.fail = errors.New("down")
	if _, err := l.Allow(context.Background(), p, "get_issue", base); err == nil {
		t.Error("counter failure not reported")
	}
}
