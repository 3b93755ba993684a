package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigateway"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscertificatemanager"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awswafv2"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/aacworkflow/aacmcp/infra/config"
	"github.com/aacworkflow/aacmcp/shared/apigw"
	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/audit/accesslog"
	"github.com/aacworkflow/aacmcp/shared/ratelimit"
)

const (
	stageName = "prod"
	// authorizerCacheSeconds: a revoked token keeps working at most this long.
	authorizerCacheSeconds = 60
	// wellKnownPath is the RFC 9728 protected resource metadata route.
	wellKnownPath = "/.well-known/oauth-protected-resource"
)

// route is one API route and whether a bearer token is required.
type route struct {
	method string
	path   string
	authed bool
}

// routes is the HTTP surface (docs/architecture.md section 5). Everything that runs a tool is
// behind the authorizer; discovery and liveness are not, because a client must be able
// to learn how to authenticate before it has a token.
var routes = []route{
	{"POST", "/mcp", true},
	// The function answers GET and DELETE on /mcp with 405 (stateless: no SSE stream,
	// no session to end), which is what MCP clients probe for. Without these methods
	// API Gateway would answer them itself with a misleading 404.
	{"GET", "/mcp", true},
	{"DELETE", "/mcp", true},
	{"GET", "/tools", true},
	{"POST", "/tools/{name}", true},
	{"GET", wellKnownPath, false},
	// RFC 9728 section 3.1: the metadata of resource https://host/stage/mcp is also
	// published at the path-suffixed well-known URL, where current MCP clients look first.
	{"GET", wellKnownPath + "/mcp", false},
	{"GET", "/healthz", false},
}

// api is the public entry point.
type api struct {
	rest      awsapigateway.RestApi
	accessLog awslogs.LogGroup
	webACL    awswafv2.CfnWebACL
	// baseURL ends with "/"; it is the custom domain when one is configured, else the
	// distribution's, else the stage's.
	baseURL *string
	// front is the CloudFront front door; nil with frontDoor=false.
	front *frontDoor
}

