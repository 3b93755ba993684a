package load

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/test/load/server"
)

// call is one tool invocation the workload made and what it saw.
type call struct {
	ReqID     string
	Client    int
	Tenant    string
	Tool      string
	Transport string
	// Want are the codes the call may get ("" is success); a code outside it is an
	// unexpected error.
	Want []string
	// Responded is false when no answer arrived (connection refused or cut: the
	// server was killed). Code and Replay are valid only when Responded.
	Responded bool
	Code      string
	Replay    bool
	Status    int
	Err       string // transport error, when !Responded
	Latency   time.Duration
}

func (c call) expected() bool { return c.Responded && slices.Contains(c.Want, c.Code) }

// ownIssue is an issue a client created and alone changes (besides the server).
type ownIssue struct {
	Tenant   string
	ID       string
	Key      string
	Comments []string // ids of comments that exist, by what the client saw
	Deleted  bool
	// Uncertain is set when a call on the issue got no answer: its effect is then
	// unknown, and exact checks skip the issue.
	Uncertain bool
}

// hotStats counts what clients saw on a contended issue.
type hotStats struct {
	Successes   int64 // update_issue answered with version+1
	Conflicts   int64
	Unanswered  int64 // update calls without a response
	LastTitle   string
	LastVersion int64
}

// workload drives mixed calls from many clients and records every call.
type workload struct {
	name  string // prefix of request ids, unique per workload of a run
	c     *server.Client
	w     *server.World
	seed  uint64
	quota []int // calls per client

	// stop ends the run early (crash tests); the clients then finish the call in
	// flight and return.
	stop atomic.Bool
	done atomic.Int64 // calls answered so far

	mu    sync.Mutex
	calls []call
	own   map[string]*ownIssue // by issue id
	hot   map[string]*hotStats // by issue id
	// idem holds calls with an idempotency_key that got no answer, for retry after
	// a restart: the key must not be stuck.
	idem []pendingIdem
}

type pendingIdem struct {
	Tenant *server.Tenant
	Token  string
	Tool   string
	Args   map[string]any
}

func newWorkload(name string, c *server.Client, w *server.World, clients, calls int, seed uint64) *workload {
	q := make([]int, clients)
	for i := range q {
		q[i] = calls / clients
		if i < calls%clients {
			q[i]++
		}
	}
	wl := &workload{name: name, c: c, w: w, seed: seed, quota: q, own: map[string]*ownIssue{}, hot: map[string]*hotStats{}}
	for _, tn := range w.Tenants {
		for _, h := range tn.Hot {
			wl.hot[h.ID] = &hotStats{LastVersion: h.Version, LastTitle: h.Title}
		}
	}
	return wl
}

// run starts every client and waits for them.
func (wl *workload) run(ctx context.Context) {
	var wg sync.WaitGroup
	for i := range wl.quota {
		wg.Go(func() { wl.client(ctx, i) })
	}
	wg.Wait()
}

// clientState is one client's view.
type clientState struct {
	id     int
	tn     *server.Tenant
	other  *server.Tenant
	rng    *rand.Rand
	n      int // calls made
	quota  int
	issues []*ownIssue // alive (not deleted) own issues
}

func (wl *workload) client(ctx context.Context, id int) {
	ts := wl.w.Tenants
	cs := &clientState{
		id: id, tn: ts[id%len(ts)], other: ts[(id+1)%len(ts)],
		rng:   rand.New(rand.NewPCG(wl.seed, uint64(id))),
		quota: wl.quota[id],
	}
	for cs.n < cs.quota && !wl.stop.Load() && ctx.Err() == nil {
		wl.step(ctx, cs)
	}
}

// weights of the actions, in the order of step's switch.
var weights = []int{
	8,  // 0 create_issue
	10, // 1 comment_issue
	4,  // 2 delete_comment
	10, // 3 get_issue + update_issue on a hot issue (expected_version)
	4,  // 4 assign_issue_to_agent
	3,  // 5 trigger_autopilot
	3,  // 6 delete_issue (+ repeat)
	16, // 7 reads: list_issues, get_issue, list_comments, dashboard_usage_daily
	2,  // 8 delete_issue without confirm
	2,  // 9 read-only token writes
	2,  // 10 viewer writes
	3,  // 11 cross-tenant ids
	2,  // 12 invalid arguments
	1,  // 13 removed member
	1,  // 14 invalid, expired, revoked tokens
	1,  // 15 unknown tool
}

