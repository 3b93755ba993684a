package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/smithy-go/middleware"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aacworkflow/aacmcp/functions/mcp/mcpfn"
	"github.com/aacworkflow/aacmcp/shared/lambdaenv"
	"github.com/aacworkflow/aacmcp/shared/store/dynamo"
	"github.com/aacworkflow/aacmcp/test/lambda/lambdatest"
)

// rtDelay is added to every AWS call so that calls made one after the other never
// overlap and calls made in parallel always do: the number of sequential round
// trips is then the longest chain of non-overlapping calls.
const rtDelay = 30 * time.Millisecond

// callLog records the interval of every AWS SDK call made through a config.
type callLog struct {
	mu    sync.Mutex
	calls []awsCall
}

type awsCall struct {
	service, op string
	start, end  time.Time
	// background marks a write the store makes after its method has returned
	// (dynamo.InBackground): no caller waits for it.
	background bool
}

func (l *callLog) install(cfg *aws.Config, service string) {
	cfg.APIOptions = append(cfg.APIOptions, func(st *middleware.Stack) error {
		return st.Initialize.Add(middleware.InitializeMiddlewareFunc("bench.CallLog",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				c := awsCall{service: service, op: middleware.GetOperationName(ctx), start: time.Now(), background: dynamo.InBackground(ctx)}
				time.Sleep(rtDelay)
				out, md, err := next.HandleInitialize(ctx, in)
				c.end = time.Now()
				l.mu.Lock()
				l.calls = append(l.calls, c)
				l.mu.Unlock()
				return out, md, err
			}), middleware.Before)
	})
}

func (l *callLog) take() []awsCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.calls
	l.calls = nil
	return c
}

// sequential is the largest set of pairwise non-overlapping calls (greedy by end
// time): with every call slowed by rtDelay, that is the number of round trips a
// caller waits for one after the other.
func sequential(calls []awsCall) int {
	c := slices.Clone(calls)
	sort.Slice(c, func(i, j int) bool { return c[i].end.Before(c[j].end) })
	n := 0
	var last time.Time
	for _, x := range c {
		if n == 0 || !x.start.Before(last) {
			n++
			last = x.end
		}
	}
	return n
}