// newAPI defines the REST API; edge is nil without the front door.
func newAPI(scope constructs.Construct, cfg config.Config, fns *functionSet, edge *edgeStack) *api {
	a := &api{}
	stack := awscdk.Stack_Of(scope)
	a.accessLog = awslogs.NewLogGroup(scope, jsii.String("ApiAccessLogs"), &awslogs.LogGroupProps{
		Retention:     retention(cfg.LogRetentionDays),
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})

	props := &awsapigateway.RestApiProps{
		Description: jsii.String("aacmcp remote MCP server"),
		// Regional: WAF attaches to the stage directly, and a custom domain uses a
		// certificate from this region.
		EndpointConfiguration: &awsapigateway.EndpointConfiguration{
			Types: &[]awsapigateway.EndpointType{awsapigateway.EndpointType_REGIONAL},
		},
		// Execution logs (errors only) need the account's API Gateway CloudWatch role.
		CloudWatchRole: jsii.Bool(true),
		DeployOptions: &awsapigateway.StageOptions{
			StageName:            jsii.String(stageName),
			AccessLogDestination: awsapigateway.NewLogGroupLogDestination(a.accessLog),
			// The forwarder decodes exactly this format (unauthenticated 401s become
			// audit records), so it is defined next to the decoder.
			AccessLogFormat: awsapigateway.AccessLogFormat_Custom(jsii.String(accesslog.Format)),
			LoggingLevel:    awsapigateway.MethodLoggingLevel_ERROR,
			// Request and response bodies hold issue text: never in execution logs.
			DataTraceEnabled:     jsii.Bool(false),
			MetricsEnabled:       jsii.Bool(true),
			TracingEnabled:       jsii.Bool(true),
			ThrottlingRateLimit:  jsii.Number(float64(cfg.APIRateLimit)),
			ThrottlingBurstLimit: jsii.Number(float64(cfg.APIBurstLimit)),
		},
	}
	if cfg.DomainName != "" && edge == nil {
		// One public URL: the issuer, the Cognito callback and the resource metadata
		// all name the custom domain, so a client on the execute-api URL would fail
		// discovery's resource check (RFC 9728 section 3.3) anyway. Behind the front
		// door the domain is the distribution's, and CloudFront's origin is the
		// execute-api URL, which the regional WAF closes to anyone else.
		props.DisableExecuteApiEndpoint = jsii.Bool(true)
		props.DomainName = &awsapigateway.DomainNameOptions{
			DomainName:     jsii.String(cfg.DomainName),
			Certificate:    awscertificatemanager.Certificate_FromCertificateArn(scope, jsii.String("DomainCertificate"), jsii.String(cfg.CertificateARN)),
			EndpointType:   awsapigateway.EndpointType_REGIONAL,
			SecurityPolicy: awsapigateway.SecurityPolicy_TLS_1_2,
		}
	}
	a.rest = awsapigateway.NewRestApi(scope, jsii.String("Api"), props)
	suppress(a.rest, "IAM4", "The account-level API Gateway logging role uses AmazonAPIGatewayPushToCloudWatchLogs, "+
		"the policy AWS documents for it; the role is shared by every API in the account and region, whose "+
		"execution log groups are named by API Gateway.", "Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs")
	suppress(a.rest, "APIG2", "Request bodies are validated by the function against each tool's input schema: "+
		"a gateway validator would answer before the function runs and leave a tool call without its audit record.")

	if edge != nil {
		a.front = newFrontDoor(scope, cfg, a, edge)
		a.baseURL = jsii.String(a.front.url(cfg) + "/")
	} else if cfg.DomainName != "" {
		a.baseURL = jsii.String("https://" + cfg.DomainName + "/")
	} else {
		// Built from parts, not RestApi.Url(): the gateway responses below embed it, and
		// the deployment depends on them, so referring to the stage would be a cycle.
		a.baseURL = jsii.String("https://" + *a.rest.RestApiId() + ".execute-api." + *stack.Region() + "." + *stack.UrlSuffix() + "/" + stageName + "/")
	}

	authorizer := awsapigateway.NewRequestAuthorizer(scope, jsii.String("TokenAuthorizer"), &awsapigateway.RequestAuthorizerProps{
		Handler:         fns.get(fnAuthorizer),
		IdentitySources: &[]*string{awsapigateway.IdentitySource_Header(jsii.String("Authorization"))},
		// The cache key is the Authorization header; the authorizer returns a policy for
		// the whole API, so one cached answer serves every route.
		ResultsCacheTtl: awscdk.Duration_Seconds(jsii.Number(authorizerCacheSeconds)),
	})

	integration := awsapigateway.NewLambdaIntegration(fns.get(fnMCP), &awsapigateway.LambdaIntegrationOptions{
		Proxy: jsii.Bool(true),
		// The console's test-invoke needs a second permission per method; not worth it.
		AllowTestInvoke: jsii.Bool(false),
	})
	for _, r := range routes {
		res := a.rest.Root().ResourceForPath(jsii.String(r.path))
		opts := &awsapigateway.MethodOptions{AuthorizationType: awsapigateway.AuthorizationType_NONE}
		if r.authed {
			opts = &awsapigateway.MethodOptions{AuthorizationType: awsapigateway.AuthorizationType_CUSTOM, Authorizer: authorizer}
		}
		m := res.AddMethod(jsii.String(r.method), integration, opts)
		if r.authed {
			suppress(m, "COG4", "Callers are MCP clients holding opaque aacmcp bearer tokens, verified by the "+
				"Lambda REQUEST authorizer; there is no Cognito user pool.")
		} else {
			suppress(m, "APIG4", "Public by design: "+r.path+" is liveness or RFC 9728 discovery, which a client "+
				"reads before it has a token; it exposes no tool and no data.")
			suppress(m, "COG4", "Public by design (see APIG4); no authorizer of any kind applies.")
		}
	}
	if len(cfg.AllowedOrigins) > 0 {
		// Browser clients preflight POST /mcp; the function still checks Origin itself.
		origins := make([]*string, len(cfg.AllowedOrigins))
		for i, o := range cfg.AllowedOrigins {
			origins[i] = jsii.String(o)
		}
		preflight := a.rest.Root().ResourceForPath(jsii.String("/mcp")).AddCorsPreflight(&awsapigateway.CorsOptions{
			AllowOrigins: &origins,
			AllowMethods: jsii.Strings("POST", "OPTIONS"),
			AllowHeaders: jsii.Strings("Authorization", "Content-Type", "Accept", "Mcp-Protocol-Version", "Mcp-Session-Id"),
			MaxAge:       awscdk.Duration_Minutes(jsii.Number(10)),
		})
		suppress(preflight, "APIG4", "CORS preflight (OPTIONS) carries no credentials by definition and is answered by a mock integration.")
		suppress(preflight, "COG4", "CORS preflight carries no credentials by definition, so no authorizer of any kind can apply to it.")
	}

	a.addGatewayResponses()
	a.addWAF(scope, cfg)
	return a
}

