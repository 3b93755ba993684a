package load

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/audit/file"
	"github.com/aacworkflow/aacmcp/shared/catalog"
	"github.com/aacworkflow/aacmcp/shared/store"
	"github.com/aacworkflow/aacmcp/shared/store/sqlite"
)

// strictness of the checks: after a clean run every call was answered and every
// count is exact; after a crash only answered calls are certain.
type strictness int

const (
	exact strictness = iota
	afterCrash
)

// facts are the figures a run produced, for the log and docs/security.md.
type facts struct {
	calls, answered, unanswered int
	byOutcome                   map[string]int
	records                     int
	issues, comments            int
	hotUpdates, hotConflicts    int64
	usageCalls                  int64
}

func (f facts) String() string {
	return fmt.Sprintf("calls %d (answered %d, unanswered %d), outcomes %v, audit records %d, issues %d, comments %d, hot updates %d (conflicts %d), usage calls %d",
		f.calls, f.answered, f.unanswered, f.byOutcome, f.records, f.issues, f.comments, f.hotUpdates, f.hotConflicts, f.usageCalls)
}

// checkCalls fails on every answered call whose code is not one it allowed.
func checkCalls(t *testing.T, calls []call, s strictness) facts {
	t.Helper()
	f := facts{calls: len(calls), byOutcome: map[string]int{}}
	var bad []string
	for _, c := range calls {
		if !c.Responded {
			f.unanswered++
			if s == exact {
				bad = append(bad, fmt.Sprintf("%s %s %s: no answer: %s", c.ReqID, c.Transport, c.Tool, c.Err))
			}
			continue
		}
		f.answered++
		code := c.Code
		if code == "" {
			code = "success"
		}
		f.byOutcome[code]++
		if !c.expected() {
			bad = append(bad, fmt.Sprintf("%s %s %s: got %q (HTTP %d), want one of %q", c.ReqID, c.Transport, c.Tool, c.Code, c.Status, c.Want))
		}
	}
	if len(bad) > 0 {
		t.Errorf("%d unexpected results; first ones:\n%s", len(bad), strings.Join(bad[:min(len(bad), 20)], "\n"))
	}
	return f
}

// readAudit reads every record under dataDir and fails on any damaged line.
func readAudit(t *testing.T, dataDir string) []audit.Record {
	t.Helper()
	var recs []audit.Record
	var damaged []string
	err := file.Scan(dataDir, func(e file.Entry) error {
		if e.Err != nil {
			damaged = append(damaged, e.Err.Error())
			return nil
		}
		recs = append(recs, e.Record)
		return nil
	})
	if err != nil {
		t.Fatalf("scan audit files: %v", err)
	}
	if len(damaged) > 0 {
		t.Errorf("%d damaged audit lines (half-written records must never be visible): %v", len(damaged), damaged[:min(len(damaged), 5)])
	}
	for i, r := range recs {
		if err := r.Validate(); err != nil {
			t.Errorf("audit record %d (%s) is invalid: %v", i, r.EventID, err)
		}
	}
	return recs
}

