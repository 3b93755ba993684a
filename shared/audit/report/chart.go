package report

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html/template"
	"image/color"
	"slices"
	"strings"
	"sync"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// The charts are gonum/plot's SVG (docs/decisions.md, "Audit report charts"). Their
// text names the font family only; the page embeds that font once (fontFace), as a
// data: URL its CSP allows, instead of every chart embedding its own copy.
var chartFont = font.Font{Typeface: "Liberation", Variant: "Sans"}

func init() {
	// plot.New takes its title, axis and legend fonts from DefaultFont.
	plot.DefaultFont = chartFont
}

// series is one stack of a bar chart: a value per category.
type series struct {
	name   string
	values []float64
}

const chartWidth = 760 // points

// outcomeColors keeps the colours of known values stable across charts; anything
// else (a confirmation kind or outcome this code does not know) takes the next
// colour of the palette.
var outcomeColors = map[string]color.Color{
	"success":  color.RGBA{0x2e, 0x7d, 0x32, 0xff},
	"denied":   color.RGBA{0xc6, 0x28, 0x28, 0xff},
	"error":    color.RGBA{0xef, 0x6c, 0x00, 0xff},
	"asked":    color.RGBA{0x15, 0x65, 0xc0, 0xff},
	"flag":     color.RGBA{0x8e, 0x24, 0xaa, 0xff},
	"elicited": color.RGBA{0x15, 0x65, 0xc0, 0xff},
	"(none)":   color.RGBA{0x75, 0x75, 0x75, 0xff},
	"calls":    color.RGBA{0x37, 0x47, 0x4f, 0xff},
}

func colorOf(name string, i int) color.Color {
	if name == "" {
		name = "calls" // a chart of one unnamed series
	}
	if c, ok := outcomeColors[name]; ok {
		return c
	}
	return plotutil.Color(i + 3)
}

// barSVG draws stacked bars, one bar per category. Horizontal charts suit long
// category names (clients, reasons); every tickEvery-th category of a vertical chart
// is labelled (an hourly axis has 168 bars a week).
func barSVG(title, valueLabel string, cats []string, ss []series, horizontal bool, tickEvery int) (template.HTML, error) {
	p := plot.New()
	p.Title.Text = title
	p.Legend.Top = true
	p.Legend.Left = !horizontal
	n := float64(len(cats))
	if horizontal {
		// The nominal axis counts from the bottom: reversed, the first category
		// (the largest, or the slowest) is the top bar.
		cats = slices.Clone(cats)
		slices.Reverse(cats)
		rev := make([]series, len(ss))
		for i, s := range ss {
			rev[i] = series{name: s.name, values: slices.Clone(s.values)}
			slices.Reverse(rev[i].values)
		}
		ss = rev
	}
	// Room past the longest stack for the legend, which gonum draws inside the plot.
	var longest float64
	for j := range cats {
		var sum float64
		for _, s := range ss {
			sum += s.values[j]
		}
		longest = max(longest, sum)
	}
	top := longest * 1.05
	if len(ss) > 1 {
		top = longest * 1.4
	}
	var w, h vg.Length = chartWidth, 280
	var bw vg.Length
	if horizontal {
		h = vg.Length(90 + 20*len(cats))
		bw = vg.Length(12)
		p.X.Label.Text = valueLabel
		p.NominalY(shortLabels(cats)...)
	} else {
		bw = vg.Length(560/n) * 0.8
		if bw > 40 {
			bw = 40
		}
		p.Y.Label.Text = valueLabel
		p.X.Tick.Marker = sparseNominal{labels: cats, every: max(tickEvery, 1)}
	}
	var below *plotter.BarChart
	for i, s := range ss {
		b, err := plotter.NewBarChart(plotter.Values(s.values), bw)
		if err != nil {
			return "", fmt.Errorf("report chart %q: %w", title, err)
		}
		b.Horizontal = horizontal
		b.Color = colorOf(s.name, i)
		b.LineStyle.Width = 0
		if below != nil {
			b.StackOn(below)
		}
		below = b
		p.Add(b)
		if len(ss) > 1 || s.name != "" {
			p.Legend.Add(s.name, b)
		}
	}
	if horizontal {
		p.X.Min, p.X.Max = 0, top
	} else {
		p.Y.Min, p.Y.Max = 0, top
	}
	p.Add(plotter.NewGrid())
	return writeSVG(p, w, h)
}

// emptySVG is the chart of a period without data: it says so.
func emptySVG(title, msg string) (template.HTML, error) {
	p := plot.New()
	p.Title.Text = title
	p.HideAxes()
	l, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: 0.5, Y: 0.5}}, Labels: []string{msg}})
	if err != nil {
		return "", err
	}
	l.TextStyle[0].Font.Size = 16
	l.TextStyle[0].XAlign = draw.XCenter
	p.Add(l)
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 1, 0, 1
	return writeSVG(p, chartWidth, 120)
}

func writeSVG(p *plot.Plot, w, h vg.Length) (template.HTML, error) {
	c := vgsvg.NewWith(vgsvg.UseWH(w, h), vgsvg.EmbedFonts(false))
	p.Draw(draw.New(c))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return "", err
	}
	s := buf.String()
	// The XML declaration and comment before <svg> do not belong in an HTML page.
	if i := strings.Index(s, "<svg"); i >= 0 {
		s = s[i:]
	}
	// gonum's text is escaped with html.EscapeString (vgsvg.FillString), and the
	// rest is numbers and fixed markup: safe to place in the page as it is.
	return template.HTML(s), nil //nolint:gosec // see above
}

// sparseNominal labels every every-th category of a nominal axis.
type sparseNominal struct {
	labels []string
	every  int
}

func (s sparseNominal) Ticks(_, _ float64) []plot.Tick {
	ticks := make([]plot.Tick, len(s.labels))
	for i, l := range s.labels {
		ticks[i].Value = float64(i)
		if i%s.every == 0 {
			ticks[i].Label = l
		}
	}
	return ticks
}

// shortLabels cuts long category names (client metadata URLs) for the axis; the
// table below the chart has them whole.
func shortLabels(in []string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		if r := []rune(s); len(r) > 48 {
			s = string(r[:47]) + "…"
		}
		out[i] = s
	}
	return out
}

// fontFace is the CSS that embeds the charts' font, once per page.
var fontFace = sync.OnceValues(func() (template.CSS, error) {
	f := font.DefaultCache.Lookup(chartFont, 12)
	if f.Face == nil {
		return "", fmt.Errorf("report: font %v is not in gonum's cache", chartFont)
	}
	var raw bytes.Buffer
	if _, err := f.Face.WriteSourceTo(nil, &raw); err != nil {
		return "", err
	}
	name, err := f.Face.Name(nil, 1) // sfnt.NameIDFamily: the family the SVG text names
	if err != nil {
		return "", err
	}
	css := fmt.Sprintf("@font-face{font-family:%q;font-style:normal;font-weight:normal;src:url(data:font/ttf;base64,%s) format(\"truetype\");}",
		name, base64.StdEncoding.EncodeToString(raw.Bytes()))
	return template.CSS(css), nil
})
