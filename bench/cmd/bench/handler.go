package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aacworkflow/aacmcp/bench/bare"
	"github.com/aacworkflow/aacmcp/bench/fixture"
	"github.com/aacworkflow/aacmcp/bench/peerfile"
	"github.com/aacworkflow/aacmcp/bench/report"
	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/audit/file"
	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/catalog"
	"github.com/aacworkflow/aacmcp/shared/guard"
	"github.com/aacworkflow/aacmcp/shared/mcpserver"
	"github.com/aacworkflow/aacmcp/shared/store/sqlite"
)

// discardSink accepts every record (goal 4 measures the pipeline, not a sink).
type discardSink struct{}

func (discardSink) Write(context.Context, audit.Record) error { return nil }

// inProcess is aacmcp's whole HTTP handler over a SQLite store, as serve wires it.
type inProcess struct {
	h     http.Handler
	st    *sqlite.Store
	token string
	close func()
}

func newInProcess(ctx context.Context, ds fixture.Dataset, sink audit.Sink, logOut io.Writer) (*inProcess, error) {
	log := slog.New(slog.NewTextHandler(logOut, nil))
	st, err := sqlite.Open(ctx, filepath.Join(ds.Dir, fixture.DBFile), sqlite.WithLogger(log), sqlite.WithReadCache())
	if err != nil {
		return nil, err
	}
	cat := catalog.New(catalog.Deps{})
	g := guard.New(guard.Config{Catalog: cat, Store: st, Audit: sink, Logger: log})
	v := auth.NewCachedVerifier(&auth.Verifier{Store: st}, auth.MaxCacheTTL, 0)
	h := mcpserver.New(mcpserver.Config{Logger: log}, g, cat, mcpserver.BearerSource{Verifier: v})
	return &inProcess{h: h, st: st, token: ds.Token, close: func() { st.Close() }}, nil
}

func mcpRequest(body []byte, token string) *http.Request {
	req := httptest.NewRequest(http.MethodPost, "/mcp", bytes.NewReader(body))
	req.Host = "127.0.0.1"
	req.RemoteAddr = "127.0.0.1:40000"
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", protocolVersion)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return req
}

// benchHandler is one tools/call per op through h, checked.
func benchHandler(h http.Handler, body []byte, token string) (testing.BenchmarkResult, error) {
	var failure atomic.Value
	res := testing.Benchmark(func(tb *testing.B) {
		tb.ReportAllocs()
		for tb.Loop() {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, mcpRequest(body, token))
			if err := checkToolResult(rec.Code, rec.Body.Bytes()); err != nil {
				failure.Store(err)
				tb.SkipNow()
			}
		}
	})
	if err, ok := failure.Load().(error); ok {
		return res, err
	}
	return res, nil
}

func (b *bench) handler(ctx context.Context) error {
	ds, peerFile, err := b.peerDataset(ctx)
	if err != nil {
		return err
	}
	pf, err := peerfile.Read(peerFile)
	if err != nil {
		return err
	}
	ip, err := newInProcess(ctx, ds, discardSink{}, io.Discard)
	if err != nil {
		return err
	}
	defer ip.close()
	bareH := bare.New(pf.Workspace, pf.Issues).Handler()
	body := callBody(1, "get_issue", map[string]any{"issue_id": ds.Keys[4242]})

	type row struct{ ns, bytes, allocs []float64 }
	rows := map[string]*row{"aacmcp": {}, "bare": {}}
	var ratios []float64
	for r := range b.opt.rounds {
		got := map[string]testing.BenchmarkResult{}
		for _, name := range rotate([]string{"aacmcp", "bare"}, r) {
			h, tok := http.Handler(bareH), ""
			if name == "aacmcp" {
				h, tok = ip.h, ip.token
			}
			res, err := benchHandler(h, body, tok)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			got[name] = res
			rw := rows[name]
			rw.ns = append(rw.ns, float64(res.NsPerOp()))
			rw.bytes = append(rw.bytes, float64(res.AllocedBytesPerOp()))
			rw.allocs = append(rw.allocs, float64(res.AllocsPerOp()))
		}
		ratios = append(ratios, float64(got["aacmcp"].NsPerOp())/float64(got["bare"].NsPerOp()))
	}
	sec := reportSection("4. Handler overhead in process",
		"One `tools/call get_issue` through the whole HTTP handler, in process (httptest, no network), "+
			"as a Go benchmark (testing.Benchmark, about 1 s each): aacmcp with token verification "+
			"(cached verifier, as serve runs it), the guard, SQLite (file in a temp folder, 10,000 issues; "+
			"members and issues answered from serve's exact in-memory copy, sqlite.WithReadCache), "+
			"a discarding audit sink, and its access log formatted into io.Discard; bare is the bare peer's "+
			"mcp-go handler over the same issues. Interleaved rounds, medians.",
		[]string{"handler", "ns/op", "B/op", "allocs/op"})
	for _, name := range []string{"aacmcp", "bare"} {
		rw := rows[name]
		sec.Table.Rows = append(sec.Table.Rows, []string{name, fmt.Sprintf("%.0f", report.Median(rw.ns)),
			fmt.Sprintf("%.0f", report.Median(rw.bytes)), fmt.Sprintf("%.0f", report.Median(rw.allocs))})
	}
	ratio := report.Median(ratios)
	b.addGoal("4. handler ns/op vs bare", "<= 2x", fmt.Sprintf("%.2fx", ratio), ratio <= 2,
		"bare does no I/O; aacmcp's call checks the token cache and the member record, validates and "+
			"digests the arguments, encodes the audit record and formats the access log; where the time goes "+
			"is in bench/profiles/get_issue.pprof")
	if b.opt.profile {
		prof, err := b.profile(ctx, ds)
		if err != nil {
			return err
		}
		sec.After = append(sec.After, prof...)
	}
	b.rep.Sections = append(b.rep.Sections, sec)
	return nil
}

