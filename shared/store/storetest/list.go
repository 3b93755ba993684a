package storetest

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/store"
)

func testListIssuesFilters(t *testing.T, b Backend) {
	ctx, q := t.Context(), b.Queries
	w := newWorkspace(t, q, "AAC")
	at := baseTime()
	mk := func(title, desc, status string, labels []string, minutes int) store.Issue {
		return newIssue(t, q, w.ID, title, at.Add(time.Duration(minutes)*time.Minute), func(n *store.NewIssue) {
			n.Description, n.Status, n.Labels = desc, status, labels
		})
	}
	i1 := mk("Login bug", "Users cannot sign in", "open", []string{"bug", "auth"}, 1)
	i2 := mk("Dark mode", "Add a DARK theme", "in_progress", []string{"feature", "ui"}, 2)
	i3 := mk("Crash on save", "NullPointer in the ÄRGER module", "open", []string{"bug"}, 3)
	i4 := mk("Docs", "write docs about login", "done", nil, 4)
	i5 := mk("Perf", "slow list", "closed", []string{"perf", "bug"}, 5)
	assign := func(is store.Issue, a store.Assignee, minutes int) {
		_, _, err := q.UpdateIssue(ctx, w.ID, is.ID, store.IssuePatch{Assignee: ptr(&a), UpdatedAt: at.Add(time.Duration(minutes) * time.Minute)})
		must(t, "assign", err)
	}
	assign(i2, store.Assignee{Type: "agent", ID: "agent-1"}, 6)
	assign(i3, store.Assignee{Type: "user", ID: "alice"}, 7)

	tests := []struct {
		name string
		f    store.IssueFilter
		want []store.Issue
	}{
		{"none, newest updated first", store.IssueFilter{}, []store.Issue{i3, i2, i5, i4, i1}},
		{"status", store.IssueFilter{Status: "open"}, []store.Issue{i3, i1}},
		{"status without match", store.IssueFilter{Status: "nope"}, nil},
		{"assignee agent", store.IssueFilter{Assignee: "agent-1"}, []store.Issue{i2}},
		{"assignee user", store.IssueFilter{Assignee: "alice"}, []store.Issue{i3}},
		{"assignee without match", store.IssueFilter{Assignee: "bob"}, nil},
		{"label", store.IssueFilter{Label: "bug"}, []store.Issue{i3, i5, i1}},
		{"label single", store.IssueFilter{Label: "ui"}, []store.Issue{i2}},
		{"query in title or description, any case", store.IssueFilter{Query: "LOGIN"}, []store.Issue{i4, i1}},
		{"query matching title and description", store.IssueFilter{Query: "dark"}, []store.Issue{i2}},
		{"query non-ASCII case-insensitive", store.IssueFilter{Query: "ärger"}, []store.Issue{i3}},
		{"query is a plain substring, not a pattern", store.IssueFilter{Query: "%"}, nil},
		{"query underscore literal", store.IssueFilter{Query: "_"}, nil},
		{"status and label", store.IssueFilter{Status: "open", Label: "bug"}, []store.Issue{i3, i1}},
		{"status and query", store.IssueFilter{Status: "open", Query: "crash"}, []store.Issue{i3}},
		{"label and assignee", store.IssueFilter{Label: "bug", Assignee: "alice"}, []store.Issue{i3}},
		{"all four", store.IssueFilter{Status: "open", Label: "bug", Assignee: "alice", Query: "save"}, []store.Issue{i3}},
		{"all four without match", store.IssueFilter{Status: "done", Label: "bug", Assignee: "alice", Query: "save"}, nil},
	}
	for _, tc := range tests {
		page, err := q.ListIssues(ctx, w.ID, tc.f)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got, want := ids(page.Issues), ids(tc.want); !slices.Equal(got, want) {
			t.Errorf("%s: ListIssues = %v, want %v", tc.name, got, want)
		}
		if page.NextCursor != "" {
			t.Errorf("%s: a complete page has next_cursor %q", tc.name, page.NextCursor)
		}
		if page.Issues == nil {
			t.Errorf("%s: Issues is nil, want an empty slice", tc.name)
		}
	}
	// Listed issues carry every field, like GetIssue.
	page, err := q.ListIssues(ctx, w.ID, store.IssueFilter{Assignee: "alice"})
	must(t, "ListIssues", err)
	full, err := q.GetIssue(ctx, w.ID, i3.ID)
	must(t, "GetIssue", err)
	if len(page.Issues) == 1 {
		sameIssue(t, "listed issue", page.Issues[0], full)
	}
}

