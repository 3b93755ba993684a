package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
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

	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/autopilot"
	"github.com/aacworkflow/aacmcp/shared/catalog"
	"github.com/aacworkflow/aacmcp/shared/guard"
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
}

func (l *callLog) install(cfg *aws.Config, service string) {
	cfg.APIOptions = append(cfg.APIOptions, func(st *middleware.Stack) error {
		return st.Initialize.Add(middleware.InitializeMiddlewareFunc("bench.CallLog",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				c := awsCall{service: service, op: middleware.GetOperationName(ctx), start: time.Now()}
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
// AWS calls each makes, and how many of them are sequential.
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
	st := dynamo.New(dynamodb.NewFromConfig(dcfg), env.Table, env.TokensTable, dynamo.WithLogger(log))
	sink := lambdaenv.AuditSink(kinesis.NewFromConfig(kcfg), lambdatest.Stream, io.Discard, "mcp", log)
	ob, err := autopilot.NewOutbox(filepath.Join(b.work, "rt-outbox.jsonl"))
	if err != nil {
		return err
	}
	defer ob.Close()
	cat := catalog.New(catalog.Deps{Dispatcher: ob})
	g := guard.New(guard.Config{Catalog: cat, Store: st, Audit: sink, Logger: log})
	p := &auth.Principal{WorkspaceID: lambdatest.Workspace, UserID: lambdatest.AdminUser, TokenID: lambdatest.TokenAdmin, Scopes: auth.AllScopes}

	today := time.Now().UTC()
	tools := []struct {
		name string
		args map[string]any
		why  string
	}{
		{"get_issue", map[string]any{"issue_id": lambdatest.IssueMain}, "GetItem member record and GetItem issue, in parallel (guard.invokeRead)"},
		{"list_issues", map[string]any{"limit": 25}, "GetItem member record and one GSI1 Query (one page), in parallel"},
		{"list_comments", map[string]any{"issue_id": lambdatest.IssueMain}, "reads only: member record in parallel with the issue read and the comments Query"},
		{"dashboard_usage_daily", map[string]any{"from": today.AddDate(0, 0, -89).Format(time.DateOnly), "to": today.Format(time.DateOnly)},
			"reads only: member record in parallel with one Query over the usage partition for the whole 90 days (not one per day)"},
		{"create_issue", map[string]any{"title": "Round-trip count", "labels": []string{"bench"}}, "writes: UpdateItem workspace counter (allocates the key number), PutItem key item (conditional: a key is never given twice), PutItem issue (last, so nothing points at a missing issue)"},
		{"update_issue", map[string]any{"issue_id": lambdatest.IssueMain, "status": "in_progress"}, "GetItem issue, then UpdateItem conditioned on the version read (optimistic lock; a per-call nonce lets an SDK retry succeed once)"},
		{"comment_issue", map[string]any{"issue_id": lambdatest.IssueMain, "body": "counted"}, "writes: PutItem comment lookup, PutItem comment (both nonce-conditioned against id reuse), UpdateItem comment_count (guarded by the op id) and its guard cleared"},
		{"assign_issue_to_agent", map[string]any{"issue_id": lambdatest.IssueMain, "agent_id": lambdatest.Agent}, "GetItem agent (must exist) and issue, then the version-conditioned UpdateItem of the issue"},
		{"trigger_autopilot", map[string]any{"issue_id": lambdatest.IssueMain}, "writes: PutItem run (queued) before dispatch, UpdateItem run with the dispatch outcome"},
		{"delete_comment", map[string]any{"comment_id": lambdatest.CommentDelete, "confirm": true}, "writes: PutItem tombstone first (the only caller that wins it goes on), UpdateItem comment_count -1 (guarded) and guard cleared, BatchWriteItem comment + lookup"},
		{"delete_issue", map[string]any{"issue_id": lambdatest.IssueDelete, "confirm": true}, "writes: PutItem tombstones first, Query of its comments, BatchWriteItem comments/lookups/key item, DeleteItem issue last (a half-done delete is finished by the next)"},
	}
	sec := reportSection("5. AWS round trips per tool call",
		fmt.Sprintf("Every tool called once through the guard with the DynamoDB store and the Kinesis audit sink "+
			"(as functions/mcp wires them) against dynalite and kinesalite. An SDK middleware (Initialize step) "+
			"logs each operation and adds %s to it, so that calls made one after another never overlap and calls "+
			"made in parallel always do; \"sequential\" is the longest chain of non-overlapping calls, the number "+
			"of round trips the caller waits for. Token verification is the authorizer's (cached by API Gateway), "+
			"not counted here. Every call also makes 4 calls in the guard's last step, all of them in parallel with "+
			"the first: Kinesis PutRecord (the audit record, delivered before the answer) and the usage counter, which "+
			"on DynamoDB is 3 sequential calls: PutItem of an event marker (a retried UpdateUsage counts once), "+
			"UpdateItem ADD guarded by the event id in a set (an SDK retry of an ADD that applied is refused), and "+
			"UpdateItem DELETE of that guard entry (keeps the item small).", rtDelay),
		[]string{"tool", "outcome", "AWS calls", "sequential round trips", "calls by operation", "the tool's own calls"})
	for _, tc := range tools {
		raw, err := json.Marshal(tc.args)
		if err != nil {
			return err
		}
		calls.take()
		res := g.Call(ctx, guard.Request{Principal: p, Tool: tc.name, Args: raw, Transport: "mcp", RequestID: "bench-" + tc.name})
		got := calls.take()
		outcome := res.Record.Outcome
		if res.Err != nil {
			outcome += " (" + string(res.Err.Code) + ")"
		}
		byOp := map[string]int{}
		for _, c := range got {
			byOp[c.service+" "+c.op]++
		}
		var ops []string
		for op, n := range byOp {
			ops = append(ops, fmt.Sprintf("%s x%d", op, n))
		}
		sort.Strings(ops)
		seq := sequential(got)
		sec.Table.Rows = append(sec.Table.Rows, []string{tc.name, outcome, fmt.Sprint(len(got)), fmt.Sprint(seq), strings.Join(ops, ", "), tc.why})
		switch tc.name {
		case "get_issue":
			b.addGoal("5. get_issue sequential AWS round trips", "<= 2", fmt.Sprint(seq), seq <= 2 && res.Err == nil,
				"reads now parallel (1 round trip); the usage counter takes 3 sequential calls (section 5). Plan: one "+
					"TransactWriteItems (conditional event marker + ADD, ClientRequestToken = event id, idempotent for SDK "+
					"retries) = 1 round trip; dynalite lacks TransactWriteItems, so its tests need DynamoDB Local")
		case "dashboard_usage_daily":
			q := byOp["DynamoDB Query"]
			b.addGoal("2. dashboard_usage_daily over 90 days: usage queries", "1", fmt.Sprint(q), q == 1 && res.Err == nil, "see section 5")
		}
	}
	b.rep.Sections = append(b.rep.Sections, sec)
	return nil
}