// roundTrips runs every tool once through the guard against dynalite and kinesalite
// (the Lambda's store and audit sink, as functions/mcp wires them) and counts the
// AWS calls each makes: those on the request path, how many of them are sequential,
// and the store's background writes (drained after each call, so that each is
// counted with the tool that caused it).
func (b *bench) roundTrips(ctx context.Context) error {
	env, stop, err := lambdatest.Start(ctx)
	if err != nil {
		return err
	}
	defer stop()
	calls := &callLog{}
	dcfg := env.Dynamo.AWSConfig()
	calls.install(&dcfg, "DynamoDB")
	kcfg := env.Kinesis.AWSConfig()
	calls.install(&kcfg, "Kinesis")
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg, err := env.Config()
	if err != nil {
		return err
	}
	// The deployed function, wired by the code its main runs (mcpfn.Build): the rate
	// limiter, the confirmation policy, the metrics sink and the Kinesis audit sink
	// included. Only the clients differ: these carry the counting middleware.
	fn, err := mcpfn.Build(ctx, cfg, mcpfn.Deps{
		DB:     dynamodb.NewFromConfig(dcfg),
		Audit:  lambdaenv.AuditSink(kinesis.NewFromConfig(kcfg), lambdatest.Stream, io.Discard, "mcp", log),
		Stdout: io.Discard,
		Logger: log,
	})
	if err != nil {
		return err
	}
	defer fn.Close()
	evTemplate, err := os.ReadFile(filepath.Join(b.root, "events", "apigw", "05-list_issues.json"))
	if err != nil {
		return err
	}

	today := time.Now().UTC()
	tools := []struct {
		name string
		args map[string]any
		why  string
	}{
		{"get_issue", map[string]any{"issue_id": lambdatest.IssueMain}, "rate limiter UpdateItem, GetItem member record and GetItem issue, together (guard.runSteps, overlapped)"},
		{"list_issues", map[string]any{"limit": 25}, "limiter, GetItem member record and one GSI1 Query (one page), together"},
		{"list_comments", map[string]any{"issue_id": lambdatest.IssueMain}, "reads only: limiter and member record together with the issue GetItem and the comments Query (read side by side, dynamo.ListComments)"},
		{"dashboard_usage_daily", map[string]any{"from": today.AddDate(0, 0, -89).Format(time.DateOnly), "to": today.Format(time.DateOnly)},
			"reads only: limiter and member record together with one Query over the usage partition for the whole 90 days (not one per day)"},
		{"create_issue", map[string]any{"title": "Round-trip count", "labels": []string{"bench"}}, "writes, after the limiter and member record (the write gate): UpdateItem workspace counter (allocates the key number), then PutItem key item (conditional: a key is never given twice) and PutItem issue together; TransactWriteItems of the two puts would be atomic at the same count"},
		{"update_issue", map[string]any{"issue_id": lambdatest.IssueMain, "status": "in_progress"}, "GetItem issue beside the limiter and member record, then UpdateItem conditioned on the version read (optimistic lock; a per-call nonce lets an SDK retry succeed once)"},
		{"comment_issue", map[string]any{"issue_id": lambdatest.IssueMain, "body": "counted"}, "GetItem issue beside the limiter and member record; writes: PutItem comment lookup (claims the id), then PutItem comment and UpdateItem comment_count together (nonce-conditioned against id reuse; the count guarded by the op id against an SDK retry counting twice); clearing that guard, and marking the lookup complete (which spares delete_comment a read), are background UpdateItems. TransactWriteItems of the three: 3 round trips"},
		{"assign_issue_to_agent", map[string]any{"issue_id": lambdatest.IssueMain, "agent_id": lambdatest.Agent}, "GetItem agent (must exist) and issue together, beside the limiter and member record, then the store's GetItem and version-conditioned UpdateItem of the issue"},
		{"trigger_autopilot", map[string]any{"issue_id": lambdatest.IssueMain}, "GetItem issue beside the limiter and member record; then PutItem run lookup and PutItem run (queued) together with the issue's existence GetItem, before dispatch; UpdateItem run with the dispatch outcome, in the issue's partition the run names"},
		{"delete_comment", map[string]any{"comment_id": lambdatest.CommentDelete, "confirm": true}, "the handler starts beside the limiter, the member record and the confirmation policy GetItem (guard.runSteps: its permission rule waits for the role, its writes for every check): BatchGetItem lookup and tombstone; writes: UpdateItem lookup (the claim: on condition that it exists and is unclaimed, so exactly one caller goes on; the lookup was marked complete after its create, so the comment need not be read), then UpdateItem comment_count -1 (guarded by the op id), DeleteItem comment and PutItem tombstone together; after the answer, DeleteItem lookup, then clearing the guard: while the claimed lookup is there, a crashed delete is finished by a later one and decrements once"},
		{"delete_issue", map[string]any{"issue_id": lambdatest.IssueDelete, "confirm": true}, "the handler starts beside the limiter, the member record and the confirmation policy GetItem (guard.runSteps): BatchGetItem issue and tombstone beside the Query of its children; writes: PutItem id tombstone (decides the result) beside BatchWriteItem of the children and their lookups (none here), then DeleteItem issue beside PutItem key tombstone (the issue goes after its children, so a half-done delete is finished by the next); the key item is a background DeleteItem (until then an orphan key item, which reads ignore)"},
	}
	sec := reportSection("5. AWS round trips per tool call",
		fmt.Sprintf("Every tool called once as the deployed function runs it: functions/mcp built by mcpfn.Build "+
			"(the code its main runs: rate limiter, confirmation policy, metrics and the Kinesis audit sink), "+
			"each call an API Gateway proxy event (events/apigw's, with the fixture admin's authorizer context) "+
			"given to Function.Handle, against dynalite and kinesalite. An SDK middleware (Initialize step) "+
			"logs each operation and adds %s to it, so that calls made one after another never overlap and calls "+
			"made in parallel always do. \"Request path\" is every call made before the function answers; its "+
			"\"sequential round trips\" is the longest chain of non-overlapping calls among them, the number of "+
			"round trips the caller waits for. \"Background\" calls are the store's housekeeping writes after "+
			"it has answered (marked by dynamo.InBackground; the store is drained after each tool, so they are "+
			"counted with the tool that caused them): they cost DynamoDB capacity, not latency. Token verification "+
			"is the authorizer's (cached by API Gateway), not counted here. The rate limiter's UpdateItem (one per "+
			"call) runs together with the member record's GetItem and with the handler's reads; a write handler's "+
			"writes wait for both checks (store.WithWriteGate), so a refused call writes nothing. Every call also "+
			"makes, in the guard's "+
			"last step and in parallel with each other, Kinesis PutRecord (the audit record, delivered before the "+
			"answer) and one DynamoDB UpdateItem for the usage counter: an ADD that also puts the audit event id "+
			"into a set and is conditioned on its absence, so an SDK retry of an ADD that applied is refused. Clearing "+
			"that id from the set is the usage counter's background UpdateItem (it keeps the item small; if it "+
			"never runs, the id stays and no count changes); comment_count's guard is cleared the same way.", rtDelay),
		[]string{"tool", "outcome", "request-path calls", "sequential round trips (request path)", "background calls",
			"calls by operation", "the tool's own calls"})
	for _, tc := range tools {
		raw, err := json.Marshal(tc.args)
		if err != nil {
			return err
		}
		ev, err := toolEvent(evTemplate, tc.name, raw)
		if err != nil {
			return err
		}
		calls.take()
		resp, err := fn.Handle(ctx, ev)
		answered := time.Now()
		if err != nil {
			return fmt.Errorf("round trips: %s: %w", tc.name, err)
		}
		if err := fn.Drain(ctx); err != nil {
			return fmt.Errorf("round trips: %s: drain the store's background writes: %w", tc.name, err)
		}
		got := calls.take()
		outcome, ok := toolOutcome(resp)
		var path []awsCall
		background := 0
		byOp := map[string]int{}
		for _, c := range got {
			name := c.service + " " + c.op
			if c.background {
				background++
				name += " (background)"
			} else {
				if c.end.After(answered) {
					// Not marked background, yet nobody waited for it: the
					// classification would be wrong, so the figures would be too.
					return fmt.Errorf("round trips: %s: %s ended after the answer but is not a background write", tc.name, name)
				}
				path = append(path, c)
			}
			byOp[name]++
		}
		var ops []string
		for op, n := range byOp {
			ops = append(ops, fmt.Sprintf("%s x%d", op, n))
		}
		sort.Strings(ops)
		seq := sequential(path)
		sec.Table.Rows = append(sec.Table.Rows, []string{tc.name, outcome, fmt.Sprint(len(path)), fmt.Sprint(seq),
			fmt.Sprint(background), strings.Join(ops, ", "), tc.why})
		if tc.name != "get_issue" {
			limit, kind := 4, "write"
			if strings.HasPrefix(tc.name, "list_") || strings.HasPrefix(tc.name, "dashboard_") {
				limit, kind = 2, "read"
			}
			note := ""
			if seq > limit {
				note = "see section 5 and docs/decisions.md"
			}
			b.addGoal(fmt.Sprintf("5. %s sequential AWS round trips (%s, as deployed)", tc.name, kind), fmt.Sprintf("<= %d", limit),
				fmt.Sprint(seq), seq <= limit && ok, note)
		}
		switch tc.name {
		case "get_issue":
			// Judged on the request path: background writes cost no caller time.
			b.addGoal("5. get_issue sequential AWS round trips", "<= 2", fmt.Sprint(seq), seq <= 2 && ok,
				"request path (section 5) should be member and issue GetItem in parallel, then the audit PutRecord "+
					"in parallel with the usage counter's one UpdateItem")
		case "dashboard_usage_daily":
			q := byOp["DynamoDB Query"]
			b.addGoal("2. dashboard_usage_daily over 90 days: usage queries", "1", fmt.Sprint(q), q == 1 && ok, "see section 5")
		}
	}
	b.rep.Sections = append(b.rep.Sections, sec)
	return nil
}

