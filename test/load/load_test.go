// Package load drives a built `aacmcp serve` with many concurrent clients making
// mixed calls (all eleven tools, three workspaces, tokens of every role, a share of
// calls that must be refused) and then checks, from the files the server left, that
// nothing was lost: one audit record per call, matched by request id; comment_count
// equal to the comments; no lost update under expected_version; usage counters equal
// to the audit records. The crash test kills the server with SIGKILL in the middle of
// that load, restarts it, and checks the same for every call that got an answer.
//
// Size: -clients and -calls (test flags, after -args), or AACMCP_LOAD_CLIENTS and
// AACMCP_LOAD_CALLS. The defaults are the short run of `make test`; `make soak` runs
// 200 clients and 20,000 calls.
package load

import (
	"context"
	"flag"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/test/load/server"
)

var (
	clientsFlag = flag.Int("clients", envInt("AACMCP_LOAD_CLIENTS", 20), "concurrent clients (env AACMCP_LOAD_CLIENTS)")
	callsFlag   = flag.Int("calls", envInt("AACMCP_LOAD_CALLS", 2000), "calls in total (env AACMCP_LOAD_CALLS)")
	seedFlag    = flag.Uint64("seed", uint64(envInt("AACMCP_LOAD_SEED", 1)), "workload seed (env AACMCP_LOAD_SEED)")
	summaryFlag = flag.String("summary", "", "write TestLoadConsistency's figures to this JSON file once every check passed (make bench reads it)")
	clientFlag  = flag.String("client", "plain", `the load generator's HTTP client: "plain" (server.NewPlainClient) or "net/http" (server.NewClient), to compare what the generator's own processor time does to the figures`)
	serveFlag   = flag.String("serve-args", "", `more flags for every aacmcp serve the tests start, space-separated, such as "--cpu-slots 0" (to compare settings under the same load)`)
)

// startServe starts aacmcp serve on dir with -serve-args.
func startServe(t *testing.T, dir string) *server.Proc {
	t.Helper()
	return server.Start(t, dir, strings.Fields(*serveFlag)...)
}

// newClient returns the -client client of the server at base for conns callers.
func newClient(t *testing.T, base string, conns int) *server.Client {
	t.Helper()
	switch *clientFlag {
	case "plain":
		c, err := server.NewPlainClient(base, conns)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.CloseIdle)
		return c
	case "net/http":
		c := server.NewClient(base, conns)
		t.Cleanup(c.CloseIdle)
		return c
	}
	t.Fatalf(`-client %q: want "plain" or "net/http"`, *clientFlag)
	return nil
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func TestMain(m *testing.M) { server.Main(m) }

// Workspaces and contended issues per workspace of every run.
const (
	tenants      = 3
	hotPerTenant = 3
)

func TestLoadConsistency(t *testing.T) {
	clients, calls := *clientsFlag, *callsFlag
	if clients < tenants*2 || calls < clients {
		t.Fatalf("-clients %d -calls %d: want at least %d clients and one call per client", clients, calls, tenants*2)
	}
	dir := t.TempDir()
	w := server.Seed(t, dir, tenants, hotPerTenant)
	p := startServe(t, dir)

	wl := newWorkload("load", newClient(t, p.Base, clients), w, clients, calls, *seedFlag)
	cpu0 := cpuNow(t, p.Pid())
	start := time.Now()
	wl.run(context.Background())
	elapsed := time.Since(start)
	cpu := cpuNow(t, p.Pid()).since(cpu0)
	p.Stop(t)

	f := checkCalls(t, wl.calls, exact)
	recs := readAudit(t, dir)
	f.records = len(recs)
	checkAudit(t, wl.calls, recs, exact)
	checkDatabaseFile(t, dir)
	st := server.OpenStore(t, dir)
	checkStore(t, st, wl, exact, &f)
	checkUsage(t, st, wl, recs, &f)
	if f.calls != calls {
		t.Errorf("the workload made %d calls, want %d", f.calls, calls)
	}
	if f.hotUpdates == 0 || f.byOutcome["conflict"] == 0 {
		t.Errorf("the run exercised no contended update (successes %d, conflicts %d): the lost-update check proved nothing", f.hotUpdates, f.byOutcome["conflict"])
	}
	t.Logf("%d clients, %s in %v (%.0f calls/s); latency %s", clients, f, elapsed.Round(time.Millisecond),
		float64(f.calls)/elapsed.Seconds(), latencySummary(wl.calls))
	t.Logf("CPU during the load: aacmcp serve %.2f s (%.2f cores, %.0f µs a call), the load generator (client %s) %.2f s (%.2f cores), of %d cores",
		cpu.server.Seconds(), cpu.server.Seconds()/elapsed.Seconds(), float64(cpu.server.Microseconds())/float64(f.calls),
		*clientFlag, cpu.load.Seconds(), cpu.load.Seconds()/elapsed.Seconds(), runtime.NumCPU())
	t.Logf("latency by tool:\n%s", toolLatencies(wl.calls))
	if *summaryFlag != "" && !t.Failed() {
		writeSummary(t, *summaryFlag, clients, f.calls, elapsed, cpu, wl.calls)
	}
}

