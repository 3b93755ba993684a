package oauth

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"net/http"
	"strings"
)

//go:embed templates/*.html templates/style.css
var templateFS embed.FS

var pageNames = []string{"error", "signin", "nomember", "consent", "grants", "approve"}

// parsePages parses each page with the shared layout. html/template escapes every
// value by its context, so a client's name or a redirect URI is text, never markup.
func parsePages() (map[string]*template.Template, error) {
	out := make(map[string]*template.Template, len(pageNames))
	for _, n := range pageNames {
		t, err := template.New(n).ParseFS(templateFS, "templates/base.html", "templates/"+n+".html")
		if err != nil {
			return nil, fmt.Errorf("oauth: page %s: %w", n, err)
		}
		out[n] = t
	}
	return out, nil
}

// Views of the pages.
type (
	errorView struct{ Title, Message string }

	signinView struct {
		Action, Request, CSRF, Workspace string
		Users                            []string
	}

	noMemberView struct{ Who, Email string }
)

// securityHeaders are the headers of every page. No script runs anywhere, styles
// come only from our stylesheet, no page can be framed (clickjacking on the consent
// page), and forms may post only here. formOrigin is added to form-action on the
// consent page: Chromium applies form-action to the redirect that follows the POST,
// which goes to the client's redirect URI.
func securityHeaders(h http.Header, formOrigin string) {
	formAction := "'self'"
	if formOrigin != "" {
		formAction += " " + formOrigin
	}
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self'; form-action "+formAction+"; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	h.Set("Pragma", "no-cache")
}

// page renders a page with form-action 'self'.
func (q *request) page(status int, name string, view any) { q.pageCSP(status, name, view, "") }

func (q *request) pageCSP(status int, name string, view any, formOrigin string) {
	var buf bytes.Buffer
	err := q.s.pages[name].ExecuteTemplate(&buf, "base", struct {
		Style string
		V     any
	}{q.url(pathStyle), view})
	if err != nil {
		q.s.log.ErrorContext(q.ctx(), "oauth: rendering a page failed", "page", name, "err", err)
		status, formOrigin = http.StatusInternalServerError, ""
		buf.Reset()
		buf.WriteString("<!DOCTYPE html><title>Error</title><p>The page could not be rendered.</p>")
	}
	h := q.w.Header()
	securityHeaders(h, formOrigin)
	h.Set("Content-Type", "text/html; charset=utf-8")
	q.w.WriteHeader(status)
	_, _ = q.w.Write(buf.Bytes())
}

// errorPage renders the error page.
func (q *request) errorPage(status int, title, message string) {
	q.page(status, "error", errorView{Title: title, Message: message})
}

// errorPageFor shows e: a server failure as 500, any other refusal as 400.
func (q *request) errorPageFor(e *Error, title string) {
	status := http.StatusBadRequest
	if e.Code == ErrServerError {
		status, title = http.StatusInternalServerError, "Something went wrong"
	}
	if title == "" {
		title = "This request was refused"
	}
	q.errorPage(status, title, e.Description)
}

func serveStyle(q *request) {
	b, err := templateFS.ReadFile("templates/style.css")
	if err != nil {
		http.Error(q.w, "no stylesheet", http.StatusInternalServerError)
		return
	}
	h := q.w.Header()
	h.Set("Content-Type", "text/css; charset=utf-8")
	h.Set("Cache-Control", "public, max-age=3600")
	h.Set("X-Content-Type-Options", "nosniff")
	_, _ = q.w.Write(b)
}

// annotationText describes a tool's MCP annotations on the consent page.
func annotationText(readOnly, destructive, idempotent, openWorld bool) string {
	var parts []string
	if readOnly {
		parts = append(parts, "read-only")
	} else {
		parts = append(parts, "changes data")
	}
	if destructive {
		parts = append(parts, "destructive")
	}
	if idempotent {
		parts = append(parts, "idempotent")
	}
	if openWorld {
		parts = append(parts, "reaches outside AACWorkflow")
	}
	return "(" + strings.Join(parts, ", ") + ")"
}
