package flow

import (
	"net/url"
	"slices"
	"strings"
	"testing"
)

func TestParseForms(t *testing.T) {
	base, _ := url.Parse("http://127.0.0.1:8080/oauth/authorize?x=1")
	tests := []struct {
		name   string
		page   string
		check  func(t *testing.T, fs []Form)
		nforms int
	}{
		{
			name:   "sign-in page: one button per member, named by its text",
			page:   `<!DOCTYPE html><form method="post" action="/oauth/signin"><input type="hidden" name="request" value="r1"><input type="hidden" name="csrf" value="c1"><ul><li><button type="submit" name="user" value="dev">dev</button><li><button name="user" value="agent-1"> agent-1 </button></ul></form>`,
			nforms: 1,
			check: func(t *testing.T, fs []Form) {
				f := fs[0]
				if f.Method != "POST" || f.Action.String() != "http://127.0.0.1:8080/oauth/signin" {
					t.Errorf("form %s %s", f.Method, f.Action)
				}
				b, ok := f.Button("agent-1")
				if !ok || b.Value != "agent-1" {
					t.Fatalf("button agent-1: %+v %v", b, ok)
				}
				if got := f.Values(b, func(Input) bool { return false }, nil).Encode(); got != "csrf=c1&request=r1&user=agent-1" {
					t.Errorf("values %s", got)
				}
			},
		},
		{
			name: "consent page: checkboxes by label, a workspace chooser, Allow and Deny",
			page: `<html><body><form method="POST" action="consent">
<input type="hidden" name="request" value="a&amp;b">
<label for="workspace">Workspace</label><select id="workspace" name="workspace"><option value="w1">w1 (admin)</option><option value="w2" selected>w2 (member)</option></select>
<input type="checkbox" id="s1" name="scope" value="issues:read" checked><label for="s1">issues:read</label>
<input type="checkbox" id="s2" name="scope" value="issues:write"><label for="s2">issues:write</label>
<button type="submit" name="action" value="allow">Allow</button><button type="submit" name="action" value="deny">Deny</button>
<button type="button">Help</button></form></body></html>`,
			nforms: 1,
			check: func(t *testing.T, fs []Form) {
				f := fs[0]
				if f.Action.String() != "http://127.0.0.1:8080/oauth/consent" {
					t.Errorf("action %s", f.Action)
				}
				if got := f.Checkboxes(); !slices.Equal(got, []string{"issues:read", "issues:write"}) {
					t.Errorf("checkboxes %v", got)
				}
				if len(f.Selects) != 1 || f.Selects[0].Label != "Workspace" || f.Selects[0].Selected != "w2" || !slices.Equal(f.Selects[0].Options, []string{"w1", "w2"}) {
					t.Errorf("select %+v", f.Selects)
				}
				if _, ok := f.Button("Help"); ok {
					t.Error("a type=button is not a submit button")
				}
				allow, _ := f.Button("Allow")
				v := f.Values(allow, func(in Input) bool { return in.Label == "issues:write" }, func(Select) string { return "w1" })
				if got := v.Encode(); got != "action=allow&request=a%26b&scope=issues%3Awrite&workspace=w1" {
					t.Errorf("values %s", got)
				}
			},
		},
		{
			name:   "no form, and a form with no method or action submits to the page by GET",
			page:   `<p>nothing</p><form><input name="q" value="v"><input type="submit" value="Go"></form>`,
			nforms: 1,
			check: func(t *testing.T, fs []Form) {
				f := fs[0]
				if f.Method != "GET" || f.Action.String() != base.String() {
					t.Errorf("form %s %s", f.Method, f.Action)
				}
				if b, ok := f.Button("Go"); !ok || b.Name != "" {
					t.Errorf("submit input %+v %v", b, ok)
				}
			},
		},
		{name: "plain text", page: "not html at all", nforms: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs, err := ParseForms(strings.NewReader(tt.page), base)
			if err != nil {
				t.Fatal(err)
			}
			if len(fs) != tt.nforms {
				t.Fatalf("%d forms, want %d: %+v", len(fs), tt.nforms, fs)
			}
			if tt.check != nil {
				tt.check(t, fs)
			}
		})
	}
}

func TestText(t *testing.T) {
	if got := Text("<html><head><title>T</title></head><body><h1>No  access</h1>\n<p>ask an <b>admin</b></p></body></html>"); got != "No access ask an admin" {
		t.Errorf("Text = %q", got)
	}
}

// FuzzParseForms: the pages come from the server under test; whatever they hold,
// parsing never panics and every form gets an absolute action.
func FuzzParseForms(f *testing.F) {
	f.Add(`<form method="post" action="/x"><input type="checkbox" id="a" checked><label for="a">s</label><select name="w"><option>1</select><button>b</button></form>`)
	f.Add(`<form action="::bad"><form><input type=submit></form></form>`)
	f.Add(`<select><option value="">x</option></select><label for>`)
	base, _ := url.Parse("http://127.0.0.1:1/p")
	f.Fuzz(func(t *testing.T, page string) {
		fs, err := ParseForms(strings.NewReader(page), base)
		if err != nil {
			return
		}
		for _, fm := range fs {
			if fm.Action == nil || !fm.Action.IsAbs() {
				t.Fatalf("action %v is not absolute", fm.Action)
			}
			if fm.Method != "GET" && fm.Method != "POST" {
				t.Fatalf("method %q", fm.Method)
			}
			for _, b := range fm.Buttons {
				_ = fm.Values(b, func(Input) bool { return true }, nil)
			}
		}
	})
}