func pick(rng *rand.Rand) int {
	total := 0
	for _, w := range weights {
		total += w
	}
	n := rng.IntN(total)
	for i, w := range weights {
		if n < w {
			return i
		}
		n -= w
	}
	return 0
}

var success = []string{""}

// step runs one action (one to three calls).
func (wl *workload) step(ctx context.Context, cs *clientState) {
	tn := cs.tn
	writer := tn.Tokens[server.TokAdmin]
	if cs.rng.IntN(2) == 0 {
		writer = tn.Tokens[server.TokMember]
	}
	switch a := pick(cs.rng); a {
	case 0:
		wl.createIssue(ctx, cs, writer)
	case 1:
		is := wl.ownIssue(ctx, cs, writer)
		if is == nil {
			return
		}
		args := map[string]any{"issue_id": is.ID, "body": fmt.Sprintf("comment from client %d call %d", cs.id, cs.n)}
		idem := cs.rng.IntN(4) == 0
		if idem {
			args["idempotency_key"] = fmt.Sprintf("%s-c%d-%d-comment", wl.name, cs.id, cs.n)
		}
		r, c := wl.do(ctx, cs, writer, "comment_issue", args, success)
		if !c.Responded {
			wl.uncertain(is, cs, writer, "comment_issue", args, idem)
			return
		}
		var cm struct {
			ID string `json:"id"`
		}
		if c.Code == "" && json.Unmarshal(r.Result, &cm) == nil {
			wl.mu.Lock()
			is.Comments = append(is.Comments, cm.ID)
			wl.mu.Unlock()
			if idem && cs.n < cs.quota {
				// The same key and arguments again: the first result, not a second comment.
				r2, c2 := wl.do(ctx, cs, writer, "comment_issue", args, success)
				if c2.Responded && c2.Code == "" {
					var again struct {
						ID string `json:"id"`
					}
					_ = json.Unmarshal(r2.Result, &again)
					if !r2.Replay || again.ID != cm.ID {
						wl.unexpected(c2, fmt.Sprintf("replay of comment %s answered %s (replay=%v)", cm.ID, again.ID, r2.Replay))
					}
				} else if !c2.Responded {
					wl.uncertain(is, cs, "", "", nil, false)
				}
			}
		}
	case 2:
		is := wl.ownIssue(ctx, cs, writer)
		if is == nil {
			return
		}
		wl.mu.Lock()
		var cid string
		if n := len(is.Comments); n > 0 {
			cid = is.Comments[n-1]
		}
		wl.mu.Unlock()
		if cid == "" {
			return
		}
		// Only the author or an admin may delete: use the admin token.
		_, c := wl.do(ctx, cs, tn.Tokens[server.TokAdmin], "delete_comment", map[string]any{"comment_id": cid, "confirm": true}, success)
		if !c.Responded {
			wl.uncertain(is, cs, "", "", nil, false)
			return
		}
		if c.Code == "" {
			wl.mu.Lock()
			is.Comments = slices.DeleteFunc(is.Comments, func(s string) bool { return s == cid })
			wl.mu.Unlock()
		}
	case 3:
		h := tn.Hot[cs.rng.IntN(len(tn.Hot))]
		r, c := wl.do(ctx, cs, writer, "get_issue", map[string]any{"issue_id": h.ID}, success)
		if !c.Responded || c.Code != "" || cs.n >= cs.quota {
			return
		}
		var cur struct {
			Version int64 `json:"version"`
		}
		if json.Unmarshal(r.Result, &cur) != nil {
			wl.unexpected(c, "get_issue result without a version")
			return
		}
		title := fmt.Sprintf("hot by client %d call %d", cs.id, cs.n)
		r, c = wl.do(ctx, cs, writer, "update_issue", map[string]any{"issue_id": h.ID, "title": title, "expected_version": cur.Version}, []string{"", "conflict"})
		wl.mu.Lock()
		hs := wl.hot[h.ID]
		switch {
		case !c.Responded:
			hs.Unanswered++
		case c.Code == "conflict":
			hs.Conflicts++
		case c.Code == "":
			var got struct {
				Version int64  `json:"version"`
				Title   string `json:"title"`
			}
			_ = json.Unmarshal(r.Result, &got)
			if got.Version != cur.Version+1 || got.Title != title {
				wl.mu.Unlock()
				wl.unexpected(c, fmt.Sprintf("update with expected_version %d answered version %d title %q", cur.Version, got.Version, got.Title))
				return
			}
			hs.Successes++
			if got.Version > hs.LastVersion {
				hs.LastVersion, hs.LastTitle = got.Version, got.Title
			}
		}
		wl.mu.Unlock()
	case 4:
		is := wl.ownIssue(ctx, cs, writer)
		if is == nil {
			return
		}
		_, c := wl.do(ctx, cs, writer, "assign_issue_to_agent", map[string]any{"issue_id": is.ID, "agent_id": tn.Agents[cs.rng.IntN(len(tn.Agents))]}, success)
		if !c.Responded {
			wl.uncertain(is, cs, "", "", nil, false)
		}
	case 5:
		is := wl.ownIssue(ctx, cs, writer)
		if is == nil {
			return
		}
		args := map[string]any{"issue_id": is.ID, "instructions": "load test"}
		idem := cs.rng.IntN(2) == 0
		if idem {
			args["idempotency_key"] = fmt.Sprintf("%s-c%d-%d-run", wl.name, cs.id, cs.n)
		}
		_, c := wl.do(ctx, cs, writer, "trigger_autopilot", args, success)
		if !c.Responded {
			wl.uncertain(is, cs, writer, "trigger_autopilot", args, idem)
		}
	case 6:
		is := wl.ownIssue(ctx, cs, writer)
		if is == nil {
			return
		}
		// Deleting needs admin or the author; the admin token always qualifies.
		admin := tn.Tokens[server.TokAdmin]
		args := map[string]any{"issue_id": is.ID, "confirm": true}
		_, c := wl.do(ctx, cs, admin, "delete_issue", args, success)
		if !c.Responded {
			wl.uncertain(is, cs, "", "", nil, false)
			wl.drop(cs, is, false)
			return
		}
		if c.Code != "" {
			return
		}
		wl.drop(cs, is, true)
		if cs.n < cs.quota {
			// Idempotent: the repeat succeeds with the original result.
			_, c2 := wl.do(ctx, cs, admin, "delete_issue", args, success)
			if !c2.Responded {
				wl.uncertain(is, cs, "", "", nil, false)
			}
		}
	case 7:
		switch cs.rng.IntN(4) {
		case 0:
			wl.do(ctx, cs, tn.Tokens[server.TokReadOnly], "list_issues", map[string]any{"limit": 5, "status": "open"}, success)
		case 1:
			wl.do(ctx, cs, tn.Tokens[server.TokViewer], "get_issue", map[string]any{"issue_id": tn.Issues[cs.rng.IntN(len(tn.Issues))].Key}, success)
		case 2:
			wl.do(ctx, cs, tn.Tokens[server.TokReadOnly], "list_comments", map[string]any{"issue_id": tn.Issues[0].ID}, success)
		case 3:
			wl.do(ctx, cs, tn.Tokens[server.TokAdmin], "dashboard_usage_daily", map[string]any{}, success)
		}
	case 8:
		is := wl.ownIssue(ctx, cs, writer)
		if is == nil {
			return
		}
		confirm := []any{nil, false, "true", 1}[cs.rng.IntN(4)]
		args := map[string]any{"issue_id": is.ID}
		if confirm != nil {
			args["confirm"] = confirm
		}
		wl.do(ctx, cs, tn.Tokens[server.TokAdmin], "delete_issue", args, []string{"destructive_flag_missing"})
	case 9:
		wl.do(ctx, cs, tn.Tokens[server.TokReadOnly], "create_issue", map[string]any{"title": "never"}, []string{"insufficient_scope"})
	case 10:
		wl.do(ctx, cs, tn.Tokens[server.TokViewer], "comment_issue", map[string]any{"issue_id": tn.Issues[1].ID, "body": "viewers cannot"}, []string{"permission_denied"})
	case 11:
		if cs.rng.IntN(2) == 0 {
			wl.do(ctx, cs, tn.Tokens[server.TokAdmin], "get_issue", map[string]any{"issue_id": cs.other.Issues[0].ID}, []string{"not_found"})
		} else {
			wl.do(ctx, cs, tn.Tokens[server.TokAdmin], "delete_comment", map[string]any{"comment_id": cs.other.Comment.ID, "confirm": true}, []string{"not_found"})
		}
	case 12:
		bad := []map[string]any{{"title": 5}, {"title": "x", "unknown": true}, {"title": ""}, {"title": "x", "labels": "not-a-list"}}[cs.rng.IntN(4)]
		wl.do(ctx, cs, writer, "create_issue", bad, []string{"invalid_arguments"})
	case 13:
		wl.do(ctx, cs, tn.Tokens[server.TokRemoved], "list_issues", map[string]any{}, []string{"permission_denied"})
	case 14:
		tok := []string{wl.w.Expired, wl.w.Revoked, "aac_not-a-token", ""}[cs.rng.IntN(4)]
		wl.do(ctx, cs, tok, "list_issues", map[string]any{}, []string{"invalid_token"})
	case 15:
		wl.do(ctx, cs, writer, "drop_database", map[string]any{}, []string{"unknown_tool"})
	}
}

