// Package ratelimit limits tool calls per token and tool with fixed windows counted
// in the store, so the limit holds across every Lambda instance (or local process)
// that shares the store.
package ratelimit

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aacworkflow/aacmcp/shared/auth"
)

// Rate is a number of calls per window.
type Rate struct {
	Limit  int64
	Window time.Duration
}

func (r Rate) String() string {
	unit := map[time.Duration]string{time.Second: "s", time.Minute: "m", time.Hour: "h"}[r.Window]
	return strconv.FormatInt(r.Limit, 10) + "/" + unit
}

// Parse reads a rate such as "120/m", "10/s" or "1000/h".
func Parse(s string) (Rate, error) {
	n, unit, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return Rate{}, fmt.Errorf("rate %q: want N/s, N/m or N/h", s)
	}
	limit, err := strconv.ParseInt(strings.TrimSpace(n), 10, 64)
	if err != nil || limit < 1 {
		return Rate{}, fmt.Errorf("rate %q: the count must be a positive integer", s)
	}
	var w time.Duration
	switch strings.TrimSpace(unit) {
	case "s":
		w = time.Second
	case "m":
		w = time.Minute
	case "h":
		w = time.Hour
	default:
		return Rate{}, fmt.Errorf("rate %q: the unit must be s, m or h", s)
	}
	return Rate{Limit: limit, Window: w}, nil
}

// Counter is the one store method the limiter needs (store.Writer has it).
type Counter interface {
	UpdateRateCounter(ctx context.Context, ws, key string, windowStart time.Time, window time.Duration) (int64, error)
}

// Store is a fixed-window limiter counting in a Counter. It implements
// guard.Limiter.
type Store struct {
	counter Counter
	rate    Rate
}

// New returns a limiter allowing rate calls per token and tool.
func New(c Counter, rate Rate) *Store { return &Store{counter: c, rate: rate} }

// Allow counts the call and reports how long to wait when the window's budget is
// spent. Windows are aligned to the epoch so every instance agrees on them.
func (s *Store) Allow(ctx context.Context, p auth.Principal, tool string, now time.Time) (time.Duration, error) {
	start := now.UTC().Truncate(s.rate.Window)
	key := "token#" + p.TokenID + "#tool#" + tool
	n, err := s.counter.UpdateRateCounter(ctx, p.WorkspaceID, key, start, s.rate.Window)
	if err != nil {
		return 0, err
	}
	if n <= s.rate.Limit {
		return 0, nil
	}
	retry := start.Add(s.rate.Window).Sub(now)
	if retry < time.Second {
		// Retry-After has whole-second resolution; never tell a client "now".
		retry = time.Second
	}
	return retry, nil
}
