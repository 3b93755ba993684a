package store

import (
	"slices"
	"testing"
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