// createIssue creates an issue the client then owns, sometimes with an idempotency
// key and an immediate retry that must be a replay.
func (wl *workload) createIssue(ctx context.Context, cs *clientState, token string) *ownIssue {
	args := map[string]any{"title": fmt.Sprintf("issue of client %d call %d", cs.id, cs.n), "labels": []string{"load", fmt.Sprintf("c%d", cs.id)}}
	idem := cs.rng.IntN(3) == 0
	if idem {
		args["idempotency_key"] = fmt.Sprintf("%s-c%d-%d-create", wl.name, cs.id, cs.n)
	}
	r, c := wl.do(ctx, cs, token, "create_issue", args, success)
	if !c.Responded {
		if idem {
			wl.mu.Lock()
			wl.idem = append(wl.idem, pendingIdem{Tenant: cs.tn, Token: token, Tool: "create_issue", Args: args})
			wl.mu.Unlock()
		}
		return nil
	}
	var is struct {
		ID  string `json:"id"`
		Key string `json:"key"`
	}
	if c.Code != "" || json.Unmarshal(r.Result, &is) != nil || is.ID == "" {
		return nil
	}
	own := &ownIssue{Tenant: cs.tn.ID, ID: is.ID, Key: is.Key}
	wl.mu.Lock()
	wl.own[is.ID] = own
	wl.mu.Unlock()
	cs.issues = append(cs.issues, own)
	if idem && cs.n < cs.quota {
		r2, c2 := wl.do(ctx, cs, token, "create_issue", args, success)
		if c2.Responded && c2.Code == "" {
			var again struct {
				ID string `json:"id"`
			}
			_ = json.Unmarshal(r2.Result, &again)
			if !r2.Replay || again.ID != is.ID {
				wl.unexpected(c2, fmt.Sprintf("replay of create %s answered %s (replay=%v)", is.ID, again.ID, r2.Replay))
			}
		}
	}
	return own
}

