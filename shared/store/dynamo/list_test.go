package dynamo_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/store"
)

// TestFilteredListFillsPages: matching issues sit behind a long run of non-matching
// ones, so a page needs several Query calls; every page but the last must still be full
// and the pages together must list each match once, newest first.
func TestFilteredListFillsPages(t *testing.T) {
	e := newEnv(t, envConfig{})
	ctx := t.Context()
	ws := "ws_fill"
	if _, err := e.store.CreateWorkspace(ctx, store.Workspace{ID: ws, Key: "FIL", Name: "fill"}); err != nil {
		t.Fatal(err)
	}
	base := time.Now().UTC().Truncate(time.Millisecond).Add(-time.Hour)
	const total, matching = 130, 6
	var want []string // ids of the matches, newest first
	for i := range total {
		status := "open"
		if i < matching { // the oldest issues match: the newest-first scan reaches them last
			status = "done"
		}
		is, err := e.store.CreateIssue(ctx, ws, store.NewIssue{
			Title: fmt.Sprint("issue ", i), Status: status, Priority: "low", CreatedBy: "u",
			CreatedAt: base.Add(time.Duration(i) * time.Second),
		})
		if err != nil {
			t.Fatal(err)
		}
		if status == "done" {
			want = append(want, is.ID)
		}
	}
	slices.Reverse(want)

	tests := []struct {
		name   string
		filter store.IssueFilter
		pages  []int // issues per page
	}{
		{"status", store.IssueFilter{Status: "done", PageRequest: store.PageRequest{Limit: 4}}, []int{4, 2}},
		{"status and text", store.IssueFilter{Status: "done", Query: "ISSUE", PageRequest: store.PageRequest{Limit: 5}}, []int{5, 1}},
		{"one page", store.IssueFilter{Status: "done", PageRequest: store.PageRequest{Limit: 10}}, []int{6}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			var sizes []int
			f := tc.filter
			for range 10 {
				e.calls.Reset()
				page, err := e.store.ListIssues(ctx, ws, f)
				if err != nil {
					t.Fatal(err)
				}
				if len(sizes) == 0 && e.calls.Calls()["Query"] < 2 {
					t.Errorf("first page took %d Query calls; the fixture should need several", e.calls.Calls()["Query"])
				}
				sizes = append(sizes, len(page.Issues))
				for _, is := range page.Issues {
					got = append(got, is.ID)
				}
				if page.NextCursor == "" {
					break
				}
				f.Cursor = page.NextCursor
			}
			if !slices.Equal(sizes, tc.pages) {
				t.Errorf("page sizes %v, want %v", sizes, tc.pages)
			}
			if !slices.Equal(got, want) {
				t.Errorf("ids %v, want %v", got, want)
			}
		})
	}
}
