package report

import (
	"cmp"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/aacworkflow/aacmcp/events/queries"
	"github.com/aacworkflow/aacmcp/shared/audit/query"
)

// CSP is the page's Content-Security-Policy: nothing may be loaded or run. Styles
// are inline (the page's own and the charts' style attributes), and the one font is
// a data: URL inside the page; no script, image, frame, connection or form target
// is allowed, so the file shows the same offline and cannot call out when opened.
const CSP = "default-src 'none'; style-src 'unsafe-inline'; font-src data:; base-uri 'none'; form-action 'none'"

type chart struct {
	SVG template.HTML
	// Empty marks a chart that says there is nothing to draw.
	Empty bool
}

type table struct {
	Columns []string
	Rows    [][]cell
}

type cell struct {
	Text string
	Num  bool
}

type sectionView struct {
	Section
	Description string
	SQL         string
	Charts      []chart
	Table       table
}

type pageView struct {
	*Data
	CSP      string
	Font     template.CSS
	Totals   []total
	Sections []sectionView
}

type total struct {
	ID, Label string
	N         int64
}

// Render writes the report as one HTML page.
func Render(w io.Writer, d *Data) error {
	ff, err := fontFace()
	if err != nil {
		return err
	}
	v := pageView{Data: d, CSP: CSP, Font: ff}
	for _, s := range Sections {
		res := d.Results[s.ID]
		if res == nil {
			res = &query.Result{}
		}
		q, err := queries.Get(s.Query)
		if err != nil {
			return err
		}
		charts, err := chartsOf(s, d.Period, rows{res})
		if err != nil {
			return fmt.Errorf("report %s: %w", s.ID, err)
		}
		v.Sections = append(v.Sections, sectionView{Section: s, Description: q.Description, SQL: q.SQL, Charts: charts, Table: tableOf(res)})
	}
	v.Totals = totals(d)
	return page.Execute(w, v)
}

// totals are the headline numbers, each a sum over one section's rows.
func totals(d *Data) []total {
	sum := func(id, col string, keep func(rows, int) bool) int64 {
		r := rows{d.Results[id]}
		var n int64
		for i := range r.len() {
			if keep == nil || keep(r, i) {
				n += r.int(i, col)
			}
		}
		return n
	}
	return []total{
		{"tool_calls", "tool calls", sum("calls_per_hour", "calls", nil)},
		{"denied", "denied", sum("calls_per_hour", "calls", func(r rows, i int) bool { return r.str(i, "outcome") == "denied" })},
		{"destructive", "destructive calls", sum("destructive", "calls", nil)},
		{"authorization", "authorization events", sum("authorization", "events", nil)},
	}
}

// rows reads a result's cells by column name.
type rows struct{ res *query.Result }

func (r rows) len() int {
	if r.res == nil {
		return 0
	}
	return len(r.res.Rows)
}

func (r rows) get(i int, col string) any {
	j := slices.Index(r.res.Columns, col)
	if j < 0 {
		return nil
	}
	return r.res.Rows[i][j]
}

func (r rows) str(i int, col string) string {
	switch v := r.get(i, col).(type) {
	case nil:
		return ""
	case string:
		return v
	default:
		return fmt.Sprint(v)
	}
}

func (r rows) int(i int, col string) int64 {
	switch v := r.get(i, col).(type) {
	case int64:
		return v
	case float64:
		return int64(v)
	}
	return 0
}