// ownIssue returns one of the client's alive issues, now and then (and always when
// it has none) creating a new one first. nil: no issue, or the quota is spent.
func (wl *workload) ownIssue(ctx context.Context, cs *clientState, token string) *ownIssue {
	if len(cs.issues) == 0 || (len(cs.issues) < 6 && cs.rng.IntN(8) == 0) {
		wl.createIssue(ctx, cs, token)
	}
	if len(cs.issues) == 0 || cs.n >= cs.quota {
		return nil
	}
	return cs.issues[cs.rng.IntN(len(cs.issues))]
}

// drop removes an issue from the client's alive list.
func (wl *workload) drop(cs *clientState, is *ownIssue, deleted bool) {
	cs.issues = slices.DeleteFunc(cs.issues, func(o *ownIssue) bool { return o == is })
	if deleted {
		wl.mu.Lock()
		is.Deleted = true
		wl.mu.Unlock()
	}
}

// uncertain marks an issue whose last call got no answer, and remembers an
// idempotent call for a retry after the restart.
func (wl *workload) uncertain(is *ownIssue, cs *clientState, token, tool string, args map[string]any, idem bool) {
	wl.mu.Lock()
	defer wl.mu.Unlock()
	is.Uncertain = true
	if idem {
		wl.idem = append(wl.idem, pendingIdem{Tenant: cs.tn, Token: token, Tool: tool, Args: args})
	}
}

