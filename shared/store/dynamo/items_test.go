package dynamo

import (
	"reflect"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// TestItemsRoundTrip: every item a record is written as decodes to that record, so
// that an item's encoder and decoder name the same attributes. Each record sets
// every field, optional ones included.
func TestItemsRoundTrip(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)
	revoked := at.Add(time.Hour)
	check := func(name string, want, got any, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s decodes as\n%+v\nwant\n%+v", name, got, want)
		}
	}
	is := store.Issue{ID: "i1", Key: "AAC-1", Title: "Title", Description: "Desc", Status: "open",
		Priority: "high", Labels: []string{"a", "b"}, Assignee: &store.Assignee{Type: "agent", ID: "a1"},
		CreatedBy: "dev", CreatedAt: at, UpdatedAt: at.Add(time.Second), Version: 3, CommentCount: 2}
	got, err := decodeIssue(encodeIssue("ws", is))
	check("issue", is, got, err)
	c := store.Comment{ID: "c1", IssueID: "i1", Author: "dev", Body: "Body", CreatedAt: at}
	gotC, err := decodeComment(encodeComment("ws", c, "n"))
	check("comment", c, gotC, err)
	r := store.AutopilotRun{ID: "r1", IssueID: "i1", IssueKey: "AAC-1", Status: "failed", Instructions: "go",
		RequestedBy: "dev", Attempts: 2, Error: "boom", CreatedAt: at, UpdatedAt: at.Add(time.Second)}
	gotR, err := decodeRun(encodeRun("ws", r, "n"))
	check("run", r, gotR, err)
	tok := auth.TokenRecord{Hash: "h1", TokenID: "tok_1", Name: "laptop", WorkspaceID: "ws", UserID: "dev",
		Scopes: []string{"issues:read"}, CreatedAt: at, ExpiresAt: at.Add(24 * time.Hour), RevokedAt: &revoked,
		ClientID: "client", GrantID: "grant"}
	gotT, err := decodeToken(encodeToken(tok, "n"))
	check("token", tok, gotT, err)
}
