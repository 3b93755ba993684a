package main

import (
	"os/exec"
	"strings"

	"github.com/aacworkflow/aacmcp/bench/report"
)

func reportSection(title, text string, header []string) report.Section {
	return report.Section{Title: title, Text: []string{text}, Table: report.Table{Header: header}}
}

// addGoal records a goal; note is shown only when it is missed.
func (b *bench) addGoal(name, target, measured string, ok bool, note string) {
	g := report.Goal{Name: name, Target: target, Measured: measured, Status: report.Check(ok)}
	if !ok {
		g.Note = note
	}
	b.rep.Goals = append(b.rep.Goals, g)
}

// commitOf names the code a run measured: the commit checked out in root, and
// whether the working tree differs from it (then the figures are of code no commit
// holds). "unknown" outside a git checkout.
func commitOf(root string) string {
	out, err := exec.Command("git", "-C", root, "rev-parse", "--short=7", "HEAD").Output()
	if err != nil {
		return "unknown (not a git checkout)"
	}
	c := strings.TrimSpace(string(out))
	// Only tracked files count: the bench itself writes bench/REPORT.md and the profiles.
	st, err := exec.Command("git", "-C", root, "status", "--porcelain", "--untracked-files=no", "--",
		".", ":!bench/REPORT.md", ":!bench/profiles").Output()
	if err == nil && len(strings.TrimSpace(string(st))) > 0 {
		c += " with uncommitted changes"
	}
	return c
}
