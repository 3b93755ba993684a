package report_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/audit/query"
	"github.com/aacworkflow/aacmcp/shared/audit/report"
	"github.com/aacworkflow/aacmcp/shared/audit/report/reporttest"
)

func collect(t *testing.T, data string, p report.Period) *report.Data {
	t.Helper()
	e, err := query.Open(data)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	d, err := report.Collect(context.Background(), report.Local{Engine: e}, p, "test", time.Now(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func text(v any) string {
	if v == nil {
		return "NULL"
	}
	return fmt.Sprint(v)
}

// TestCollectFixture: every section's rows are the fixture's hand-counted numbers.
func TestCollectFixture(t *testing.T) {
	data := t.TempDir()
	reporttest.Write(t, data)
	d := collect(t, data, report.Period{From: reporttest.From, To: reporttest.To})
	for id, want := range reporttest.Expected {
		res := d.Results[id]
		var got []reporttest.Row
		for _, r := range res.Rows {
			var row reporttest.Row
			for _, v := range r {
				row = append(row, text(v))
			}
			got = append(got, row)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s (%v):\n got %v\nwant %v", id, res.Columns, got, want)
		}
	}
	slow := d.Results["slowest"]
	if len(slow.Rows) != reporttest.SlowestRows || text(slow.Rows[0][1]) != reporttest.SlowestTool || text(slow.Rows[0][4]) != reporttest.SlowestMS {
		t.Errorf("slowest: %v rows, first %v", len(slow.Rows), slow.Rows[0])
	}

	var page bytes.Buffer
	if err := report.Render(&page, d); err != nil {
		t.Fatal(err)
	}
	html := page.String()
	for _, s := range report.Sections {
		if !strings.Contains(html, `data-query="`+s.Query+`"`) {
			t.Errorf("the page has no section of %s", s.Query)
		}
	}
	if strings.Contains(html, "chart-empty") {
		t.Error("a chart of the fixture says it is empty")
	}
	// Nothing in the page names a place to load from: every URL is a data: URL or an
	// SVG namespace.
	for _, m := range regexp.MustCompile(`(?i)(?:src|href)\s*=\s*["']?([^"' >]+)|url\(([^)]*)\)`).FindAllStringSubmatch(html, -1) {
		u := m[1] + m[2]
		if !strings.HasPrefix(u, "#") && !strings.HasPrefix(u, "data:") {
			t.Errorf("the page refers to %q", u)
		}
	}
	if os.Getenv("REPORT_OUT") != "" {
		os.WriteFile(filepath.Join(os.Getenv("REPORT_OUT"), "report.html"), page.Bytes(), 0o644)
	}

	// One workspace.
	acme := collect(t, data, report.Period{From: reporttest.From, To: reporttest.To, Workspace: "acme"})
	var n int64
	for _, r := range acme.Results["calls_per_hour"].Rows {
		n += r[2].(int64)
	}
	if n != reporttest.AcmeToolCalls {
		t.Errorf("acme: %d tool calls, want %d", n, reporttest.AcmeToolCalls)
	}
}

// TestEmptyPeriod: a period without records draws charts that say so.
func TestEmptyPeriod(t *testing.T) {
	data := t.TempDir()
	reporttest.Write(t, data)
	d := collect(t, data, report.Period{From: reporttest.To.Add(48 * time.Hour), To: reporttest.To.Add(72 * time.Hour)})
	var page bytes.Buffer
	if err := report.Render(&page, d); err != nil {
		t.Fatal(err)
	}
	html := page.String()
	if got := strings.Count(html, `class="chart chart-empty"`); got != len(report.Sections) {
		t.Errorf("%d empty charts, want %d", got, len(report.Sections))
	}
	for _, s := range report.Sections {
		if !strings.Contains(html, s.Empty) {
			t.Errorf("the page does not say %q", s.Empty)
		}
	}
}

func TestPeriodValidate(t *testing.T) {
	if err := (report.Period{From: reporttest.To, To: reporttest.From}).Validate(); err == nil {
		t.Error("a period that ends before it starts was accepted")
	}
}