// checkAudit matches records to calls one for one by request id: an answered call
// has exactly one record with its tool, transport and reason; an unanswered call
// (crash) at most one; and no record belongs to no call.
func checkAudit(t *testing.T, calls []call, recs []audit.Record, s strictness) {
	t.Helper()
	byReq := map[string][]audit.Record{}
	for _, r := range recs {
		byReq[r.RequestID] = append(byReq[r.RequestID], r)
	}
	var bad []string
	seen := map[string]bool{}
	for _, c := range calls {
		seen[c.ReqID] = true
		rs := byReq[c.ReqID]
		switch {
		case len(rs) > 1:
			bad = append(bad, fmt.Sprintf("%s: %d audit records", c.ReqID, len(rs)))
		case len(rs) == 0 && c.Responded:
			bad = append(bad, fmt.Sprintf("%s %s %s: answered %q but has no audit record", c.ReqID, c.Transport, c.Tool, c.Code))
		case len(rs) == 1:
			r := rs[0]
			if r.Tool != c.Tool || r.Transport != c.Transport {
				bad = append(bad, fmt.Sprintf("%s: record says %s over %s, call was %s over %s", c.ReqID, r.Tool, r.Transport, c.Tool, c.Transport))
			}
			if c.Responded && !strings.HasPrefix(c.Code, "unexpected:") && r.Reason != c.Code {
				bad = append(bad, fmt.Sprintf("%s %s: client saw %q, record says %q", c.ReqID, c.Tool, c.Code, r.Reason))
			}
			if r.Outcome != string(apperr.Code(r.Reason).Outcome()) {
				bad = append(bad, fmt.Sprintf("%s: outcome %q does not match reason %q", c.ReqID, r.Outcome, r.Reason))
			}
		}
	}
	for id, rs := range byReq {
		if !seen[id] {
			bad = append(bad, fmt.Sprintf("%d audit record(s) with request id %q that no call made", len(rs), id))
		}
	}
	if s == exact && len(recs) != len(calls) {
		bad = append(bad, fmt.Sprintf("%d audit records for %d calls", len(recs), len(calls)))
	}
	if len(bad) > 0 {
		t.Errorf("audit does not match the calls (%d problems); first ones:\n%s", len(bad), strings.Join(bad[:min(len(bad), 20)], "\n"))
	}
}

