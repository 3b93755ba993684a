package ratelimit

import (
	"encoding/json"
	"net/http"
	"testing"
)

func TestEdgeScopeMatches(t *testing.T) {
	bearer := http.Header{"Authorization": {"Bearer aac_x"}}
	lower := http.Header{"Authorization": {"bearer aac_x"}}
	basic := http.Header{"Authorization": {"Basic ZGV2OnB3"}}
	none := http.Header{}
	tests := []struct {
		name  string
		scope EdgeScope
		path  string
		h     http.Header
		want  bool
	}{
		{"no token", ScopeNoBearer, "/mcp", none, true},
		{"basic is no bearer", ScopeNoBearer, "/mcp", basic, true},
		{"bearer is not unauthenticated", ScopeNoBearer, "/mcp", bearer, false},
		{"bearer", ScopeBearer, "/mcp", bearer, true},
		{"bearer scheme in lower case", ScopeBearer, "/mcp", lower, true},
		{"no token is not bearer", ScopeBearer, "/mcp", none, false},
		{"token endpoint", ScopeOAuthToken, "/oauth/token", none, true},
		{"revocation on the stage", ScopeOAuthToken, "/prod/oauth/revoke", none, true},
		{"token endpoint encoded and upper-case", ScopeOAuthToken, "/OAuth/%74oken", none, true},
		{"authorize is not the token endpoint", ScopeOAuthToken, "/oauth/authorize", none, false},
		{"registration", ScopeOAuthRegister, "/oauth/register", none, true},
		{"registration is not the token endpoint", ScopeOAuthToken, "/oauth/register", none, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.scope.Matches(tt.path, tt.h); got != tt.want {
				t.Errorf("Matches(%q) = %v, want %v", tt.path, got, tt.want)
			}
		})
	}
}

// TestDefaultEdgeLimitsHoldAnOrganisation: 500 people at one call a second through 8
// addresses stay under every limit their requests count against, and a flood without
// a token is stopped at the unauthenticated limit.
func TestDefaultEdgeLimitsHoldAnOrganisation(t *testing.T) {
	const people, perSecond, addresses = 500, 1, 8
	window := int(EdgeWindow.Seconds())
	l := DefaultEdgeLimits()
	perAddress := people * perSecond * window / addresses
	perToken := perSecond * window
	for _, r := range l.Rules() {
		if r.Limit < 10 {
			t.Errorf("%s: limit %d is under WAF's minimum of 10", r.Name, r.Limit)
		}
		if r.Scope != ScopeBearer {
			continue
		}
		want := perAddress
		if r.Key == KeyToken {
			want = perToken
		}
		if r.Limit <= want {
			t.Errorf("%s: limit %d does not hold %d requests per window", r.Name, r.Limit, want)
		}
	}
	if l.Unauthenticated >= l.BearerPerAddress {
		t.Errorf("the unauthenticated limit %d is not tighter than the bearer one %d", l.Unauthenticated, l.BearerPerAddress)
	}
}

func TestEdgeRuleBody(t *testing.T) {
	for _, r := range DefaultEdgeLimits().Rules() {
		var m map[string]string
		if err := json.Unmarshal([]byte(r.Body()), &m); err != nil {
			t.Fatalf("%s: %v", r.Name, err)
		}
		if r.OAuth && m["error"] != "temporarily_unavailable" || !r.OAuth && m["code"] != "rate_limited" {
			t.Errorf("%s: body %s", r.Name, r.Body())
		}
	}
}