// do makes one call, counts it against the client's quota and records it.
func (wl *workload) do(ctx context.Context, cs *clientState, token, tool string, args map[string]any, want []string) (server.Response, call) {
	transport := server.REST
	if cs.rng.IntN(2) == 0 {
		transport = server.MCP
	}
	c := call{
		ReqID:  fmt.Sprintf("%s-c%d-n%d", wl.name, cs.id, cs.n),
		Client: cs.id, Tenant: cs.tn.ID, Tool: tool, Transport: transport, Want: want,
	}
	cs.n++
	start := time.Now()
	r, err := wl.c.Call(ctx, transport, token, tool, args, c.ReqID)
	c.Latency = time.Since(start)
	if err != nil {
		c.Err = err.Error()
	} else {
		c.Responded, c.Code, c.Replay, c.Status = true, r.Code, r.Replay, r.Status
		wl.done.Add(1)
	}
	wl.mu.Lock()
	wl.calls = append(wl.calls, c)
	wl.mu.Unlock()
	return r, c
}

// unexpected records a semantic surprise on an answered call as an unexpected
// error (the code is replaced so the check reports it).
func (wl *workload) unexpected(c call, why string) {
	wl.mu.Lock()
	defer wl.mu.Unlock()
	for i := len(wl.calls) - 1; i >= 0; i-- {
		if wl.calls[i].ReqID == c.ReqID {
			wl.calls[i].Code = "unexpected: " + why
			return
		}
	}
}

// summary of latencies for the log.
func latencySummary(calls []call) string {
	var ans []call
	for _, c := range calls {
		if c.Responded {
			ans = append(ans, c)
		}
	}
	if len(ans) == 0 {
		return "no answered calls"
	}
	sort.Slice(ans, func(i, j int) bool { return ans[i].Latency < ans[j].Latency })
	q := func(p float64) time.Duration { return ans[min(len(ans)-1, int(p*float64(len(ans))))].Latency }
	return fmt.Sprintf("mean %v, p50 %v, p95 %v, p99 %v, max %v; %s", meanLatency(ans).Round(time.Microsecond),
		q(0.50).Round(time.Microsecond), q(0.95).Round(time.Microsecond),
		q(0.99).Round(time.Microsecond), ans[len(ans)-1].Latency.Round(time.Microsecond), tailSummary(ans))
}

// meanLatency is the mean latency of answered calls (len(ans) > 0).
func meanLatency(ans []call) time.Duration {
	var sum time.Duration
	for _, c := range ans {
		sum += c.Latency
	}
	return sum / time.Duration(len(ans))
}

// tailSummary says what the slowest 1% of the answered calls (sorted by latency)
// were: the share of writes among them against their share of all calls, and the
// tools most often there. It is where docs/security.md's account of the soak tail
// comes from.
func tailSummary(sorted []call) string {
	tail := sorted[len(sorted)-max(1, len(sorted)/100):]
	isWrite := func(c call) bool { return writeTools[c.Tool] }
	writes, tailWrites := 0, 0
	for _, c := range sorted {
		if isWrite(c) {
			writes++
		}
	}
	byTool := map[string]int{}
	for _, c := range tail {
		byTool[c.Tool]++
		if isWrite(c) {
			tailWrites++
		}
	}
	tools := make([]string, 0, len(byTool))
	for t := range byTool {
		tools = append(tools, t)
	}
	sort.Slice(tools, func(i, j int) bool {
		return byTool[tools[i]] > byTool[tools[j]] || byTool[tools[i]] == byTool[tools[j]] && tools[i] < tools[j]
	})
	var parts []string
	for _, t := range tools[:min(4, len(tools))] {
		parts = append(parts, fmt.Sprintf("%s %d", t, byTool[t]))
	}
	return fmt.Sprintf("slowest 1%% (%d calls, from %v): %.0f%% writes (%.0f%% of all calls); %s",
		len(tail), tail[0].Latency.Round(time.Microsecond), 100*float64(tailWrites)/float64(len(tail)),
		100*float64(writes)/float64(len(sorted)), strings.Join(parts, ", "))
}