// errorBody is the error contract's body shape ({"error": ..., "code": ...}).
func errorBody(message string, code apperr.Code) string {
	// Marshalling a map of strings cannot fail.
	b, _ := json.Marshal(map[string]string{"error": message, "code": string(code)})
	return string(b)
}

// addGatewayResponses makes API Gateway's own answers speak the error contract. A
// missing or refused token is 401 with the RFC 9728 pointer, so an MCP client can find
// out how to authenticate. The authorizer's policy covers the whole API, so a Deny can
// only mean the token was refused: it is a 401 too, not a 403.
//
// These challenges reach clients as WWW-Authenticate: API Gateway renames that header
// only in an integration's answer, never in its own gateway responses
// (docs/decisions.md, "Challenges through API Gateway"). A header value is static, so
// the two types tell the two cases apart: UNAUTHORIZED is also API Gateway's answer
// when there is no Authorization header at all, where RFC 6750 section 3.1 says no
// error code; ACCESS_DENIED only follows a token the authorizer saw and denied, so it
// says error="invalid_token". The pointer is the path-suffixed metadata URL of the
// /mcp resource, the one the function's own challenges name.
func (a *api) addGatewayResponses() {
	metadata := strings.TrimSuffix(*a.baseURL, "/") + wellKnownPath + "/mcp"
	challenge := "'Bearer resource_metadata=\"" + metadata + "\"'"
	refused := "'Bearer resource_metadata=\"" + metadata + "\", error=\"invalid_token\"'"
	unauthorized := errorBody("missing or invalid bearer token", apperr.InvalidToken)
	type gr struct {
		id      string
		typ     awsapigateway.ResponseType
		status  string
		body    string
		headers map[string]string
	}
	for _, r := range []gr{
		{"Unauthorized", awsapigateway.ResponseType_UNAUTHORIZED(), "401", unauthorized, map[string]string{"WWW-Authenticate": challenge}},
		{"AccessDenied", awsapigateway.ResponseType_ACCESS_DENIED(), "401", unauthorized, map[string]string{"WWW-Authenticate": refused}},
		// API Gateway calls an unknown route "Missing Authentication Token" (403).
		{"UnknownRoute", awsapigateway.ResponseType_MISSING_AUTHENTICATION_TOKEN(), "404", errorBody("no such route", apperr.NotFound), nil},
		{"Throttled", awsapigateway.ResponseType_THROTTLED(), "429", errorBody("too many requests", apperr.RateLimited), map[string]string{"Retry-After": "'1'"}},
		{"TooLarge", awsapigateway.ResponseType_REQUEST_TOO_LARGE(), "413", errorBody("request body too large", apperr.InvalidArguments), nil},
		{"WafFiltered", awsapigateway.ResponseType_WAF_FILTERED(), "403", errorBody("request blocked by the web application firewall", apperr.WAFBlocked), nil},
		{"Default4xx", awsapigateway.ResponseType_DEFAULT_4XX(), "", errorBody("bad request", apperr.InvalidArguments), nil},
		{"Default5xx", awsapigateway.ResponseType_DEFAULT_5XX(), "", errorBody("internal error", apperr.InternalError), nil},
	} {
		opts := &awsapigateway.GatewayResponseOptions{
			Type:      r.typ,
			Templates: &map[string]*string{"application/json": jsii.String(r.body)},
		}
		if r.status != "" {
			opts.StatusCode = jsii.String(r.status)
		}
		if len(r.headers) > 0 {
			h := map[string]*string{}
			for k, v := range r.headers {
				h[k] = jsii.String(v)
			}
			opts.ResponseHeaders = &h
		}
		a.rest.AddGatewayResponse(jsii.String(r.id), opts)
	}
}

