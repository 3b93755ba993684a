package guard_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/autopilot"
	"github.com/aacworkflow/aacmcp/shared/catalog"
	"github.com/aacworkflow/aacmcp/shared/guard"
	gt "github.com/aacworkflow/aacmcp/shared/guard/guardtest"
	"github.com/aacworkflow/aacmcp/shared/store"
	"github.com/aacworkflow/aacmcp/shared/store/dynamo"
	"github.com/aacworkflow/aacmcp/shared/store/sqlite"
	"github.com/aacworkflow/aacmcp/test/emulator"
)

// TestBothOrdersRecordTheSame: the pipeline runs its one table of steps one after
// the other on SQLite and overlaps the limiter, the member check and the handler on
// DynamoDB (dynalite, through the real SDK). The same table of calls (every tool, by
// every kind of caller, one of them over its rate limit, as generated, without
// confirm, with an unknown argument) through both gives the same answer and the same
// record, field by field, save what names the store's own items (ids, times,
// digests).
func TestBothOrdersRecordTheSame(t *testing.T) {
	ctx := context.Background()
	now := time.Now().UTC()
	outbox, err := autopilot.NewOutbox(filepath.Join(t.TempDir(), "outbox.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = outbox.Close() })
	cat := catalog.New(catalog.Deps{Dispatcher: outbox})

	sq, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "orders.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sq.Close() })
	client := dynamodb.NewFromConfig(emulator.StartT(t, emulator.Dynalite).AWSConfig())
	var ttl *dynamo.TTLWarning
	if err := dynamo.CreateTables(ctx, client, "orders-main", "orders-tokens"); err != nil && !errors.As(err, &ttl) {
		t.Fatal(err)
	}
	dy := dynamo.New(client, "orders-main", "orders-tokens")

	type side struct {
		name    string
		st      store.Queries
		g       *guard.Guard
		sink    *gt.MemorySink
		issue   store.Issue
		comment store.Comment
	}
	var sides []*side
	for _, s := range []struct {
		name string
		st   store.Queries
	}{{"sqlite (in sequence)", sq}, {"dynamodb (overlapped)", dy}} {
		sd := &side{name: s.name, st: s.st, sink: &gt.MemorySink{}}
		sd.issue, sd.comment, _ = gt.Seed(t, s.st, now)
		sd.g = guard.New(guard.Config{Catalog: cat, Store: s.st, Audit: sd.sink, Limiter: limitUser(gt.Member2)})
		sides = append(sides, sd)
	}

	callers := map[string]*auth.Principal{
		"admin":          gt.Principal(gt.WS, gt.Admin, auth.AllScopes...),
		"author":         gt.Principal(gt.WS, gt.Member, auth.AllScopes...),
		"other member":   gt.Principal(gt.WS, gt.Member2, auth.AllScopes...),
		"viewer":         gt.Principal(gt.WS, gt.Viewer, auth.AllScopes...),
		"non-member":     gt.Principal(gt.WS, gt.Outsider, auth.AllScopes...),
		"removed member": gt.Principal(gt.WS, gt.Removed, auth.AllScopes...),
		"issues:read":    gt.Principal(gt.WS, gt.Admin, "issues:read"),
	}
	variants := map[string]func(map[string]any){
		"as generated":       func(map[string]any) {},
		"without confirm":    func(a map[string]any) { delete(a, "confirm") },
		"unknown argument":   func(a map[string]any) { a["zzz"] = 1 },
		"argument of a type": func(a map[string]any) { a["limit"] = "ten" },
	}
	// what is compared: everything the record decides, not what names an item.
	type decided struct {
		Tool, Outcome, Reason, Confirmation, WorkspaceID, UserID, TokenID, Transport, EventType string
		ReadOnly, Destructive, ConfirmPresent, IdempotentReplay, HasResource                    bool
		ScopesRequired, ScopesProvided                                                          []string
	}
	n, reasons := 0, map[string]bool{}
	for _, tool := range cat.Tools() {
		for cname, p := range callers {
			for vname, vary := range variants {
				var got []decided
				for _, sd := range sides {
					var a map[string]any
					if err := json.Unmarshal(gt.ArgsOn(t, cat, sd.st, sd.issue, sd.comment, tool.Name), &a); err != nil {
						t.Fatal(err)
					}
					vary(a)
					b, _ := json.Marshal(a)
					sd.sink.Reset()
					res := sd.g.Call(ctx, guard.Request{Principal: p, Tool: tool.Name, Args: b, Transport: audit.TransportMCP})
					recs := sd.sink.Records()
					if len(recs) != 1 {
						t.Fatalf("%s: %s by %s, %s: %d records", sd.name, tool.Name, cname, vname, len(recs))
					}
					r := recs[0]
					if (res.Err == nil) != (r.Outcome == audit.OutcomeSuccess) {
						t.Errorf("%s: %s by %s, %s: answer %v, record %s", sd.name, tool.Name, cname, vname, res.Err, r.Outcome)
					}
					got = append(got, decided{r.Tool, r.Outcome, r.Reason, r.Confirmation, r.WorkspaceID, r.UserID, r.TokenID,
						r.Transport, r.EventType, r.ReadOnly, r.Destructive, r.ConfirmPresent, r.IdempotentReplay, r.ResourceID != "",
						r.ScopesRequired, r.ScopesProvided})
				}
				n++
				reasons[got[0].Reason] = true
				if !slices.EqualFunc(got[:1], got[1:], func(x, y decided) bool {
					return x.Tool == y.Tool && x.Outcome == y.Outcome && x.Reason == y.Reason && x.Confirmation == y.Confirmation &&
						x.WorkspaceID == y.WorkspaceID && x.UserID == y.UserID && x.TokenID == y.TokenID && x.Transport == y.Transport &&
						x.EventType == y.EventType && x.ReadOnly == y.ReadOnly && x.Destructive == y.Destructive &&
						x.ConfirmPresent == y.ConfirmPresent && x.IdempotentReplay == y.IdempotentReplay && x.HasResource == y.HasResource &&
						slices.Equal(x.ScopesRequired, y.ScopesRequired) && slices.Equal(x.ScopesProvided, y.ScopesProvided)
				}) {
					t.Errorf("%s by %s, %s:\n %s: %+v\n %s: %+v", tool.Name, cname, vname, sides[0].name, got[0], sides[1].name, got[1])
				}
			}
		}
	}
	if n < len(cat.Tools())*len(callers)*len(variants) {
		t.Fatalf("%d calls compared", n)
	}
	// The table reaches every step that can refuse, and the handler.
	for _, want := range []string{"", "insufficient_scope", "destructive_flag_missing", "rate_limited", "invalid_arguments", "permission_denied"} {
		if !reasons[want] {
			t.Errorf("no call of the table ended with reason %q (seen %v)", want, reasons)
		}
	}
}

// limitUser is a rate limiter that refuses every call of one user and no other's.
type limitUser string

func (u limitUser) Allow(_ context.Context, p auth.Principal, _ string, _ time.Time) (time.Duration, error) {
	if p.UserID == string(u) {
		return time.Minute, nil
	}
	return 0, nil
}
