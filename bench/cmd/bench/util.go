package main

import "github.com/aacworkflow/aacmcp/bench/report"

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
