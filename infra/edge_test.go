package main

import (
	"testing"

	"github.com/aacworkflow/aacmcp/shared/ratelimit"
)

// bearerScope is the scope-down statement of the rules that count requests with a
// bearer token, as ratelimit.HasBearer reads them.
const bearerScope = `{"ByteMatchStatement":{"FieldToMatch":{"SingleHeader":{"Name":"authorization"}},"PositionalConstraint":"STARTS_WITH","SearchString":"bearer ","TextTransformations":[{"Priority":0,"Type":"LOWERCASE"}]}}`

// TestEdgeRateRules pins the rate rules that let one organisation's hosted-client
// traffic through while a flood from one address is stopped: per address only
// without a bearer token, per token (the Authorization header as a custom key) and
// loosely per address with one; each answers 429 with Retry-After and the body
// `aacmcp gateway` answers with. Both places they live: the distribution's web
// ACL, and the stage's without the front door.
func TestEdgeRateRules(t *testing.T) {
	for name, s := range map[string]*synthesized{"plain": plain, "full": full, "bare": bare} {
		t.Run(name, func(t *testing.T) {
			acl := rateACLOf(t, s)
			byName := map[string]any{}
			for _, r := range asList(acl["Rules"]) {
				byName[path(r, "Name").(string)] = r
			}
			for _, want := range ratelimit.DefaultEdgeLimits().Rules() {
				if s == full && want.Name == "OAuthTokenRateLimitPerIp" {
					want.Limit = 120 // fullContext's
				}
				if s == full && want.Name == "OAuthRegisterRateLimitPerIp" {
					want.Limit = 10
				}
				r, ok := byName[want.Name]
				if !ok {
					t.Errorf("no rule %s", want.Name)
					continue
				}
				rb := path(r, "Statement", "RateBasedStatement")
				if path(rb, "Limit") != float64(want.Limit) || path(rb, "EvaluationWindowSec") != 300.0 {
					t.Errorf("%s: %s, want limit %d per 300 s", want.Name, jsonText(rb), want.Limit)
				}
				key := jsonText(path(rb, "AggregateKeyType"))
				if want.Key == ratelimit.KeyToken {
					if key != `"CUSTOM_KEYS"` || jsonText(path(rb, "CustomKeys")) != `[{"Header":{"Name":"authorization","TextTransformations":[{"Priority":0,"Type":"NONE"}]}}]` {
						t.Errorf("%s counts by %s %s, want the Authorization header", want.Name, key, jsonText(path(rb, "CustomKeys")))
					}
				} else if key != `"IP"` {
					t.Errorf("%s counts by %s, want IP", want.Name, key)
				}
				sd := jsonText(path(rb, "ScopeDownStatement"))
				switch want.Scope {
				case ratelimit.ScopeBearer:
					if sd != bearerScope {
						t.Errorf("%s scope-down = %s, want requests with a bearer token", want.Name, sd)
					}
				case ratelimit.ScopeNoBearer:
					if sd != `{"NotStatement":{"Statement":`+bearerScope+`}}` {
						t.Errorf("%s scope-down = %s, want requests without a bearer token", want.Name, sd)
					}
				}
				resp := path(r, "Action", "Block", "CustomResponse")
				if path(resp, "ResponseCode") != 429.0 || jsonText(path(resp, "ResponseHeaders")) != `[{"Name":"Retry-After","Value":"60"}]` {
					t.Errorf("%s answers %s, want 429 with Retry-After: 60", want.Name, jsonText(resp))
				}
				key2, _ := path(resp, "CustomResponseBodyKey").(string)
				if got := path(acl, "CustomResponseBodies", key2, "Content"); got != want.Body() {
					t.Errorf("%s body %v, want %s", want.Name, got, want.Body())
				}
			}
		})
	}
}

// TestStageThrottlingHoldsAnOrganisation: the stage's throttling is one budget for
// every caller; its defaults hold 500 people at one call a second.
func TestStageThrottlingHoldsAnOrganisation(t *testing.T) {
	for _, id := range plain.raw.ofType("AWS::ApiGateway::Stage") {
		for _, ms := range asList(plain.raw.Resources[id].Properties["MethodSettings"]) {
			if rate, _ := path(ms, "ThrottlingRateLimit").(float64); rate < 500 {
				t.Errorf("stage throttling %s, want at least 500 requests a second", jsonText(ms))
			}
		}
	}
}
