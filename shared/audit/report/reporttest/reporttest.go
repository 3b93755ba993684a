// Package reporttest is the fixture workload of the audit report's tests: known tool
// calls, denials, destructive calls under every confirmation kind (and one a later
// version may write), and authorization events, with the numbers each report
// section must show for them, counted by hand.
package reporttest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/audit"
	at "github.com/aacworkflow/aacmcp/shared/audit/audittest"
	"github.com/aacworkflow/aacmcp/shared/audit/file"
)

// The period of the fixture: one UTC day.
var (
	From = time.Date(2025, 6, 22, 0, 0, 0, 0, time.UTC)
	To   = From.Add(24 * time.Hour)
)

// Clients of the fixture.
const (
	Claude  = "https://claude.ai/oauth/mcp-oauth-client-metadata"
	ChatGPT = "c_01JYC3ZQ2M8V6XN4T5R7W9K0BD"
)

// FutureConfirmation is a confirmation kind no version writes yet (the sink refuses
// it): a later version's record must still be counted under its own kind, as
// "approved" was before this version knew it.
const FutureConfirmation = "countersigned"

// Expected numbers for the whole fixture (all workspaces).
const (
	ToolCalls     = 26 // in the period
	Denied        = 7  // not counting the 2 questions put to a person
	Asked         = 2
	Errors        = 1
	Successes     = 16
	Destructive   = 9
	Authorization = 9
	// Of workspace "acme" only: no refused tokens (no workspace), no workspace beta.
	AcmeToolCalls = 20
)

// Row is an expected row of a section's table, as text.
type Row []string

// Expected rows per section ID, in the query's order, as the page shows them.
var Expected = map[string][]Row{
	"calls_per_hour": {
		{"2025-06-22 09:00", "success", "5"},
		{"2025-06-22 10:00", "denied", "2"},
		{"2025-06-22 10:00", "success", "3"},
		{"2025-06-22 11:00", "denied", "2"},
		{"2025-06-22 11:00", "error", "1"},
		{"2025-06-22 12:00", "success", "2"},
		{"2025-06-22 13:00", "asked", "2"},
		{"2025-06-22 13:00", "denied", "1"},
		{"2025-06-22 13:00", "success", "1"},
		{"2025-06-22 14:00", "denied", "1"},
		{"2025-06-22 14:00", "success", "1"},
		{"2025-06-22 15:00", "denied", "1"},
		{"2025-06-22 16:00", "success", "4"},
	},
	"denials": {
		{"insufficient_scope", "tC", ChatGPT, "2"},
		{"invalid_token", "", "", "2"},
		{"confirmation_declined", "tA", Claude, "1"},
		{"destructive_flag_missing", "tP", "", "1"},
		{"human_confirmation_required", "tC", ChatGPT, "1"},
	},
	// user_id, client_id, confirmation, calls, succeeded, asked, declined, refused, failed
	"destructive": {
		{"alice", Claude, "elicited", "4", "1", "2", "1", "0", "0"},
		{"alice", Claude, "flag", "2", "2", "0", "0", "0", "0"},
		{"bob", "", "", "1", "0", "0", "0", "1", "0"},
		{"carol", ChatGPT, "flag", "1", "0", "0", "0", "1", "0"},
		{"dave", Claude, FutureConfirmation, "1", "1", "0", "0", "0", "0"},
	},
	"authorization": {
		{"consent_granted", Claude, "success", "2"},
		{"token_issued", Claude, "success", "2"},
		{"consent_denied", ChatGPT, "denied", "1"},
		{"grant_revoked", Claude, "success", "1"},
		{"refresh_reuse_detected", ChatGPT, "denied", "1"},
		{"token_issued", ChatGPT, "success", "1"},
		{"token_refreshed", Claude, "success", "1"},
	},
	// tool, calls, denied, failed, p95_ms, max_ms
	"top_tools": {
		{"get_issue", "12", "2", "1", "50", "50"},
		{"delete_issue", "8", "4", "0", "70", "70"},
		{"list_issues", "3", "0", "0", "900", "900"},
		{"create_issue", "2", "2", "0", "5", "5"},
		{"delete_comment", "1", "1", "0", "4", "4"},
	},
}

// SlowestFirst is the first row's tool and duration, and SlowestRows the row count.
const (
	SlowestTool = "list_issues"
	SlowestMS   = "900"
	SlowestRows = 20
)

func at0(h, m int) time.Time {
	return From.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute)
}

func who(user, token, client string) func(*audit.Record) {
	return func(r *audit.Record) {
		r.WorkspaceID, r.UserID, r.TokenID, r.ClientID = "acme", user, token, client
	}
}

