// Package load is the bench's load generator: a fixed number of HTTP POSTs at a
// fixed concurrency over keep-alive loopback connections, with every response
// checked and every latency kept, so the run stops by itself and percentiles are
// exact.
package load

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Target is what every request of a run sends.
type Target struct {
	URL    string
	Header http.Header
	// Bodies are sent round-robin (several issue ids, say); at least one.
	Bodies [][]byte
	// Check validates a response; nil accepts any 200.
	Check func(status int, body []byte) error
}

// Result of one run.
type Result struct {
	Requests    int
	Concurrency int
	Elapsed     time.Duration
	// Latencies are sorted ascending.
	Latencies []time.Duration
}

// Throughput is completed requests per second.
func (r Result) Throughput() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Requests) / r.Elapsed.Seconds()
}

// Percentile returns the q-quantile latency (0 < q <= 1), nearest rank.
func (r Result) Percentile(q float64) time.Duration {
	if len(r.Latencies) == 0 {
		return 0
	}
	i := int(q*float64(len(r.Latencies))+0.999999) - 1
	return r.Latencies[min(max(i, 0), len(r.Latencies)-1)]
}

// NewClient returns a client whose pool keeps conns loopback connections alive.
func NewClient(conns int) *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			MaxIdleConns:        conns,
			MaxIdleConnsPerHost: conns,
			MaxConnsPerHost:     conns,
			IdleConnTimeout:     time.Minute,
			DisableCompression:  true,
		},
		Timeout: 30 * time.Second,
	}
}

// Run sends requests POSTs to t with concurrency workers and fails on the first
// response that is not accepted: a benchmark of errors would measure nothing.
func Run(ctx context.Context, c *http.Client, t Target, requests, concurrency int) (Result, error) {
	if requests <= 0 || concurrency <= 0 || len(t.Bodies) == 0 {
		return Result{}, errors.New("load: requests, concurrency and bodies must be positive")
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	lat := make([]time.Duration, requests)
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range concurrency {
		wg.Go(func() {
			var buf bytes.Buffer
			for {
				i := int(next.Add(1) - 1)
				if i >= requests || ctx.Err() != nil {
					return
				}
				t0 := time.Now()
				if err := once(ctx, c, t, t.Bodies[i%len(t.Bodies)], &buf); err != nil {
					cancel(fmt.Errorf("request %d: %w", i, err))
					return
				}
				lat[i] = time.Since(t0)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := context.Cause(ctx); err != nil {
		return Result{}, err
	}
	slices.Sort(lat)
	return Result{Requests: requests, Concurrency: concurrency, Elapsed: elapsed, Latencies: lat}, nil
}

func once(ctx context.Context, c *http.Client, t Target, body []byte, buf *bytes.Buffer) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	for k, v := range t.Header {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	buf.Reset()
	if _, err := io.Copy(buf, resp.Body); err != nil {
		return err
	}
	if t.Check != nil {
		return t.Check(resp.StatusCode, buf.Bytes())
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d: %.200s", resp.StatusCode, buf.Bytes())
	}
	return nil
}
