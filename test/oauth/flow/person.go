package flow

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"slices"
	"strings"
)

// maxPage bounds what a person reads of one page.
const maxPage = 1 << 20

// Person signs in on the dev sign-in page and answers the consent page of one
// authorization server with plain HTTP and a cookie jar, as a browser without
// JavaScript would: every page is parsed, and the forms are submitted as their
// controls say, by the accessible names the page contract promises.
type Person struct {
	issuer *url.URL
	client *http.Client
}

// NewPerson is a person with no cookies yet, about to use the authorization server
// whose issuer is given.
func NewPerson(issuer string) (*Person, error) {
	u, err := url.Parse(issuer)
	if err != nil {
		return nil, err
	}
	jar, err := cookiejar.New(nil)
	if err != nil {
		return nil, err
	}
	p := &Person{issuer: u}
	p.client = &http.Client{Jar: jar, CheckRedirect: p.checkRedirect}
	return p, nil
}

// HTTPClient is the person's client, cookies included (for a test that hands the
// same browser session to a client library).
func (p *Person) HTTPClient() *http.Client { return p.client }

// checkRedirect follows redirects within the authorization server and stops at the
// first one that leaves it: that one goes to the client's redirect URI.
func (p *Person) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("flow: more than 10 redirects")
	}
	if req.URL.Scheme != p.issuer.Scheme || req.URL.Host != p.issuer.Host {
		return http.ErrUseLastResponse
	}
	return nil
}

// Answer is what the person does on the pages.
type Answer struct {
	// User is the dev sign-in button to press (a user id).
	User string
	// Scopes, when not nil, are exactly the scopes to tick on the consent page;
	// nil leaves the page's own choice.
	Scopes []string
	// Workspace, when set, is chosen in the workspace chooser.
	Workspace string
	// Deny presses Deny instead of Allow.
	Deny bool
}

// ConsentPage is what one consent page offered.
type ConsentPage struct {
	URL string
	// Scopes are the labels of its scope checkboxes, in page order: what is being
	// asked for now (scopes granted before are not offered again).
	Scopes []string
	// Checked are the scopes ticked when the page came.
	Checked []string
	// Workspaces are the options of the workspace chooser, if there is one.
	Workspaces []string
	// Text is the page's visible text.
	Text string
}

// Authorize opens authURL and goes through the sign-in and consent pages until the
// server redirects to the client. It returns that redirect (the client's redirect
// URI with a code or an error, not requested) and every consent page it answered.
func (p *Person) Authorize(ctx context.Context, authURL string, a Answer) (*url.URL, []ConsentPage, error) {
	var consents []ConsentPage
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return nil, nil, err
	}
	for range 8 {
		resp, page, err := p.do(req)
		if err != nil {
			return nil, consents, err
		}
		if loc := resp.Header.Get("Location"); resp.StatusCode >= 300 && resp.StatusCode < 400 && loc != "" {
			to, err := resp.Request.URL.Parse(loc)
			if err != nil {
				return nil, consents, fmt.Errorf("flow: redirect to %q: %w", loc, err)
			}
			return to, consents, nil
		}
		if resp.StatusCode != http.StatusOK {
			return nil, consents, fmt.Errorf("flow: %s %s: %s: %s", req.Method, req.URL.Redacted(), resp.Status, Text(page))
		}
		if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct != "text/html" {
			return nil, consents, fmt.Errorf("flow: %s is %q, not a page", resp.Request.URL.Redacted(), ct)
		}
		forms, err := ParseForms(strings.NewReader(page), resp.Request.URL)
		if err != nil {
			return nil, consents, err
		}
		next, consent, err := a.respond(forms, resp.Request.URL, page)
		if err != nil {
			return nil, consents, err
		}
		if consent != nil {
			consents = append(consents, *consent)
		}
		if req, err = next.request(ctx); err != nil {
			return nil, consents, err
		}
	}
	return nil, consents, errors.New("flow: no redirect to the client after 8 pages")
}

// submission is a form about to be sent.
type submission struct {
	form   Form
	values url.Values
}

func (s submission) request(ctx context.Context) (*http.Request, error) {
	if s.form.Method == http.MethodGet {
		u := *s.form.Action
		u.RawQuery = s.values.Encode()
		return http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.form.Action.String(), strings.NewReader(s.values.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return req, nil
}

// respond picks the page's form and fills it: a form with Allow and Deny is the
// consent page, one with a button named after the user is the sign-in page.
func (a Answer) respond(forms []Form, at *url.URL, page string) (submission, *ConsentPage, error) {
	for _, f := range forms {
		allow, okA := f.Button("Allow")
		deny, okD := f.Button("Deny")
		if !okA || !okD {
			continue
		}
		c := &ConsentPage{URL: at.String(), Scopes: f.Checkboxes(), Text: Text(page)}
		for _, in := range f.Inputs {
			if in.Type == "checkbox" && in.Checked {
				c.Checked = append(c.Checked, in.Label)
			}
		}
		for _, s := range f.Selects {
			if s.Name == "workspace" {
				c.Workspaces = s.Options
			}
		}
		b := allow
		if a.Deny {
			b = deny
		}
		values := f.Values(b, func(in Input) bool {
			if a.Scopes == nil || in.Type != "checkbox" {
				return in.Checked
			}
			return slices.Contains(a.Scopes, in.Label)
		}, func(s Select) string {
			if s.Name == "workspace" {
				return a.Workspace
			}
			return ""
		})
		if a.Workspace != "" && !slices.Contains(c.Workspaces, a.Workspace) {
			return submission{}, c, fmt.Errorf("flow: the consent page offers workspaces %v, not %q", c.Workspaces, a.Workspace)
		}
		return submission{f, values}, c, nil
	}
	for _, f := range forms {
		if b, ok := f.Button(a.User); ok && a.User != "" {
			return submission{f, f.Values(b, func(in Input) bool { return in.Checked }, nil)}, nil, nil
		}
	}
	return submission{}, nil, fmt.Errorf("flow: %s is neither a sign-in page with a button %q nor a consent page: %s", at.Redacted(), a.User, Text(page))
}

func (p *Person) do(req *http.Request) (*http.Response, string, error) {
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxPage))
	if err != nil {
		return nil, "", err
	}
	return resp, string(b), nil
}