// toolEvent is the API Gateway proxy event of one MCP tools/call, as the deployed
// function receives it: the golden list_issues event (authorizer context of the
// fixture's admin) with another call in its body and a request id of its own.
func toolEvent(template []byte, tool string, args json.RawMessage) (events.APIGatewayProxyRequest, error) {
	var ev events.APIGatewayProxyRequest
	if err := json.Unmarshal(template, &ev); err != nil {
		return ev, fmt.Errorf("round trips: event template: %w", err)
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": tool, "arguments": args}})
	if err != nil {
		return ev, err
	}
	ev.Body = string(body)
	ev.RequestContext.ExtendedRequestID = "bench-" + tool
	return ev, nil
}

// toolOutcome reads the audit outcome's counterpart from the function's answer:
// success, or the error's code.
func toolOutcome(resp events.APIGatewayProxyResponse) (string, bool) {
	if resp.StatusCode != 200 {
		return fmt.Sprintf("HTTP %d", resp.StatusCode), false
	}
	var m struct {
		Result struct {
			IsError           bool `json:"isError"`
			StructuredContent struct {
				Error struct {
					Code string `json:"code"`
				} `json:"error"`
			} `json:"structuredContent"`
		} `json:"result"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(resp.Body), &m); err != nil {
		return "unreadable answer", false
	}
	switch {
	case m.Error != nil:
		return "JSON-RPC error (" + m.Error.Message + ")", false
	case m.Result.IsError:
		return "error (" + m.Result.StructuredContent.Error.Code + ")", false
	}
	return "success", true
}