func TestCrashRecovery(t *testing.T) {
	clients, calls := *clientsFlag, *callsFlag
	if clients < tenants*2 || calls < clients {
		t.Fatalf("-clients %d -calls %d: want at least %d clients and one call per client", clients, calls, tenants*2)
	}
	dir := t.TempDir()
	w := server.Seed(t, dir, tenants, hotPerTenant)
	p := startServe(t, dir)

	// Phase 1: load, and SIGKILL once a third of the calls have been answered.
	wl := newWorkload("before", newClient(t, p.Base, clients), w, clients, calls, *seedFlag)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	finished := make(chan struct{})
	go func() { wl.run(ctx); close(finished) }()
	killAt := int64(calls / 3)
	for wl.done.Load() < killAt {
		select {
		case <-finished:
			t.Fatalf("the load ended after %d answered calls, before the kill at %d", wl.done.Load(), killAt)
		case <-time.After(time.Millisecond):
		}
	}
	p.Kill(t)
	wl.stop.Store(true)
	<-finished

	// Phase 2: restart on the same folder. The database must open (the server's
	// start migrates and serves it) and pass SQLite's checks.
	checkDatabaseFile(t, dir)
	p2 := startServe(t, dir)
	c2 := newClient(t, p2.Base, clients)
	// How many usage increments the restart rebuilt from the audit log (the dead
	// server had accepted them, not committed them); checkUsage proves none is
	// missing. How many there are depends on where the kill fell, so it is only
	// reported.
	recovered := "none"
	for line := range strings.Lines(p2.Stderr()) {
		if strings.Contains(line, "recovered usage increments") {
			recovered = strings.TrimSpace(line)
		}
	}

	// A call killed while it held an idempotency key must not keep the key: the
	// client's retry runs (or replays) instead of being refused as in progress.
	retried := 0
	for i, pi := range wl.idem {
		r, err := c2.Call(context.Background(), server.REST, pi.Token, pi.Tool, pi.Args, "retry-"+strconv.Itoa(i))
		wl.calls = append(wl.calls, call{ReqID: "retry-" + strconv.Itoa(i), Tenant: pi.Tenant.ID, Tool: pi.Tool, Transport: server.REST,
			Want: []string{"", "not_found"}, Responded: err == nil, Code: r.Code, Status: r.Status})
		if err != nil {
			t.Fatalf("retry after restart: %v", err)
		}
		retried++
	}

	// More load on the restarted server, from fresh clients.
	wl2 := newWorkload("after", c2, w, clients, max(calls/5, clients), *seedFlag+1)
	// The second phase knows the hot issues' state only from the first.
	wl2.hot = wl.hot
	wl2.run(context.Background())
	p2.Stop(t)

	all := append(wl.calls, wl2.calls...)
	f := checkCalls(t, all, afterCrash)
	if f.unanswered == 0 {
		t.Errorf("no call was in flight at the kill: the crash proved nothing")
	}
	recs := readAudit(t, dir)
	f.records = len(recs)
	checkAudit(t, all, recs, afterCrash)
	checkDatabaseFile(t, dir)
	st := server.OpenStore(t, dir)
	merged := &workload{w: w, own: wl.own, hot: wl.hot}
	for id, o := range wl2.own {
		merged.own[id] = o
	}
	checkStore(t, st, merged, afterCrash, &f)
	checkUsage(t, st, merged, recs, &f)
	t.Logf("killed after %d answered calls; %d idempotent calls retried after restart; %s; usage replay: %s", killAt, retried, f, recovered)
}
