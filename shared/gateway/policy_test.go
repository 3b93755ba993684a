package gateway

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

func TestWildcard(t *testing.T) {
	tests := []struct {
		p, s string
		want bool
	}{
		{"arn:aws:execute-api:us-east-1:1:api/local/*/*", "arn:aws:execute-api:us-east-1:1:api/local/POST/mcp", true},
		{"arn:aws:execute-api:us-east-1:1:api/local/*/*", "arn:aws:execute-api:us-east-1:1:api/local/POST/tools/get_issue", true},
		{"arn:aws:execute-api:us-east-1:1:api/local/GET/tools", "arn:aws:execute-api:us-east-1:1:api/local/POST/mcp", false},
		{"arn:aws:execute-api:us-east-1:1:api/prod/*/*", "arn:aws:execute-api:us-east-1:1:api/local/POST/mcp", false},
		{"*", "", true},
		{"", "", true},
		{"", "x", false},
		{"a?c", "abc", true},
		{"a?c", "ac", false},
		{"a*b*c", "aXXbYYc", true},
		{"a*b*c", "aXXbYY", false},
	}
	for _, tt := range tests {
		if got := wildcard(tt.p, tt.s); got != tt.want {
			t.Errorf("wildcard(%q, %q) = %v, want %v", tt.p, tt.s, got, tt.want)
		}
	}
}

func FuzzWildcard(f *testing.F) {
	f.Add("a*b?c", "aXbYc")
	f.Add("***", "")
	f.Add("arn:*/*/*", "arn:x/y/z")
	f.Fuzz(func(t *testing.T, p, s string) {
		if len(p) > 64 || len(s) > 64 {
			return
		}
		// Reference: the same pattern as an anchored regexp.
		var b strings.Builder
		b.WriteString(`(?s)^`)
		for _, r := range p {
			switch r {
			case '*':
				b.WriteString(`.*`)
			case '?':
				b.WriteString(`.`)
			default:
				b.WriteString(regexp.QuoteMeta(string(r)))
			}
		}
		b.WriteString(`$`)
		re, err := regexp.Compile(b.String())
		if err != nil {
			return
		}
		// '?' matches one byte in wildcard and one rune in the regexp: compare on
		// ASCII only.
		for i := 0; i < len(p); i++ {
			if p[i] >= 0x80 {
				return
			}
		}
		for i := 0; i < len(s); i++ {
			if s[i] >= 0x80 {
				return
			}
		}
		if got, want := wildcard(p, s), re.MatchString(s); got != want {
			t.Fatalf("wildcard(%q, %q) = %v, regexp says %v", p, s, got, want)
		}
	})
}