// profile runs the real stack (file audit sink, access log to a file) in process
// under 32 concurrent callers of each tool with the CPU profiler on, keeps the
// profiles under bench/profiles, and returns the top of each for the report.
func (b *bench) profile(ctx context.Context, ds fixture.Dataset) ([]string, error) {
	auditDir := filepath.Join(b.work, "profile-audit")
	sink, err := file.New(auditDir)
	if err != nil {
		return nil, err
	}
	defer sink.Close()
	logf, err := os.Create(filepath.Join(b.work, "profile-access.log"))
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	ip, err := newInProcess(ctx, ds, sink, logf)
	if err != nil {
		return nil, err
	}
	defer ip.close()
	dir := filepath.Join(b.root, "bench", "profiles")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var out []string
	for _, w := range workloads(ds) {
		path := filepath.Join(dir, w.tool+".pprof")
		f, err := os.Create(path)
		if err != nil {
			return nil, err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return nil, err
		}
		var next atomic.Int64
		var failed atomic.Value
		var wg sync.WaitGroup
		const total = 20000
		for range 32 {
			wg.Go(func() {
				for {
					i := next.Add(1)
					if i > total {
						return
					}
					rec := httptest.NewRecorder()
					ip.h.ServeHTTP(rec, mcpRequest(w.bodies[int(i)%len(w.bodies)], ip.token))
					if err := checkToolResult(rec.Code, rec.Body.Bytes()); err != nil {
						failed.Store(err)
						return
					}
				}
			})
		}
		wg.Wait()
		pprof.StopCPUProfile()
		f.Close()
		if err, ok := failed.Load().(error); ok {
			return nil, err
		}
		top, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-nodecount=25", path).Output()
		if err != nil {
			return nil, fmt.Errorf("pprof %s: %w", path, err)
		}
		out = append(out, fmt.Sprintf("CPU profile of `%s` through the full real stack in process (file audit sink, "+
			"access log to a file, 32 concurrent callers, %d calls) on %s: [bench/profiles/%s.pprof](profiles/%s.pprof) "+
			"(`go tool pprof -http=: bench/profiles/%s.pprof`); %s of CPU per call. Top of the flat profile:\n\n```\n%s```",
			w.tool, total, commitOf(b.root), w.tool, w.tool, w.tool, perCall(string(top), total), trimPprof(string(top))))
		before, err := b.baselineProfile(ctx, w.tool, total)
		if err != nil {
			return nil, err
		}
		out = append(out, before...)
	}
	return out, nil
}

// baselineProfile shows the same workload's profile as taken on an earlier commit,
// kept in bench/profiles/baseline with that commit's name in COMMIT, so that the
// report sets what a change removed from a call beside what is left. Nothing when
// there is no baseline.
func (b *bench) baselineProfile(ctx context.Context, tool string, total int) ([]string, error) {
	dir := filepath.Join(b.root, "bench", "profiles", "baseline")
	path := filepath.Join(dir, tool+".pprof")
	if _, err := os.Stat(path); err != nil {
		return nil, nil
	}
	commit, err := os.ReadFile(filepath.Join(dir, "COMMIT"))
	if err != nil {
		return nil, fmt.Errorf("%s has no COMMIT naming the code it profiled: %w", dir, err)
	}
	top, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-nodecount=15", path).Output()
	if err != nil {
		return nil, fmt.Errorf("pprof %s: %w", path, err)
	}
	return []string{fmt.Sprintf("Before: the same workload's profile as `make bench` took it on %s "+
		"([bench/profiles/baseline/%s.pprof](profiles/baseline/%s.pprof)); %s of CPU per call. Top of the flat profile:\n\n```\n%s```",
		strings.TrimSpace(string(commit)), tool, tool, perCall(string(top), total), trimPprof(string(top)))}, nil
}

// totalSamples reads pprof -top's "Total samples = 6.99s" line.
var totalSamples = regexp.MustCompile(`Total samples = ([0-9.]+)(ms|s)\b`)

// perCall is a profile's CPU time divided by the calls it covered.
func perCall(top string, calls int) string {
	m := totalSamples.FindStringSubmatch(top)
	if m == nil || calls == 0 {
		return "unknown"
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	if m[2] == "s" {
		v *= 1000
	}
	return fmt.Sprintf("%.0f µs", v*1000/float64(calls))
}

// trimPprof drops pprof's header lines that name the temp binary and file.
func trimPprof(s string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "File:") || strings.HasPrefix(l, "Build ID:") || strings.HasPrefix(l, "Type:") || strings.HasPrefix(l, "Time:") {
			continue
		}
		keep = append(keep, l)
	}
	return strings.Join(keep, "\n")
}