// grouped sums col over the rows by category and stack, keeping the categories in
// the order given (or, when nil, by descending total) and stacks in first-seen
// order after the preferred ones.
func grouped(r rows, cats []string, catOf, stackOf func(int) string, col string, preferred ...string) ([]string, []series) {
	sums := map[[2]string]float64{}
	catTotal := map[string]float64{}
	var stacks []string
	for i := range r.len() {
		c, s := catOf(i), stackOf(i)
		v := float64(r.int(i, col))
		sums[[2]string{c, s}] += v
		catTotal[c] += v
		if !slices.Contains(stacks, s) {
			stacks = append(stacks, s)
		}
	}
	if cats == nil {
		for c := range catTotal {
			cats = append(cats, c)
		}
		slices.SortFunc(cats, func(a, b string) int {
			return cmp.Or(cmp.Compare(catTotal[b], catTotal[a]), strings.Compare(a, b))
		})
	}
	var order []string
	for _, p := range preferred {
		if slices.Contains(stacks, p) {
			order = append(order, p)
		}
	}
	for _, s := range stacks {
		if !slices.Contains(order, s) {
			order = append(order, s)
		}
	}
	ss := make([]series, len(order))
	for k, s := range order {
		ss[k] = series{name: s, values: make([]float64, len(cats))}
		for j, c := range cats {
			ss[k].values[j] = sums[[2]string{c, s}]
		}
	}
	return cats, ss
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// chartsOf draws a section's rows.
func chartsOf(s Section, p Period, r rows) ([]chart, error) {
	if r.len() == 0 {
		svg, err := emptySVG(s.Title, s.Empty)
		return []chart{{SVG: svg, Empty: true}}, err
	}
	one := func(svg template.HTML, err error) ([]chart, error) { return []chart{{SVG: svg}}, err }
	col := func(name string) func(int) string { return func(i int) string { return r.str(i, name) } }
	same := func(string) func(int) string { return func(int) string { return "" } }
	switch s.ID {
	case "calls_per_hour":
		var hours []string
		for h := p.From.UTC().Truncate(time.Hour); h.Before(p.To); h = h.Add(time.Hour) {
			hours = append(hours, h.Format("2006-01-02 15:00"))
		}
		cats, ss := grouped(r, hours, col("hour_utc"), col("outcome"), "calls", "success", "asked", "denied", "error")
		return one(barSVG(s.Title+" (UTC)", "calls", cats, ss, false, max(1, len(cats)/8)))
	case "denials":
		cats, ss := grouped(r, nil, col("reason"), same(""), "denied_calls")
		byReason, err := barSVG("Denials by reason", "denied calls", cats, ss, true, 1)
		if err != nil {
			return nil, err
		}
		who := func(i int) string {
			return "token " + orNone(r.str(i, "token_id")) + " · client " + orNone(r.str(i, "client_id"))
		}
		cats, ss = grouped(r, nil, who, col("reason"), "denied_calls")
		byWho, err := barSVG("Denials by token and client", "denied calls", cats, ss, true, 1)
		return []chart{{SVG: byReason}, {SVG: byWho}}, err
	case "destructive":
		who := func(i int) string { return orNone(r.str(i, "user_id")) + " · " + orNone(r.str(i, "client_id")) }
		conf := func(i int) string { return orNone(r.str(i, "confirmation")) }
		cats, ss := grouped(r, nil, who, conf, "calls", "(none)", "flag", "elicited")
		return one(barSVG("Destructive calls by user · client, stacked by confirmation", "calls", cats, ss, true, 1))
	case "authorization":
		cats, ss := grouped(r, nil, col("action"), col("outcome"), "events", "success", "denied", "error")
		return one(barSVG(s.Title, "events", cats, ss, true, 1))
	case "top_tools":
		var cats []string
		ok, denied, failed := series{name: "success"}, series{name: "denied"}, series{name: "error"}
		p95 := series{name: "", values: nil}
		type tp struct {
			tool string
			p95  float64
		}
		var byP95 []tp
		for i := range r.len() {
			cats = append(cats, r.str(i, "tool"))
			d, f := r.int(i, "denied"), r.int(i, "failed")
			ok.values = append(ok.values, float64(r.int(i, "calls")-d-f))
			denied.values = append(denied.values, float64(d))
			failed.values = append(failed.values, float64(f))
			byP95 = append(byP95, tp{r.str(i, "tool"), float64(r.int(i, "p95_ms"))})
		}
		byCalls, err := barSVG("Tools by calls", "calls", cats, []series{ok, denied, failed}, true, 1)
		if err != nil {
			return nil, err
		}
		slices.SortStableFunc(byP95, func(a, b tp) int { return cmp.Compare(b.p95, a.p95) })
		var p95cats []string
		for _, t := range byP95 {
			p95cats = append(p95cats, t.tool)
			p95.values = append(p95.values, t.p95)
		}
		byDur, err := barSVG("Tools by p95 duration", "p95 duration (ms)", p95cats, []series{p95}, true, 1)
		return []chart{{SVG: byCalls}, {SVG: byDur}}, err
	case "slowest":
		var cats []string
		byOutcome := map[string]*series{}
		var order []string
		for i := range r.len() {
			cats = append(cats, r.str(i, "tool")+" · "+r.str(i, "timestamp"))
		}
		for i := range r.len() {
			o := r.str(i, "outcome")
			if byOutcome[o] == nil {
				byOutcome[o] = &series{name: o, values: make([]float64, len(cats))}
				order = append(order, o)
			}
			byOutcome[o].values[i] = float64(r.int(i, "duration_ms"))
		}
		var ss []series
		for _, o := range order {
			ss = append(ss, *byOutcome[o])
		}
		return one(barSVG("The slowest calls", "duration (ms)", cats, ss, true, 1))
	}
	return nil, fmt.Errorf("no chart for section %q", s.ID)
}

func tableOf(res *query.Result) table {
	t := table{Columns: res.Columns}
	for _, row := range res.Rows {
		cells := make([]cell, len(row))
		for i, v := range row {
			switch x := v.(type) {
			case nil:
				cells[i] = cell{Text: "NULL"}
			case string:
				cells[i] = cell{Text: x}
			case int64:
				cells[i] = cell{Text: fmt.Sprint(x), Num: true}
			case float64:
				cells[i] = cell{Text: fmt.Sprint(x), Num: true}
			case bool:
				cells[i] = cell{Text: fmt.Sprint(x)}
			default:
				b, _ := json.Marshal(x)
				cells[i] = cell{Text: string(b)}
			}
		}
		t.Rows = append(t.Rows, cells)
	}
	return t
}

var page = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{{.CSP}}">
<meta name="referrer" content="no-referrer">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>aacmcp audit report {{.From}} – {{.To}}</title>
<style>
{{.Font}}
body { font-family: "Liberation Sans", sans-serif; margin: 24px auto; max-width: 1100px; color: #212121; padding: 0 16px; }
h1 { font-size: 22px; margin-bottom: 4px; }
.meta { color: #555; margin: 0 0 16px; }
.totals { display: flex; gap: 16px; margin: 16px 0 24px; flex-wrap: wrap; }
.totals div { border: 1px solid #ddd; border-radius: 6px; padding: 10px 16px; min-width: 140px; }
.totals b { display: block; font-size: 24px; }
section { border-top: 1px solid #ddd; padding: 16px 0; }
h2 { font-size: 18px; margin: 0 0 4px; }
.query { color: #555; font-size: 13px; margin: 0 0 8px; }
.chart svg { max-width: 100%; height: auto; display: block; }
table { border-collapse: collapse; font-size: 13px; margin-top: 8px; }
th, td { border-bottom: 1px solid #eee; padding: 3px 10px; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.empty { color: #555; font-style: italic; }
details pre { background: #f6f6f6; padding: 8px; overflow-x: auto; font-size: 12px; }
nav a { margin-right: 12px; }
</style>
</head>
<body>
<h1>Audit report</h1>
<p class="meta">From <time>{{.From}}</time> to <time>{{.To}}</time> (end excluded) · workspace {{if .Workspace}}<code>{{.Workspace}}</code>{{else}}all{{end}} · source {{.Source}} · generated {{.Generated}}</p>
<div class="totals">{{range .Totals}}<div data-total="{{.ID}}"><b>{{.N}}</b>{{.Label}}</div>{{end}}</div>
<nav>{{range .Sections}}<a href="#{{.ID}}">{{.Title}}</a>{{end}}</nav>
{{range .Sections}}
<section id="{{.ID}}" data-query="{{.Query}}">
<h2>{{.Title}}</h2>
<p class="query">From the saved query <code>{{.Query}}</code>: {{.Description}}</p>
{{range .Charts}}<div class="chart{{if .Empty}} chart-empty{{end}}">{{.SVG}}</div>{{end}}
{{if .Table.Rows}}<table>
<thead><tr>{{range .Table.Columns}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>{{range .Table.Rows}}<tr>{{range .}}<td{{if .Num}} class="num"{{end}}>{{.Text}}</td>{{end}}</tr>{{end}}</tbody>
</table>{{else}}<p class="empty">No rows.</p>{{end}}
<details><summary>SQL</summary><pre>{{.SQL}}</pre></details>
</section>
{{end}}
</body>
</html>
`))