// wafVisibility is every rule's and web ACL's metrics and sampling.
func wafVisibility(name string) *awswafv2.CfnWebACL_VisibilityConfigProperty {
	return &awswafv2.CfnWebACL_VisibilityConfigProperty{
		CloudWatchMetricsEnabled: jsii.Bool(true),
		MetricName:               jsii.String(name),
		SampledRequestsEnabled:   jsii.Bool(true),
	}
}

// wafBlock blocks with a status and one of the web ACL's custom bodies.
func wafBlock(status float64, bodyKey string, headers ...*awswafv2.CfnWebACL_CustomHTTPHeaderProperty) *awswafv2.CfnWebACL_RuleActionProperty {
	resp := &awswafv2.CfnWebACL_CustomResponseProperty{ResponseCode: jsii.Number(status), CustomResponseBodyKey: jsii.String(bodyKey)}
	if len(headers) > 0 {
		resp.ResponseHeaders = &headers
	}
	return &awswafv2.CfnWebACL_RuleActionProperty{Block: &awswafv2.CfnWebACL_BlockActionProperty{CustomResponse: resp}}
}

// Custom response body keys (each rate rule has its own: rateBodyKey).
const (
	tooLargeBody     = "too_large"
	notFrontDoorBody = "not_front_door"
)

// Priorities of the rate rules: the first three keep the numbers they had beside
// the content rules (1-3) of the stack without the front door; the others follow.
var ratePriorities = map[string]float64{
	"RateLimitPerIp": 0, "OAuthTokenRateLimitPerIp": priorityOAuthToken, "OAuthRegisterRateLimitPerIp": priorityOAuthRegister,
	"RateLimitPerToken": 6, "BearerRateLimitPerIp": 7,
}

// rateRules are the rate limits of the edge (shared/ratelimit.EdgeLimits.Rules, the
// table `aacmcp gateway` enforces too): per address only for requests without a
// bearer token, per token and, far more loosely, per address for requests with one,
// so that one organisation behind a hosted client's few addresses is not throttled
// as one caller, and the OAuth endpoints per address. They must see the client's
// address, so behind the front door they are the CloudFront web ACL's
// (frontdoor.go): at the stage every request comes from an edge server.
func rateRules(cfg config.Config) []any {
	var out []any
	for _, r := range cfg.EdgeLimits().Rules() {
		prio, ok := ratePriorities[r.Name]
		if !ok {
			panic("no WAF priority for edge rule " + r.Name)
		}
		st := &awswafv2.CfnWebACL_RateBasedStatementProperty{
			AggregateKeyType:    jsii.String("IP"),
			Limit:               jsii.Number(float64(r.Limit)),
			EvaluationWindowSec: jsii.Number(ratelimit.EdgeWindow.Seconds()),
			ScopeDownStatement:  edgeScope(r.Scope),
		}
		if r.Key == ratelimit.KeyToken {
			st.AggregateKeyType = jsii.String("CUSTOM_KEYS")
			st.CustomKeys = &[]any{&awswafv2.CfnWebACL_RateBasedStatementCustomKeyProperty{
				Header: &awswafv2.CfnWebACL_RateLimitHeaderProperty{
					Name:                jsii.String("authorization"),
					TextTransformations: &[]any{&awswafv2.CfnWebACL_TextTransformationProperty{Priority: jsii.Number(0), Type: jsii.String("NONE")}},
				},
			}}
		}
		out = append(out, &awswafv2.CfnWebACL_RuleProperty{
			Name:      jsii.String(r.Name),
			Priority:  jsii.Number(prio),
			Statement: &awswafv2.CfnWebACL_StatementProperty{RateBasedStatement: st},
			Action: wafBlock(429, rateBodyKey(r), &awswafv2.CfnWebACL_CustomHTTPHeaderProperty{
				Name: jsii.String("Retry-After"), Value: jsii.String(strconv.Itoa(ratelimit.EdgeRetryAfterSeconds)),
			}),
			VisibilityConfig: wafVisibility(r.Metric),
		})
	}
	return out
}