// walk pages through ListIssues with f and returns every issue in order.
func walk(t *testing.T, q store.Reader, ws string, f store.IssueFilter) []store.Issue {
	t.Helper()
	var all []store.Issue
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatal("pagination does not end")
		}
		page, err := q.ListIssues(t.Context(), ws, f)
		if err != nil {
			t.Fatalf("ListIssues page %d: %v", pages, err)
		}
		if f.Limit > 0 && len(page.Issues) > f.Limit {
			t.Fatalf("page of %d issues exceeds limit %d", len(page.Issues), f.Limit)
		}
		if page.NextCursor != "" && len(page.Issues) == 0 {
			t.Fatal("empty page with a next_cursor")
		}
		all = append(all, page.Issues...)
		if page.NextCursor == "" {
			return all
		}
		f.Cursor = page.NextCursor
	}
}

func testPagination250(t *testing.T, b Backend) {
	ctx, q := t.Context(), b.Queries
	w := newWorkspace(t, q, "PAG")
	at := baseTime()
	const n = 250
	want := map[string]bool{}
	done := map[string]bool{}
	for i := range n {
		// Ten issues share each timestamp, so ties must be broken consistently.
		is := newIssue(t, q, w.ID, fmt.Sprintf("issue %03d", i), at.Add(time.Duration(i/10)*time.Millisecond), func(ni *store.NewIssue) {
			if i%3 == 0 {
				ni.Status = "done"
			}
		})
		want[is.ID] = true
		if i%3 == 0 {
			done[is.ID] = true
		}
	}

	check := func(name string, got []store.Issue, want map[string]bool) {
		t.Helper()
		seen := map[string]bool{}
		for i, is := range got {
			if seen[is.ID] {
				t.Errorf("%s: %s (%s) listed twice", name, is.Key, is.ID)
			}
			seen[is.ID] = true
			if !want[is.ID] {
				t.Errorf("%s: unexpected issue %s", name, is.Key)
			}
			if i > 0 && is.UpdatedAt.After(got[i-1].UpdatedAt) {
				t.Errorf("%s: %s updated %v listed after %s updated %v", name, is.Key, is.UpdatedAt, got[i-1].Key, got[i-1].UpdatedAt)
			}
		}
		if len(seen) != len(want) {
			t.Errorf("%s: %d distinct issues, want %d", name, len(seen), len(want))
		}
	}
	for _, limit := range []int{1, 7, 25, 100} {
		check(fmt.Sprintf("limit %d", limit), walk(t, q, w.ID, store.IssueFilter{PageRequest: store.PageRequest{Limit: limit}}), want)
	}
	check("status done, limit 10", walk(t, q, w.ID, store.IssueFilter{Status: "done", PageRequest: store.PageRequest{Limit: 10}}), done)

	// The page size may change between pages; the cursor stays valid.
	p1, err := q.ListIssues(ctx, w.ID, store.IssueFilter{PageRequest: store.PageRequest{Limit: 10}})
	must(t, "ListIssues", err)
	p2, err := q.ListIssues(ctx, w.ID, store.IssueFilter{PageRequest: store.PageRequest{Limit: 30, Cursor: p1.NextCursor}})
	must(t, "ListIssues with a cursor and another limit", err)
	if len(p2.Issues) != 30 || slices.Contains(ids(p2.Issues), p1.Issues[9].ID) {
		t.Errorf("second page after limit change: %d issues (want 30, none repeated)", len(p2.Issues))
	}

	for _, tc := range []struct{ limit, want int }{{0, store.DefaultPageLimit}, {1000, store.MaxPageLimit}, {-5, 1}} {
		page, err := q.ListIssues(ctx, w.ID, store.IssueFilter{PageRequest: store.PageRequest{Limit: tc.limit}})
		must(t, "ListIssues", err)
		if len(page.Issues) != tc.want || page.NextCursor == "" {
			t.Errorf("limit %d: %d issues (next %q), want %d and a cursor", tc.limit, len(page.Issues), page.NextCursor, tc.want)
		}
	}
}

