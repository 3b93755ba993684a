package store

import (
	"slices"
	"time"
)

// Apply returns cur with the patch applied and whether anything differs. It is the
// no-op rule of Writer.UpdateIssue, shared by every backend so that "the values already
// hold" means the same everywhere: nothing is written, no version is checked, and the
// version does not move.
func (p IssuePatch) Apply(cur Issue) (next Issue, changed bool) {
	next = cur
	set := func(dst *string, v *string) {
		if v != nil && *v != *dst {
			*dst = *v
			changed = true
		}
	}
	set(&next.Title, p.Title)
	set(&next.Description, p.Description)
	set(&next.Status, p.Status)
	set(&next.Priority, p.Priority)
	if p.Labels != nil {
		l := *p.Labels
		if l == nil {
			l = []string{}
		}
		if !slices.Equal(l, cur.Labels) {
			next.Labels = slices.Clone(l)
			changed = true
		}
	}
	if p.Assignee != nil && !SameAssignee(*p.Assignee, cur.Assignee) {
		if a := *p.Assignee; a != nil {
			cp := *a
			next.Assignee = &cp
		} else {
			next.Assignee = nil
		}
		changed = true
	}
	return next, changed
}

// SameAssignee reports whether a and b name the same assignee (both nil is the same).
func SameAssignee(a, b *Assignee) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

// Issue is the issue in.Create* stores: version 1, created and updated at created, and
// labels never nil on the wire. Backends add the id and key they allocate.
func (in NewIssue) Issue(created time.Time) Issue {
	is := Issue{
		ID:          in.ID,
		Title:       in.Title,
		Description: in.Description,
		Status:      in.Status,
		Priority:    in.Priority,
		Labels:      slices.Clone(in.Labels),
		CreatedBy:   in.CreatedBy,
		CreatedAt:   created,
		UpdatedAt:   created,
		Version:     1,
	}
	if is.Labels == nil {
		is.Labels = []string{}
	}
	return is
}
