package main

import (
	"maps"
	"slices"

	"github.com/aws/aws-cdk-go/awscdk/v2/awswafv2"
	"github.com/aws/jsii-runtime-go"
)

// WAF for the authorization server (docs/deploy.md, "WAF and the OAuth endpoints").
//
// Two kinds of rule. Per-IP rate limits on the endpoints that authenticate clients
// (token, revocation) and that create state (registration), tighter than the API-wide
// limit: WAF answers a flood before it costs a Lambda invocation or a DynamoDB write.
// And an exception to the core rule set: its URL-inclusion rules (GenericRFI_*,
// EC2MetaDataSSRF_*) block any request whose query or body carries a URL with an IPv4
// or loopback host, which is exactly what an OAuth request of a native MCP client is
// (redirect_uri=http://127.0.0.1:PORT/callback), and registrations and token requests
// repeat it. Those rules only count; a rule after the group blocks on their labels
// everywhere except the OAuth endpoints, where URLs are data the server compares
// and never fetches (the one it does fetch, a client metadata document, goes through
// its own SSRF checks in shared/oauth/clientmeta).

// Rule priorities after the existing three (0-2), in evaluation order.
const (
	priorityURLInclusion  = 3
	priorityOAuthToken    = 4
	priorityOAuthRegister = 5
)

// urlInclusionRules are the core rule set rules that misread OAuth parameters, with
// the labels they add (AWS WAF developer guide, "Core rule set (CRS) managed rule
// group").
var urlInclusionRules = map[string]string{
	"GenericRFI_QUERYARGUMENTS":      "awswaf:managed:aws:core-rule-set:GenericRFI_QueryArguments",
	"GenericRFI_BODY":                "awswaf:managed:aws:core-rule-set:GenericRFI_Body",
	"EC2MetaDataSSRF_QUERYARGUMENTS": "awswaf:managed:aws:core-rule-set:EC2MetaDataSSRF_QueryArguments",
	"EC2MetaDataSSRF_BODY":           "awswaf:managed:aws:core-rule-set:EC2MetaDataSSRF_Body",
}

// oauthEndpointPath matches, exactly and before any decoding, the URI paths (on the
// stage URL or on a custom domain) of the endpoints whose parameters are URLs. A path
// that only decodes to one of them does not match, so it stays blocked.
var oauthEndpointPath = `^(/` + stageName + `)?/oauth/(authorize|token|register|revoke)$`

func ptr[T any](v T) *T { return &v }

// sortedRuleNames keeps the template (and its diff) stable.
func sortedRuleNames() []string { return slices.Sorted(maps.Keys(urlInclusionRules)) }

// countURLInclusionRules are the core rule set's action overrides for those rules.
func countURLInclusionRules() []any {
	var out []any
	for _, name := range sortedRuleNames() {
		out = append(out, &awswafv2.CfnWebACL_RuleActionOverrideProperty{
			Name:        jsii.String(name),
			ActionToUse: &awswafv2.CfnWebACL_RuleActionProperty{Count: &map[string]any{}},
		})
	}
	return out
}

// urlInclusionRule blocks on the core rule set's URL-inclusion labels outside the
// OAuth endpoints.
func urlInclusionRule(visibility func(string) *awswafv2.CfnWebACL_VisibilityConfigProperty) any {
	var labels []any
	for _, name := range sortedRuleNames() {
		labels = append(labels, &awswafv2.CfnWebACL_StatementProperty{
			LabelMatchStatement: &awswafv2.CfnWebACL_LabelMatchStatementProperty{Scope: jsii.String("LABEL"), Key: jsii.String(urlInclusionRules[name])},
		})
	}
	none := &[]any{&awswafv2.CfnWebACL_TextTransformationProperty{Priority: jsii.Number(0), Type: jsii.String("NONE")}}
	return &awswafv2.CfnWebACL_RuleProperty{
		Name:     jsii.String("UrlInclusionOutsideOAuth"),
		Priority: jsii.Number(priorityURLInclusion),
		Statement: &awswafv2.CfnWebACL_StatementProperty{AndStatement: &awswafv2.CfnWebACL_AndStatementProperty{Statements: &[]any{
			&awswafv2.CfnWebACL_StatementProperty{OrStatement: &awswafv2.CfnWebACL_OrStatementProperty{Statements: &labels}},
			&awswafv2.CfnWebACL_StatementProperty{NotStatement: &awswafv2.CfnWebACL_NotStatementProperty{
				Statement: &awswafv2.CfnWebACL_StatementProperty{RegexMatchStatement: &awswafv2.CfnWebACL_RegexMatchStatementProperty{
					FieldToMatch:        &awswafv2.CfnWebACL_FieldToMatchProperty{UriPath: &map[string]any{}},
					RegexString:         jsii.String(oauthEndpointPath),
					TextTransformations: none,
				}},
			}},
		}}},
		Action:           &awswafv2.CfnWebACL_RuleActionProperty{Block: &map[string]any{}},
		VisibilityConfig: visibility("aacmcp-url-inclusion-outside-oauth"),
	}
}

// pathContains matches s anywhere in the path, decoded and lower-cased: a counting
// rule must see every spelling the function would serve as the endpoint (stage or
// not), as ratelimit.EdgeScope.Matches reads it.
func pathContains(s string) *awswafv2.CfnWebACL_StatementProperty {
	return &awswafv2.CfnWebACL_StatementProperty{ByteMatchStatement: &awswafv2.CfnWebACL_ByteMatchStatementProperty{
		FieldToMatch:         &awswafv2.CfnWebACL_FieldToMatchProperty{UriPath: &map[string]any{}},
		PositionalConstraint: jsii.String("CONTAINS"),
		SearchString:         jsii.String(s),
		TextTransformations: &[]any{
			&awswafv2.CfnWebACL_TextTransformationProperty{Priority: jsii.Number(0), Type: jsii.String("URL_DECODE")},
			&awswafv2.CfnWebACL_TextTransformationProperty{Priority: jsii.Number(1), Type: jsii.String("LOWERCASE")},
		},
	}}
}