// byTool is every tool's toolLatency, slowest p95 first: which tools make the
// soak's p95 and p99.
func byTool(calls []call) []server.ToolLatency {
	lat := map[string][]time.Duration{}
	for _, c := range calls {
		if c.Responded {
			lat[c.Tool] = append(lat[c.Tool], c.Latency)
		}
	}
	var rows []server.ToolLatency
	for t, ls := range lat {
		slices.Sort(ls)
		q := func(p float64) float64 { return ms(ls[min(len(ls)-1, int(p*float64(len(ls))))]) }
		rows = append(rows, server.ToolLatency{Tool: t, Calls: len(ls), P50: q(0.50), P95: q(0.95), P99: q(0.99)})
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].P95 > rows[j].P95 })
	return rows
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// toolLatencies is byTool as a table for the log.
func toolLatencies(calls []call) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-24s %6s %10s %10s %10s\n", "tool", "calls", "p50", "p95", "p99")
	for _, r := range byTool(calls) {
		fmt.Fprintf(&b, "%-24s %6d %9.1fms %9.1fms %9.1fms\n", r.Tool, r.Calls, r.P50, r.P95, r.P99)
	}
	return b.String()
}

func writeSummary(t *testing.T, path string, clients, made int, elapsed time.Duration, cpu cpuUse, calls []call) {
	t.Helper()
	var ans []call
	for _, c := range calls {
		if c.Responded {
			ans = append(ans, c)
		}
	}
	if len(ans) == 0 {
		t.Fatal("no answered calls to summarize")
	}
	sort.Slice(ans, func(i, j int) bool { return ans[i].Latency < ans[j].Latency })
	q := func(p float64) float64 { return ms(ans[min(len(ans)-1, int(p*float64(len(ans))))].Latency) }
	tail := ans[len(ans)-max(1, len(ans)/100):]
	writes := 0
	for _, c := range tail {
		if writeTools[c.Tool] {
			writes++
		}
	}
	s := server.Summary{
		Clients: clients, Client: *clientFlag, Calls: made, Seconds: elapsed.Seconds(),
		CallsPerSec: float64(made) / elapsed.Seconds(), Mean: ms(meanLatency(ans)),
		P50: q(0.50), P95: q(0.95), P99: q(0.99), Max: ms(ans[len(ans)-1].Latency),
		ServerCPU: cpu.server.Seconds(), LoadCPU: cpu.load.Seconds(),
		SlowestWrites: float64(writes) / float64(len(tail)),
		Tools:         byTool(calls),
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeTools are the tools that write (every other tool of the workload only reads).
var writeTools = map[string]bool{
	"create_issue": true, "update_issue": true, "comment_issue": true, "assign_issue_to_agent": true,
	"trigger_autopilot": true, "delete_comment": true, "delete_issue": true,
}

// cpuUse is the processor time of the server and of this process (the load
// generator), read together.
type cpuUse struct{ server, load time.Duration }

func cpuNow(t *testing.T, serverPid int) cpuUse {
	t.Helper()
	s, err := server.ProcessCPU(serverPid)
	if err != nil {
		t.Fatalf("the server's CPU time: %v", err)
	}
	l, err := server.ProcessCPU(os.Getpid())
	if err != nil {
		t.Fatalf("the load generator's CPU time: %v", err)
	}
	return cpuUse{server: s, load: l}
}

func (u cpuUse) since(before cpuUse) cpuUse {
	return cpuUse{server: u.server - before.server, load: u.load - before.load}
}
