package store

import (
	"slices"
	"testing"
	"time"
)

func TestIssuePatchApply(t *testing.T) {
	str := func(s string) *string { return &s }
	labels := func(l ...string) *[]string { return &l }
	agent := &Assignee{Type: "agent", ID: "bot"}
	assign := func(a *Assignee) **Assignee { return &a }
	cur := Issue{Title: "t", Description: "d", Status: "open", Priority: "low", Labels: []string{"a"}, Assignee: agent, Version: 3}

	for _, tc := range []struct {
		name    string
		p       IssuePatch
		changed bool
		check   func(Issue) bool
	}{
		{"empty patch", IssuePatch{}, false, func(n Issue) bool { return n.Title == "t" }},
		{"values that already hold", IssuePatch{Title: str("t"), Status: str("open"), Labels: labels("a"),
			Assignee: assign(&Assignee{Type: "agent", ID: "bot"})}, false, func(n Issue) bool { return n.Assignee == agent }},
		{"title", IssuePatch{Title: str("u")}, true, func(n Issue) bool { return n.Title == "u" && n.Description == "d" }},
		{"labels replaced", IssuePatch{Labels: labels("b", "c")}, true, func(n Issue) bool { return slices.Equal(n.Labels, []string{"b", "c"}) }},
		{"labels to nil mean empty", IssuePatch{Labels: func() *[]string { var l []string; return &l }()}, true,
			func(n Issue) bool { return n.Labels != nil && len(n.Labels) == 0 }},
		{"unassign", IssuePatch{Assignee: assign(nil)}, true, func(n Issue) bool { return n.Assignee == nil }},
		{"other agent", IssuePatch{Assignee: assign(&Assignee{Type: "agent", ID: "other"})}, true,
			func(n Issue) bool { return n.Assignee.ID == "other" && agent.ID == "bot" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next, changed := tc.p.Apply(cur)
			if changed != tc.changed || !tc.check(next) {
				t.Errorf("Apply = %+v, changed %v; want changed %v", next, changed, tc.changed)
			}
			if next.Version != cur.Version || cur.Title != "t" || !slices.Equal(cur.Labels, []string{"a"}) {
				t.Errorf("Apply touched the version or the input: next %+v, cur %+v", next, cur)
			}
		})
	}
}

func TestNewIssueIssue(t *testing.T) {
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	in := NewIssue{ID: "id", Title: "t", Status: "open", Priority: "low", CreatedBy: "u"}
	is := in.Issue(at)
	if is.Version != 1 || !is.CreatedAt.Equal(at) || !is.UpdatedAt.Equal(at) || is.Labels == nil || len(is.Labels) != 0 ||
		is.ID != "id" || is.Title != "t" || is.CreatedBy != "u" || is.Assignee != nil || is.CommentCount != 0 {
		t.Errorf("Issue() = %+v", is)
	}
	in.Labels = []string{"a"}
	is = in.Issue(at)
	in.Labels[0] = "changed"
	if is.Labels[0] != "a" {
		t.Errorf("Issue() shares the caller's label slice: %v", is.Labels)
	}
}
