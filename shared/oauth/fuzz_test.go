package oauth

import (
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/aacworkflow/aacmcp/shared/auth"
)

// The decoders of outside input: each must refuse or accept without panicking, and
// what it accepts must satisfy what the handlers rely on.

func FuzzParseScope(f *testing.F) {
	for _, s := range []string{"", "issues:read", "issues:read issues:write", "a  b", "issues:read,comments:read", "\x00", strings.Repeat("x ", 100)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, e := parseScope(s)
		if e != nil {
			if e.Code != ErrInvalidScope || e.Description == "" {
				t.Fatalf("error %+v", e)
			}
			return
		}
		if !subset(got, auth.AllScopes) || !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
			t.Fatalf("parseScope(%q) = %q: not sorted, unique, known scopes", s, got)
		}
	})
}

func FuzzParseAuthorizeQuery(f *testing.F) {
	f.Add(authzQuery().Encode())
	f.Add(authzQuery(func(v url.Values) { v.Set("scope", "issues:read"); v.Set("resource", "https://h/mcp") }).Encode())
	f.Add("response_type=code&code_challenge=x&code_challenge_method=plain")
	f.Add("state=a&state=b")
	f.Add("%zz")
	f.Fuzz(func(t *testing.T, raw string) {
		v, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		p, e := parseAuthorizeParams(v)
		if e != nil {
			if e.Description == "" {
				t.Fatalf("error without a description: %+v", e)
			}
			return
		}
		if v.Get("response_type") != "code" || v.Get("code_challenge_method") != "S256" || !validChallenge(p.CodeChallenge) || !subset(p.Scopes, auth.AllScopes) {
			t.Fatalf("accepted %q as %+v", raw, p)
		}
		if len(p.State) > maxParamLen || len(p.Resource) > maxParamLen*2 {
			t.Fatalf("unbounded value accepted: %d bytes", len(p.State))
		}
	})
}

func FuzzParseTokenRequest(f *testing.F) {
	f.Add("grant_type=authorization_code&code=c&redirect_uri=https%3A%2F%2Fa%2Fcb&code_verifier="+testVerifier, "")
	f.Add("grant_type=refresh_token&refresh_token=aar_x&scope=issues%3Aread", "Basic YTpi")
	f.Add("grant_type=refresh_token&client_id=a&client_id=b", "Basic %%%")
	f.Add("grant_type=password", "Bearer x")
	f.Fuzz(func(t *testing.T, raw, header string) {
		v, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		req, e := parseTokenRequest(v)
		if e == nil {
			switch req.GrantType {
			case grantCode:
				if req.Code == "" || req.RedirectURI == "" || !validVerifier(req.CodeVerifier) {
					t.Fatalf("accepted an incomplete code request: %+v", req)
				}
			case grantRefresh:
				if req.RefreshToken == "" || !subset(req.Scopes, auth.AllScopes) {
					t.Fatalf("accepted an incomplete refresh request: %+v", req)
				}
			default:
				t.Fatalf("accepted grant type %q", req.GrantType)
			}
		} else if e.Description == "" {
			t.Fatalf("error without a description: %+v", e)
		}
		cred, e := parseClientAuth(header, v)
		if e == nil {
			if cred.ID == "" || !slices.Contains(authMethods, cred.Method) ||
				cred.Method == authNone && cred.Secret != "" || cred.Method == authSecretPost && cred.Secret == "" {
				t.Fatalf("accepted credentials %+v", cred)
			}
		} else if e.Code != ErrInvalidClient && e.Code != ErrInvalidRequest {
			t.Fatalf("client auth error %+v", e)
		}
	})
}

func FuzzParseConsentForm(f *testing.F) {
	f.Add("request=r&csrf=c&action=allow&scope=issues%3Aread&workspace=demo")
	f.Add("request=r&action=deny")
	f.Add("request=r&request=s&action=allow")
	f.Add("action=allow&scope=x")
	f.Fuzz(func(t *testing.T, raw string) {
		v, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		form, e := parseConsentForm(v)
		if e != nil {
			if e.Description == "" {
				t.Fatalf("error without a description: %+v", e)
			}
			return
		}
		if form.Request == "" || len(form.Request) > maxParamLen || !subset(form.Scopes, auth.AllScopes) || !slices.IsSorted(form.Scopes) {
			t.Fatalf("accepted %q as %+v", raw, form)
		}
		if form.Allow != (v.Get("action") == "allow") {
			t.Fatalf("action %q decoded as allow=%v", v.Get("action"), form.Allow)
		}
	})
}