func TestAllows(t *testing.T) {
	arn := "arn:aws:execute-api:us-east-1:000000000000:local/local/POST/mcp"
	stmt := func(effect, res string) events.IAMPolicyStatement {
		return events.IAMPolicyStatement{Action: []string{"execute-api:Invoke"}, Effect: effect, Resource: []string{res}}
	}
	tests := []struct {
		name string
		st   []events.IAMPolicyStatement
		want bool
	}{
		{"allow all", []events.IAMPolicyStatement{stmt("Allow", "arn:aws:execute-api:us-east-1:000000000000:local/local/*/*")}, true},
		{"allow other route", []events.IAMPolicyStatement{stmt("Allow", "arn:aws:execute-api:us-east-1:000000000000:local/local/GET/tools")}, false},
		{"explicit deny wins", []events.IAMPolicyStatement{stmt("Allow", "*"), stmt("Deny", arn)}, false},
		{"deny only", []events.IAMPolicyStatement{stmt("Deny", "*")}, false},
		{"empty", nil, false},
		{"other action", []events.IAMPolicyStatement{{Action: []string{"s3:GetObject"}, Effect: "Allow", Resource: []string{"*"}}}, false},
	}
	for _, tt := range tests {
		a := &authorization{policy: events.APIGatewayCustomAuthorizerPolicy{Version: "2012-10-17", Statement: tt.st}}
		if got := a.allows(arn); got != tt.want {
			t.Errorf("%s: allows = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestPolicyCache(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := newPolicyCache(60*time.Second, 2)
	a := &authorization{principalID: "u1"}
	c.put("k1", a, now)
	if got, ok := c.get("k1", now.Add(59*time.Second)); !ok || got != a {
		t.Fatal("entry not served within its TTL")
	}
	if _, ok := c.get("k1", now.Add(60*time.Second)); ok {
		t.Fatal("entry served after its TTL")
	}
	c.put("k1", a, now)
	c.put("k2", a, now)
	c.put("k3", a, now)
	if n := len(c.entries); n > 2 {
		t.Fatalf("cache holds %d entries, bound is 2", n)
	}
	if _, ok := c.get("k3", now); !ok {
		t.Fatal("newest entry missing")
	}
	off := newPolicyCache(-1, 2)
	off.put("k", a, now)
	if _, ok := off.get("k", now); ok {
		t.Fatal("disabled cache served an entry")
	}
}

func TestMatch(t *testing.T) {
	tests := []struct {
		method, path string
		resource     string
		name         string
		ok           bool
	}{
		{"POST", "/mcp", "/mcp", "", true},
		{"GET", "/mcp", "/mcp", "", true},
		{"GET", "/tools", "/tools", "", true},
		{"POST", "/tools", "", "", false},
		{"POST", "/tools/get_issue", "/tools/{name}", "get_issue", true},
		{"POST", "/tools/", "", "", false},
		{"POST", "/tools/a/b", "", "", false},
		{"GET", "/healthz", "/healthz", "", true},
		{"GET", "/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource/mcp", "", true},
		{"GET", "/nope", "", "", false},
		// The authorization server's routes; name is then the {proxy} value.
		{"POST", "/oauth/token", "/oauth/{proxy+}", "token", true},
		{"GET", "/oauth/grants/revoke", "/oauth/{proxy+}", "grants/revoke", true},
		{"OPTIONS", "/oauth/register", "/oauth/{proxy+}", "register", true},
		{"GET", "/oauth/", "", "", false},
		{"GET", "/oauth", "", "", false},
		{"GET", "/oauth/a//b", "", "", false},
		{"GET", "/.well-known/oauth-authorization-server", "/.well-known/oauth-authorization-server", "", true},
		{"POST", "/.well-known/oauth-authorization-server", "", "", false},
		{"GET", "/.well-known/openid-configuration", "/.well-known/openid-configuration", "", true},
	}
	for _, tt := range tests {
		rt, params, ok := match(tt.method, tt.path, true)
		got := params["name"] + params["proxy"]
		if ok != tt.ok || rt.resource != tt.resource || got != tt.name {
			t.Errorf("match(%s %s) = %+v %v %v", tt.method, tt.path, rt, params, ok)
		}
	}
	// Without an authorization server its routes do not exist.
	if _, _, ok := match("POST", "/oauth/token", false); ok {
		t.Error("/oauth/token matched with no authorization server")
	}
}

// FuzzRouting feeds arbitrary request paths through the stage prefix and the route
// table: a matched path lies inside the stage, a {proxy+} value has no empty
// segment, and the route path rebuilt with the stage is the path asked for.
func FuzzRouting(f *testing.F) {
	for _, p := range []string{"/prod/mcp", "/prod/oauth/token", "/prod/oauth/a//b", "/prod", "/", "/production/mcp", "/prod/tools/x", "/.well-known/oauth-authorization-server/prod"} {
		f.Add("GET", p)
		f.Add("POST", p)
	}
	g := New(Config{Stage: "prod", StageInPath: true}).(*gateway)
	f.Fuzz(func(t *testing.T, method, path string) {
		route, ok := g.inStage(path)
		if !ok {
			return
		}
		if g.fullPath(route) != path || !strings.HasPrefix(route, "/") {
			t.Fatalf("inStage(%q) = %q", path, route)
		}
		rt, params, ok := match(method, route, true)
		if !ok {
			return
		}
		if p, has := params["proxy"]; has && (p == "" || strings.Contains(p, "//") || strings.HasSuffix(p, "/") || "/oauth/"+p != route) {
			t.Fatalf("match(%q) proxy = %q", route, p)
		}
		if rt.method != "" && rt.method != method {
			t.Fatalf("match(%s %q) = %+v", method, route, rt)
		}
	})
}