// rateBodyKey names a rate rule's custom response body.
func rateBodyKey(r ratelimit.EdgeRule) string { return "rate_" + strings.ToLower(r.Name) }

// rateBodies are the custom bodies rateRules answer with.
func rateBodies(cfg config.Config) map[string]any {
	out := map[string]any{}
	for _, r := range cfg.EdgeLimits().Rules() {
		out[rateBodyKey(r)] = &awswafv2.CfnWebACL_CustomResponseBodyProperty{
			ContentType: jsii.String("APPLICATION_JSON"),
			Content:     jsii.String(r.Body()),
		}
	}
	return out
}

// bearerPresent matches a request whose Authorization header starts with "bearer "
// in any case, as ratelimit.HasBearer reads it.
func bearerPresent() *awswafv2.CfnWebACL_StatementProperty {
	return &awswafv2.CfnWebACL_StatementProperty{ByteMatchStatement: &awswafv2.CfnWebACL_ByteMatchStatementProperty{
		FieldToMatch:         &awswafv2.CfnWebACL_FieldToMatchProperty{SingleHeader: &map[string]any{"Name": "authorization"}},
		PositionalConstraint: jsii.String("STARTS_WITH"),
		SearchString:         jsii.String("bearer "),
		TextTransformations:  &[]any{&awswafv2.CfnWebACL_TextTransformationProperty{Priority: jsii.Number(0), Type: jsii.String("LOWERCASE")}},
	}}
}

// edgeScope is the scope-down statement of a rate rule.
func edgeScope(s ratelimit.EdgeScope) *awswafv2.CfnWebACL_StatementProperty {
	switch s {
	case ratelimit.ScopeNoBearer:
		return &awswafv2.CfnWebACL_StatementProperty{NotStatement: &awswafv2.CfnWebACL_NotStatementProperty{Statement: bearerPresent()}}
	case ratelimit.ScopeBearer:
		return bearerPresent()
	case ratelimit.ScopeOAuthToken:
		return &awswafv2.CfnWebACL_StatementProperty{OrStatement: &awswafv2.CfnWebACL_OrStatementProperty{
			Statements: &[]any{pathContains(ratelimit.OAuthTokenPath), pathContains(ratelimit.OAuthRevokePath)},
		}}
	case ratelimit.ScopeOAuthRegister:
		return pathContains(ratelimit.OAuthRegisterPath)
	}
	panic(fmt.Sprintf("edge scope %d has no WAF statement", s))
}

// contentRules look at the request itself, not at who sent it: a body size limit,
// the AWS common rule set and its OAuth exception. They stay on the stage.
func contentRules(cfg config.Config) []any {
	return []any{
		&awswafv2.CfnWebACL_RuleProperty{
			Name:     jsii.String("BodySizeLimit"),
			Priority: jsii.Number(1),
			Statement: &awswafv2.CfnWebACL_StatementProperty{
				SizeConstraintStatement: &awswafv2.CfnWebACL_SizeConstraintStatementProperty{
					FieldToMatch: &awswafv2.CfnWebACL_FieldToMatchProperty{
						Body: &awswafv2.CfnWebACL_BodyProperty{OversizeHandling: jsii.String("MATCH")},
					},
					ComparisonOperator: jsii.String("GT"),
					Size:               jsii.Number(float64(cfg.MaxBodyBytes)),
					TextTransformations: &[]any{
						&awswafv2.CfnWebACL_TextTransformationProperty{Priority: jsii.Number(0), Type: jsii.String("NONE")},
					},
				},
			},
			Action:           wafBlock(413, tooLargeBody),
			VisibilityConfig: wafVisibility("aacmcp-body-size"),
		},
		&awswafv2.CfnWebACL_RuleProperty{
			Name:     jsii.String("AWSManagedRulesCommonRuleSet"),
			Priority: jsii.Number(2),
			Statement: &awswafv2.CfnWebACL_StatementProperty{
				ManagedRuleGroupStatement: &awswafv2.CfnWebACL_ManagedRuleGroupStatementProperty{
					VendorName: jsii.String("AWS"),
					Name:       jsii.String("AWSManagedRulesCommonRuleSet"),
					// The group blocks bodies over 8 KB; BodySizeLimit above sets the
					// limit this API actually has, so that rule only counts.
					// The URL-inclusion rules only count too: UrlInclusionOutsideOAuth
					// (oauthwaf.go) blocks on their labels except where URLs are OAuth data.
					RuleActionOverrides: ptr(append([]any{
						&awswafv2.CfnWebACL_RuleActionOverrideProperty{
							Name:        jsii.String("SizeRestrictions_BODY"),
							ActionToUse: &awswafv2.CfnWebACL_RuleActionProperty{Count: &map[string]any{}},
						},
					}, countURLInclusionRules()...)),
				},
			},
			OverrideAction:   &awswafv2.CfnWebACL_OverrideActionProperty{None: &map[string]any{}},
			VisibilityConfig: wafVisibility("aacmcp-common-rule-set"),
		},
		urlInclusionRule(wafVisibility),
	}
}

