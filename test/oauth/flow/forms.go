package flow

import (
	"io"
	"net/url"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// Form is an HTML form as a person would submit it: the controls it holds, with
// the accessible names the page contract promises (a button's text, a checkbox's
// <label for>).
type Form struct {
	Action *url.URL // resolved against the page's URL
	Method string   // upper case; GET when the page says nothing
	Inputs []Input
	// Selects are <select> elements with their options.
	Selects []Select
	Buttons []Button
}

// Input is an <input> element.
type Input struct {
	Type, Name, Value string
	Checked           bool
	Label             string // text of the <label for=id>, trimmed
}

// Select is a <select> element.
type Select struct {
	Name     string
	Label    string
	Options  []string // values, in page order
	Selected string   // value of the selected option, or of the first one
}

// Button is a <button> (or an <input type=submit>).
type Button struct {
	Name, Value string
	Text        string // its accessible name: aria-label, else the text inside
}

// ParseForms returns every form of the page at base, in page order.
func ParseForms(r io.Reader, base *url.URL) ([]Form, error) {
	doc, err := html.Parse(r)
	if err != nil {
		return nil, err
	}
	labels := map[string]string{}
	var forms []Form
	var cur *Form
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch n.DataAtom {
			case atom.Label:
				if id := attr(n, "for"); id != "" {
					labels[id] = text(n)
				}
			case atom.Form:
				forms = append(forms, Form{Action: resolve(base, attr(n, "action")), Method: method(attr(n, "method"))})
				prev := cur
				cur = &forms[len(forms)-1]
				for c := n.FirstChild; c != nil; c = c.NextSibling {
					walk(c)
				}
				// The slice may have grown under a nested form (invalid HTML,
				// which the parser drops, but never rely on it).
				cur = prev
				return
			case atom.Input:
				if cur != nil {
					in := Input{Type: strings.ToLower(attr(n, "type")), Name: attr(n, "name"), Value: attr(n, "value"), Checked: has(n, "checked")}
					if in.Type == "" {
						in.Type = "text"
					}
					in.Label = attr(n, "id") // resolved below, once every label is known
					if in.Type == "submit" {
						cur.Buttons = append(cur.Buttons, Button{Name: in.Name, Value: in.Value, Text: first(attr(n, "aria-label"), in.Value)})
					} else {
						cur.Inputs = append(cur.Inputs, in)
					}
				}
			case atom.Select:
				if cur != nil {
					s := Select{Name: attr(n, "name"), Label: attr(n, "id")}
					options(n, &s)
					cur.Selects = append(cur.Selects, s)
				}
				return
			case atom.Button:
				if cur != nil {
					t := strings.ToLower(attr(n, "type"))
					if t == "" || t == "submit" {
						cur.Buttons = append(cur.Buttons, Button{Name: attr(n, "name"), Value: attr(n, "value"), Text: first(attr(n, "aria-label"), text(n))})
					}
				}
				return
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	for i := range forms {
		for j := range forms[i].Inputs {
			forms[i].Inputs[j].Label = labelOf(labels, forms[i].Inputs[j].Label)
		}
		for j := range forms[i].Selects {
			forms[i].Selects[j].Label = labelOf(labels, forms[i].Selects[j].Label)
		}
	}
	return forms, nil
}

func labelOf(labels map[string]string, id string) string {
	if id == "" {
		return ""
	}
	return labels[id]
}

func options(sel *html.Node, s *Select) {
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.DataAtom == atom.Option {
			v, ok := attrOK(n, "value")
			if !ok {
				v = text(n)
			}
			s.Options = append(s.Options, v)
			if has(n, "selected") {
				s.Selected = v
			}
			return
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(sel)
	if s.Selected == "" && len(s.Options) > 0 {
		s.Selected = s.Options[0]
	}
}

// Button returns the form's button whose accessible name is exactly name.
func (f Form) Button(name string) (Button, bool) {
	for _, b := range f.Buttons {
		if b.Text == name {
			return b, true
		}
	}
	return Button{}, false
}

// Checkboxes are the labels of the form's checkboxes, in page order.
func (f Form) Checkboxes() []string {
	var out []string
	for _, in := range f.Inputs {
		if in.Type == "checkbox" {
			out = append(out, in.Label)
		}
	}
	return out
}

// Values is what submitting the form with button b sends: every named hidden or
// text input, the checkboxes check says are ticked (check gets each checkbox and
// returns whether to tick it), each select's choice (choose may override it), and
// the button's own name and value.
func (f Form) Values(b Button, check func(Input) bool, choose func(Select) string) url.Values {
	v := url.Values{}
	for _, in := range f.Inputs {
		if in.Name == "" {
			continue
		}
		switch in.Type {
		case "checkbox", "radio":
			if check(in) {
				v.Add(in.Name, first(in.Value, "on"))
			}
		case "submit", "button", "reset", "image", "file":
		default:
			v.Add(in.Name, in.Value)
		}
	}
	for _, s := range f.Selects {
		if s.Name == "" {
			continue
		}
		choice := s.Selected
		if choose != nil {
			if c := choose(s); c != "" {
				choice = c
			}
		}
		v.Add(s.Name, choice)
	}
	if b.Name != "" {
		v.Add(b.Name, b.Value)
	}
	return v
}

func attr(n *html.Node, key string) string {
	v, _ := attrOK(n, key)
	return v
}

func attrOK(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Namespace == "" && strings.EqualFold(a.Key, key) {
			return a.Val, true
		}
	}
	return "", false
}

func has(n *html.Node, key string) bool {
	_, ok := attrOK(n, key)
	return ok
}

// text is the text inside n with runs of white space folded, as a browser computes
// an accessible name from content.
func text(n *html.Node) string {
	var b strings.Builder
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
			b.WriteByte(' ')
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return strings.Join(strings.Fields(b.String()), " ")
}

// Text is the visible text of a whole page (for failure messages and for pages
// that say why there is no form).
func Text(page string) string {
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		return page
	}
	if body := findElement(doc, atom.Body); body != nil {
		return text(body)
	}
	return text(doc)
}

func findElement(n *html.Node, a atom.Atom) *html.Node {
	if n.Type == html.ElementNode && n.DataAtom == a {
		return n
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if f := findElement(c, a); f != nil {
			return f
		}
	}
	return nil
}

func resolve(base *url.URL, ref string) *url.URL {
	u, err := url.Parse(strings.TrimSpace(ref))
	if err != nil {
		// A broken action submits to the page itself, as browsers do.
		return base
	}
	return base.ResolveReference(u)
}

func method(m string) string {
	if strings.EqualFold(m, "post") {
		return "POST"
	}
	return "GET"
}

func first(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