func ms(d int64) func(*audit.Record) { return func(r *audit.Record) { r.DurationMS = d } }

// Records returns the fixture's records, except the one of FutureConfirmation
// (Future), in time order. One record appears twice (delivered twice).
func Records() []audit.Record {
	var out []audit.Record
	add := func(n int, ts time.Time, durs []int64, mods ...func(*audit.Record)) {
		for i := range n {
			d := durs[min(i, len(durs)-1)]
			out = append(out, at.Record(ts.Add(time.Duration(i)*time.Millisecond), append(mods, ms(d))...))
		}
	}
	// Outside the period, on both sides.
	add(2, From.Add(-time.Second), []int64{3}, at.Tool("get_issue"), who("alice", "tA", Claude))
	add(1, To, []int64{3}, at.Tool("get_issue"), who("alice", "tA", Claude))

	// Authorization events.
	auth := func(n int, action, client string, mods ...func(*audit.Record)) {
		add(n, at0(8, 0), []int64{2}, append([]func(*audit.Record){at.Authorization(action), who("alice", "", client)}, mods...)...)
	}
	auth(2, audit.ActionConsentGranted, Claude)
	auth(2, audit.ActionTokenIssued, Claude)
	auth(1, audit.ActionTokenIssued, ChatGPT)
	auth(1, audit.ActionTokenRefreshed, Claude)
	auth(1, audit.ActionRefreshReuseDetected, ChatGPT, at.Denied("invalid_token"))
	auth(1, audit.ActionGrantRevoked, Claude)
	auth(1, audit.ActionConsentDenied, ChatGPT, at.Denied("permission_denied"))

	add(5, at0(9, 5), []int64{10, 20, 30, 40, 50}, at.Tool("get_issue"), who("alice", "tA", Claude))
	out = append(out, out[len(out)-1]) // delivered twice: counted once
	add(3, at0(10, 10), []int64{100, 200, 900}, at.Tool("list_issues"), who("bob", "tP", ""))
	add(2, at0(10, 20), []int64{5}, at.Tool("create_issue"), at.Denied("insufficient_scope"), who("carol", "tC", ChatGPT))
	add(1, at0(11, 0), []int64{15}, at.Tool("get_issue"), at.Failed("not_found"), who("alice", "tA", Claude))
	add(2, at0(11, 30), []int64{1}, at.Tool("get_issue"), at.Denied("invalid_token"), at.Who("", ""), func(r *audit.Record) { r.UserID = "" })

	flag, elicited := at.Confirmation(audit.ConfirmationFlag), at.Confirmation(audit.ConfirmationElicited)
	del, yes := at.Tool("delete_issue"), at.Confirmed(true)
	add(2, at0(12, 0), []int64{60}, del, yes, flag, who("alice", "tA", Claude))
	add(2, at0(13, 0), []int64{8}, del, yes, elicited, at.Denied("human_confirmation_required"), who("alice", "tA", Claude))
	add(1, at0(13, 1), []int64{8}, del, yes, elicited, who("alice", "tA", Claude))
	add(1, at0(13, 2), []int64{8}, del, yes, elicited, at.Denied("confirmation_declined"), who("alice", "tA", Claude))
	add(1, at0(14, 0), []int64{4}, at.Tool("delete_comment"), at.Denied("destructive_flag_missing"), who("bob", "tP", ""))
	add(1, at0(15, 0), []int64{6}, del, yes, flag, at.Denied("human_confirmation_required"), who("carol", "tC", ChatGPT))
	add(4, at0(16, 0), []int64{25}, at.Tool("get_issue"), at.Who("beta", "tE"), func(r *audit.Record) { r.UserID = "erin" })
	return out
}

// Future is the record of a confirmation kind a later version writes.
func Future() audit.Record {
	return at.Record(at0(14, 30), at.Tool("delete_issue"), at.Confirmed(true), at.Confirmation(FutureConfirmation),
		who("dave", "tD", Claude), ms(70))
}

// Write files the fixture under data/audit: Records through the file sink, as the
// server writes them, and Future as a JSON line of its own file in its hour, as a
// later writer would leave it.
func Write(t testing.TB, data string) {
	t.Helper()
	s, err := file.New(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range Records() {
		if err := s.Write(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	WriteFuture(t, data)
}

// WriteFuture files Future as a JSON line of its own file in its hour, as a later
// writer would leave it.
func WriteFuture(t testing.TB, data string) {
	t.Helper()
	f := Future()
	dir := filepath.Join(data, file.Subdir, "dt=2025-06-22", "hour=14")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "later-writer.json"), audit.AppendLine(nil, f), 0o600); err != nil {
		t.Fatal(err)
	}
}
