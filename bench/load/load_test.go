package load

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestRun(t *testing.T) {
	var served atomic.Int64
	var bodies bodyCounts
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies.add(string(b))
		if served.Add(1) == 7 && strings.Contains(r.URL.Path, "fail") {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(srv.Close)

	tests := []struct {
		name     string
		path     string
		check    func(int, []byte) error
		requests int
		wantErr  bool
	}{
		{name: "all accepted", path: "/ok", requests: 50},
		{name: "a 500 stops the run", path: "/fail", requests: 50, wantErr: true},
		{name: "check refuses a body", path: "/ok", requests: 10, wantErr: true,
			check: func(int, []byte) error { return errors.New("no") }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			served.Store(0)
			bodies.reset()
			c := NewClient(4)
			res, err := Run(context.Background(), c, Target{
				URL: srv.URL + tc.path, Bodies: [][]byte{[]byte("a"), []byte("b")}, Check: tc.check,
			}, tc.requests, 4)
			if tc.wantErr {
				if err == nil {
					t.Fatal("want an error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := served.Load(); got != int64(tc.requests) {
				t.Errorf("served %d requests, want %d", got, tc.requests)
			}
			if res.Requests != tc.requests || len(res.Latencies) != tc.requests {
				t.Errorf("result counts %d/%d, want %d", res.Requests, len(res.Latencies), tc.requests)
			}
			if a, b := bodies.count("a"), bodies.count("b"); a != tc.requests/2 || b != tc.requests/2 {
				t.Errorf("bodies a=%d b=%d, want round-robin", a, b)
			}
			if res.Percentile(0.5) > res.Percentile(0.99) || res.Percentile(0.99) <= 0 {
				t.Errorf("percentiles out of order: p50 %v p99 %v", res.Percentile(0.5), res.Percentile(0.99))
			}
		})
	}
}

func TestPercentile(t *testing.T) {
	r := Result{Latencies: make([]time.Duration, 100)}
	for i := range r.Latencies {
		r.Latencies[i] = time.Duration(i+1) * time.Millisecond
	}
	for q, want := range map[float64]time.Duration{0.5: 50 * time.Millisecond, 0.99: 99 * time.Millisecond, 1: 100 * time.Millisecond} {
		if got := r.Percentile(q); got != want {
			t.Errorf("Percentile(%v) = %v, want %v", q, got, want)
		}
	}
	if (Result{}).Percentile(0.5) != 0 {
		t.Error("empty result: want 0")
	}
}

type bodyCounts struct {
	mu sync.Mutex
	m  map[string]int
}

func (s *bodyCounts) add(k string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]int{}
	}
	s.m[k]++
}

func (s *bodyCounts) count(k string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[k]
}

func (s *bodyCounts) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m = nil
}