// addWAF puts a web ACL on the stage. Without the front door it holds every rule;
// behind it, the content rules and, first, originVerifyRule: a request that did not
// come through the distribution (a direct call to the execute-api URL) is refused,
// which is what lets the functions trust CloudFront-Viewer-Address.
func (a *api) addWAF(scope constructs.Construct, cfg config.Config) {
	bodies := map[string]any{
		tooLargeBody: &awswafv2.CfnWebACL_CustomResponseBodyProperty{
			ContentType: jsii.String("APPLICATION_JSON"),
			Content:     jsii.String(errorBody(fmt.Sprintf("request body larger than %d bytes", cfg.MaxBodyBytes), apperr.InvalidArguments)),
		},
	}
	var rules []any
	description := "aacmcp API: rate limits per IP without a token, per token and per IP with one, OAuth token and registration per IP, body size limit, AWS common rule set"
	if a.front != nil {
		rules = append([]any{a.front.originVerifyRule()}, contentRules(cfg)...)
		bodies[notFrontDoorBody] = &awswafv2.CfnWebACL_CustomResponseBodyProperty{
			ContentType: jsii.String("APPLICATION_JSON"),
			Content:     jsii.String(errorBody(apigw.NotThroughFrontDoor, apperr.WAFBlocked)),
		}
		description = "aacmcp API behind CloudFront: only requests through the distribution, body size limit, AWS common rule set"
	} else {
		rules = append(rateRules(cfg), contentRules(cfg)...)
		maps.Copy(bodies, rateBodies(cfg))
	}
	a.webACL = awswafv2.NewCfnWebACL(scope, jsii.String("ApiWebAcl"), &awswafv2.CfnWebACLProps{
		Scope:            jsii.String("REGIONAL"),
		Description:      jsii.String(description),
		DefaultAction:    &awswafv2.CfnWebACL_DefaultActionProperty{Allow: &map[string]any{}},
		VisibilityConfig: wafVisibility("aacmcp-api"),
		// WAF inspects at most this much of a body; a body beyond it counts as oversize
		// and the size rule below blocks it.
		AssociationConfig: &awswafv2.CfnWebACL_AssociationConfigProperty{
			RequestBody: &map[string]any{
				"API_GATEWAY": &awswafv2.CfnWebACL_RequestBodyAssociatedResourceTypeConfigProperty{
					DefaultSizeInspectionLimit: jsii.String("KB_64"),
				},
			},
		},
		CustomResponseBodies: &bodies,
		Rules:                &rules,
	})
	awswafv2.NewCfnWebACLAssociation(scope, jsii.String("ApiWebAclAssociation"), &awswafv2.CfnWebACLAssociationProps{
		ResourceArn: a.rest.DeploymentStage().StageArn(),
		WebAclArn:   a.webACL.AttrArn(),
	})
}