func testCursorValidation(t *testing.T, b Backend) {
	ctx, q := t.Context(), b.Queries
	w, other := newWorkspace(t, q, "AAC"), newWorkspace(t, q, "AAC")
	at := baseTime()
	var first store.Issue
	for i := range 4 {
		is := newIssue(t, q, w.ID, fmt.Sprintf("issue %d", i), at.Add(time.Duration(i)*time.Second))
		newIssue(t, q, other.ID, fmt.Sprintf("issue %d", i), at.Add(time.Duration(i)*time.Second))
		if i == 0 {
			first = is
		}
		_, err := q.CreateComment(ctx, w.ID, first.ID, store.NewComment{Author: "alice", Body: "c", CreatedAt: at.Add(time.Duration(i) * time.Second)})
		must(t, "CreateComment", err)
	}
	open := store.IssueFilter{Status: "open", PageRequest: store.PageRequest{Limit: 2}}
	page, err := q.ListIssues(ctx, w.ID, open)
	must(t, "ListIssues", err)
	cursor := page.NextCursor
	if cursor == "" {
		t.Fatal("no cursor after a partial page")
	}
	cpage, err := q.ListComments(ctx, w.ID, first.ID, store.PageRequest{Limit: 2})
	must(t, "ListComments", err)
	if cpage.NextCursor == "" {
		t.Fatal("no comment cursor after a partial page")
	}

	with := func(f store.IssueFilter) store.IssueFilter { f.Cursor = cursor; f.Limit = 2; return f }
	foreign := []struct {
		name string
		ws   string
		f    store.IssueFilter
	}{
		{"other status", w.ID, with(store.IssueFilter{Status: "done"})},
		{"no status", w.ID, with(store.IssueFilter{})},
		{"added query", w.ID, with(store.IssueFilter{Status: "open", Query: "issue"})},
		{"added label", w.ID, with(store.IssueFilter{Status: "open", Label: "bug"})},
		{"added assignee", w.ID, with(store.IssueFilter{Status: "open", Assignee: "alice"})},
		{"other workspace", other.ID, with(store.IssueFilter{Status: "open"})},
		{"comment cursor", w.ID, store.IssueFilter{Status: "open", PageRequest: store.PageRequest{Cursor: cpage.NextCursor}}},
	}
	for _, tc := range foreign {
		_, err := q.ListIssues(ctx, tc.ws, tc.f)
		wantErr(t, "cursor reused with "+tc.name, err, store.ErrInvalid)
	}
	_, err = q.ListComments(ctx, w.ID, first.ID, store.PageRequest{Cursor: cursor})
	wantErr(t, "issue cursor on ListComments", err, store.ErrInvalid)
	if _, err := q.ListComments(ctx, w.ID, "aac-1", store.PageRequest{Limit: 2, Cursor: cpage.NextCursor}); err != nil {
		t.Errorf("comment cursor with the issue named by key instead of id: %v", err)
	}
	second := newIssue(t, q, w.ID, "second", at)
	_, err = q.CreateComment(ctx, w.ID, second.ID, store.NewComment{Author: "alice", Body: "c", CreatedAt: at})
	must(t, "CreateComment", err)
	_, err = q.ListComments(ctx, w.ID, second.ID, store.PageRequest{Cursor: cpage.NextCursor})
	wantErr(t, "comment cursor on another issue", err, store.ErrInvalid)

	malformed := []string{
		"!!!", "not a cursor", "e30", "bnVsbA", "W10", "eyJ2IjoxfQ", cursor + "x", cursor[:len(cursor)-3],
		cursor + "====", strings.Repeat("A", 5000), base64.RawURLEncoding.EncodeToString([]byte(`{"v":1,"f":"","p":{}}`)),
		"\x00", "%00",
	}
	for _, c := range malformed {
		_, err := q.ListIssues(ctx, w.ID, store.IssueFilter{Status: "open", PageRequest: store.PageRequest{Cursor: c}})
		wantErr(t, fmt.Sprintf("ListIssues with cursor %.40q", c), err, store.ErrInvalid)
		_, err = q.ListComments(ctx, w.ID, first.ID, store.PageRequest{Cursor: c})
		wantErr(t, fmt.Sprintf("ListComments with cursor %.40q", c), err, store.ErrInvalid)
	}
}