// checkStore verifies the data: every issue's comment_count equals its comments,
// each client's issues hold what the client saw, and no update on a hot issue was
// lost.
func checkStore(t *testing.T, st *sqlite.Store, wl *workload, s strictness, f *facts) {
	t.Helper()
	ctx := context.Background()
	for _, tn := range wl.w.Tenants {
		issues := allIssues(t, st, tn.ID)
		f.issues += len(issues)
		for _, is := range issues {
			cs := allComments(t, st, tn.ID, is.ID)
			f.comments += len(cs)
			if int64(len(cs)) != is.CommentCount {
				t.Errorf("%s %s: comment_count %d, but %d comments exist", tn.ID, is.Key, is.CommentCount, len(cs))
			}
		}
		for _, h := range tn.Hot {
			hs := wl.hot[h.ID]
			got, err := st.GetIssue(ctx, tn.ID, h.ID)
			if err != nil {
				t.Fatalf("hot issue %s: %v", h.Key, err)
			}
			f.hotUpdates += hs.Successes
			f.hotConflicts += hs.Conflicts
			applied := got.Version - h.Version
			if applied < hs.Successes || applied > hs.Successes+hs.Unanswered {
				t.Errorf("hot issue %s: %d updates applied (version %d -> %d), clients saw %d succeed and %d unanswered: an update was lost or applied twice",
					h.Key, applied, h.Version, got.Version, hs.Successes, hs.Unanswered)
			}
			if s == exact && got.Title != hs.LastTitle {
				t.Errorf("hot issue %s: title %q, the last successful update set %q", h.Key, got.Title, hs.LastTitle)
			}
		}
	}
	for id, own := range wl.own {
		if own.Uncertain {
			continue
		}
		got, err := st.GetIssue(ctx, own.Tenant, id)
		if own.Deleted {
			if !errors.Is(err, store.ErrNotFound) {
				t.Errorf("issue %s was deleted (answered) but the store has it (err %v)", own.Key, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("issue %s was created (answered) but the store lacks it: %v", own.Key, err)
			continue
		}
		cs := allComments(t, st, own.Tenant, id)
		ids := make([]string, 0, len(cs))
		for _, c := range cs {
			ids = append(ids, c.ID)
		}
		want := slices.Clone(own.Comments)
		slices.Sort(ids)
		slices.Sort(want)
		if !slices.Equal(ids, want) {
			t.Errorf("issue %s: store has comments %v, the answers said %v", got.Key, ids, want)
		}
	}
}

func allIssues(t *testing.T, st *sqlite.Store, ws string) []store.Issue {
	t.Helper()
	var out []store.Issue
	cursor := ""
	for {
		p, err := st.ListIssues(context.Background(), ws, store.IssueFilter{PageRequest: store.PageRequest{Limit: 100, Cursor: cursor}})
		if err != nil {
			t.Fatalf("list issues of %s: %v", ws, err)
		}
		out = append(out, p.Issues...)
		if p.NextCursor == "" {
			return out
		}
		cursor = p.NextCursor
	}
}

func allComments(t *testing.T, st *sqlite.Store, ws, issue string) []store.Comment {
	t.Helper()
	var out []store.Comment
	cursor := ""
	for {
		p, err := st.ListComments(context.Background(), ws, issue, store.PageRequest{Limit: 100, Cursor: cursor})
		if err != nil {
			t.Fatalf("list comments of %s/%s: %v", ws, issue, err)
		}
		out = append(out, p.Comments...)
		if p.NextCursor == "" {
			return out
		}
		cursor = p.NextCursor
	}
}

// checkUsage compares the usage counters with the audit records: per workspace, day
// and tool, calls, denied and errors equal the records, after a crash too.
func checkUsage(t *testing.T, st *sqlite.Store, wl *workload, recs []audit.Record, f *facts) {
	t.Helper()
	cat := catalog.New(catalog.Deps{})
	type key struct{ ws, date, tool string }
	type counts struct{ calls, denied, errors int64 }
	want := map[key]*counts{}
	days := map[string]bool{}
	for _, r := range recs {
		if r.WorkspaceID == "" {
			continue // rejected tokens name no workspace and are not counted
		}
		if _, ok := cat.Lookup(r.Tool); !ok {
			continue // unknown tools are audited, not counted
		}
		ts, err := time.Parse(time.RFC3339Nano, r.Timestamp)
		if err != nil {
			t.Fatalf("record %s: timestamp %q: %v", r.EventID, r.Timestamp, err)
		}
		k := key{r.WorkspaceID, ts.UTC().Format(time.DateOnly), r.Tool}
		days[k.date] = true
		c := want[k]
		if c == nil {
			c = &counts{}
			want[k] = c
		}
		c.calls++
		switch r.Outcome {
		case "denied":
			c.denied++
		case "error":
			c.errors++
		}
	}
	if len(days) == 0 {
		t.Fatal("no audit records to compare the usage counters with")
	}
	ds := make([]string, 0, len(days))
	for d := range days {
		ds = append(ds, d)
	}
	slices.Sort(ds)
	got := map[key]counts{}
	for _, tn := range wl.w.Tenants {
		rows, err := st.ListUsage(context.Background(), tn.ID, ds[0], ds[len(ds)-1])
		if err != nil {
			t.Fatalf("usage of %s: %v", tn.ID, err)
		}
		for _, r := range rows {
			got[key{tn.ID, r.Date, r.Tool}] = counts{r.Calls, r.Denied, r.Errors}
			f.usageCalls += r.Calls
		}
	}
	for k, w := range want {
		g := got[k]
		// Exact, after a crash too. On SQLite the guard writes the record and only
		// then queues the increment, and the restarted server rebuilt from the audit
		// records every increment the dead one had not committed: no count may be
		// missing, and none may lack its record.
		if g != *w {
			t.Errorf("usage %v: counters calls=%d denied=%d errors=%d, audit records calls=%d denied=%d errors=%d",
				k, g.calls, g.denied, g.errors, w.calls, w.denied, w.errors)
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok && g.calls > 0 {
			t.Errorf("usage %v counts %d calls that have no audit record", k, g.calls)
		}
	}
}

// checkDatabaseFile runs SQLite's own consistency checks on the file.
func checkDatabaseFile(t *testing.T, dataDir string) {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(dataDir, "aacmcp.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var res string
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&res); err != nil || res != "ok" {
		t.Errorf("integrity_check: %q, %v", res, err)
	}
	rows, err := db.Query("PRAGMA foreign_key_check")
	if err != nil {
		t.Fatalf("foreign_key_check: %v", err)
	}
	defer rows.Close()
	if rows.Next() {
		t.Errorf("foreign_key_check reports violations")
	}
}
