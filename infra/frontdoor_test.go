package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/aacworkflow/aacmcp/infra/config"
)

// Managed CloudFront policy ids ("Use managed cache policies", "Use managed origin
// request policies").
const (
	cachingDisabledID           = "4135ea2d-6df8-44a3-9df3-4b5a84be39ad"
	allViewerExceptHostHeaderID = "b689b0a8-53d0-40ab-baf2-68738e2966ac"
)

// crossRegion is the value a main stack reads from its edge stack: an attribute of
// CDK's cross-region export reader, named after the edge resource.
func crossRegion(t *testing.T, s *synthesized, v any, edgeResource string) {
	t.Helper()
	att, _ := path(v, "Fn::GetAtt").([]any)
	if len(att) != 2 || s.raw.Resources[att[0].(string)].Type != "Custom::CrossRegionExportReader" ||
		!strings.Contains(att[1].(string), edgeResource) {
		t.Errorf("%s is not the edge stack's %s read across regions", jsonText(v), edgeResource)
	}
}

// secretRef is a CloudFormation dynamic reference to the origin secret: resolved at
// deploy time, never in the template.
func secretRef(t *testing.T, s *synthesized) string {
	t.Helper()
	secret := s.raw.logicalIDWithPrefix(t, "AWS::SecretsManager::Secret", "OriginVerifySecret")
	return jsonText(map[string]any{"Fn::Join": []any{"", []any{"{{resolve:secretsmanager:", ref(secret), ":SecretString:::}}"}}})
}

func TestFrontDoorDistribution(t *testing.T) {
	for _, s := range []*synthesized{plain, full} {
		t.Run(*s.stack.StackName(), func(t *testing.T) {
			id := s.raw.logicalIDWithPrefix(t, "AWS::CloudFront::Distribution", "FrontDoor")
			dc := path(s.raw.Resources[id].Properties, "DistributionConfig")
			b := path(dc, "DefaultCacheBehavior")
			o := path(dc, "Origins", 0)
			api := s.raw.logicalIDWithPrefix(t, "AWS::ApiGateway::RestApi", "Api")
			for _, c := range []struct {
				what      string
				got, want any
			}{
				{"one origin", len(asList(path(dc, "Origins"))), 1},
				{"origin: the API's execute-api host", jsonText(path(o, "DomainName")),
					jsonText(map[string]any{"Fn::Join": []any{"", []any{ref(api), ".execute-api." + testRegion + ".", ref("AWS::URLSuffix")}}})},
				{"root is the stage", path(o, "OriginPath"), "/" + stageName},
				{"HTTPS to the origin", path(o, "CustomOriginConfig", "OriginProtocolPolicy"), "https-only"},
				{"TLS 1.2 to the origin", jsonText(path(o, "CustomOriginConfig", "OriginSSLProtocols")), `["TLSv1.2"]`},
				{"origin secret header", path(o, "OriginCustomHeaders", 0, "HeaderName"), originVerifyHeader},
				{"origin secret is a dynamic reference", jsonText(path(o, "OriginCustomHeaders", 0, "HeaderValue")), secretRef(t, s)},
				{"HTTPS only", path(b, "ViewerProtocolPolicy"), "https-only"},
				{"every method", jsonText(path(b, "AllowedMethods")), `["GET","HEAD","OPTIONS","PUT","PATCH","POST","DELETE"]`},
				{"caching disabled", path(b, "CachePolicyId"), cachingDisabledID},
				{"viewer headers but Host, CloudFront headers", path(b, "OriginRequestPolicyId"), allViewerExceptHostHeaderID},
				{"one edge function", len(asList(path(b, "LambdaFunctionAssociations"))), 1},
				{"on the origin response", path(b, "LambdaFunctionAssociations", 0, "EventType"), "origin-response"},
				{"without the body", path(b, "LambdaFunctionAssociations", 0, "IncludeBody"), false},
				{"no viewer-response function, no CloudFront Function", path(b, "FunctionAssociations"), nil},
			} {
				if c.got != c.want {
					t.Errorf("%s: %v, want %v", c.what, c.got, c.want)
				}
			}
			crossRegion(t, s, path(b, "LambdaFunctionAssociations", 0, "LambdaFunctionARN"), "RestoreChallengeCurrentVersion")
			crossRegion(t, s, path(dc, "WebACLId"), "EdgeWebAcl")
			// Naming the stage or the deployment would be a cycle: the functions'
			// environment names the distribution.
			props := jsonText(s.raw.Resources[id].Properties)
			for _, typ := range []string{"AWS::ApiGateway::Stage", "AWS::ApiGateway::Deployment"} {
				for _, other := range s.raw.ofType(typ) {
					if strings.Contains(props, `"`+other+`"`) {
						t.Errorf("the distribution refers to %s %s", typ, other)
					}
				}
			}
		})
	}
	if bare.raw.ofType("AWS::CloudFront::Distribution") != nil || bare.edge != nil || essentials.edge != nil {
		t.Error("frontDoor=false still deploys the front door")
	}
}

func TestEdgeFunction(t *testing.T) {
	e := plain.edge
	if region := *e.stack.Region(); region != "us-east-1" {
		t.Fatalf("edge stack in %s: Lambda@Edge functions must be in us-east-1", region)
	}
	fn := e.raw.logicalIDWithPrefix(t, "AWS::Lambda::Function", "RestoreChallenge")
	p := e.raw.Resources[fn].Properties
	for _, c := range []struct {
		what      string
		got, want any
	}{
		{"Node.js", p["Runtime"], "nodejs22.x"},
		{"x86_64 (Lambda@Edge has no arm64)", jsonText(p["Architectures"]), `["x86_64"]`},
		{"the file's handler", p["Handler"], "index.handler"},
		{"no environment (Lambda@Edge has none)", p["Environment"], nil},
		{"no tracing config", p["TracingConfig"], nil},
		{"fixed name", p["FunctionName"], edgeFunctionName(e.stack)},
	} {
		if c.got != c.want {
			t.Errorf("edge function %s: %v, want %v", c.what, c.got, c.want)
		}
	}
	versions := e.raw.ofType("AWS::Lambda::Version")
	if len(versions) != 1 || e.raw.Resources[versions[0]].DeletionPolicy != "Retain" {
		t.Errorf("versions %v: want one, retained (a replicated version cannot be deleted at once)", versions)
	}

	role := e.raw.logicalIDWithPrefix(t, "AWS::IAM::Role", "RestoreChallengeRole")
	var principals []string
	for _, st := range asList(path(e.raw.Resources[role].Properties, "AssumeRolePolicyDocument", "Statement")) {
		principals = append(principals, path(st, "Principal", "Service").(string))
	}
	slices.Sort(principals)
	if !slices.Equal(principals, []string{"edgelambda.amazonaws.com", "lambda.amazonaws.com"}) {
		t.Errorf("edge role trusted by %v", principals)
	}
	if m := e.raw.Resources[role].Properties["ManagedPolicyArns"]; m != nil {
		t.Errorf("edge role has managed policies %s", jsonText(m))
	}
	sts := statementsOf(t, e, role)
	group := "log-group:/aws/lambda/us-east-1." + edgeFunctionName(e.stack)
	if len(sts) != 1 || !slices.Equal(sts[0].Actions, []string{"logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"}) ||
		len(sts[0].Resources) != 2 || !strings.HasSuffix(sts[0].Resources[0], group+`"]]}`) || !strings.HasSuffix(sts[0].Resources[1], group+`:*"]]}`) {
		t.Errorf("edge role statements %+v: want its own log groups only", sts)
	}
}

func TestFrontDoorWAF(t *testing.T) {
	for _, s := range []*synthesized{plain, full} {
		t.Run(*s.stack.StackName(), func(t *testing.T) {
			edge := rateACLOf(t, s)
			if edge["Scope"] != "CLOUDFRONT" {
				t.Errorf("edge web ACL scope %v", edge["Scope"])
			}
			var edgeRules []string
			for _, r := range asList(edge["Rules"]) {
				edgeRules = append(edgeRules, path(r, "Name").(string))
			}
			if want := []string{"RateLimitPerIp", "OAuthTokenRateLimitPerIp", "OAuthRegisterRateLimitPerIp", "RateLimitPerToken", "BearerRateLimitPerIp"}; !slices.Equal(edgeRules, want) {
				t.Errorf("edge web ACL rules %v, want %v", edgeRules, want)
			}
			regional := s.raw.Resources["ApiWebAcl"].Properties
			rules := asList(regional["Rules"])
			first := rules[0]
			bm := path(first, "Statement", "NotStatement", "Statement", "ByteMatchStatement")
			if path(first, "Name") != "OnlyThroughCloudFront" || path(first, "Priority") != 0.0 ||
				path(first, "Action", "Block", "CustomResponse", "ResponseCode") != 403.0 ||
				path(bm, "FieldToMatch", "SingleHeader", "Name") != strings.ToLower(originVerifyHeader) ||
				path(bm, "PositionalConstraint") != "EXACTLY" || jsonText(path(bm, "SearchString")) != secretRef(t, s) {
				t.Errorf("first regional rule = %s", jsonText(first))
			}
			// At the stage every request comes from a CloudFront server: a per-IP
			// limit there would throttle every client of an edge location together.
			for _, r := range rules {
				if path(r, "Statement", "RateBasedStatement") != nil {
					t.Errorf("regional rule %v is rate-based behind the front door", path(r, "Name"))
				}
			}
		})
	}
	var bareRules []string
	for _, r := range asList(bare.raw.Resources["ApiWebAcl"].Properties["Rules"]) {
		bareRules = append(bareRules, path(r, "Name").(string))
	}
	if slices.Contains(bareRules, "OnlyThroughCloudFront") || !slices.Contains(bareRules, "RateLimitPerIp") {
		t.Errorf("bare API's web ACL rules %v", bareRules)
	}
}

// TestFrontDoorFunctionEnvironment: behind the front door every function attributes
// requests to CloudFront-Viewer-Address and names the distribution as its public URL.
func TestFrontDoorFunctionEnvironment(t *testing.T) {
	for _, tt := range []struct {
		s     *synthesized
		trust bool
	}{{plain, true}, {full, true}, {bare, false}, {essentials, false}} {
		for _, fn := range wiredFunctions {
			v, ok := fnEnv(t, tt.s, fn)[envTrustViewerAddress]
			if tt.trust && v != "true" || !tt.trust && ok {
				t.Errorf("%s %s: %s = %v", *tt.s.stack.StackName(), fn, envTrustViewerAddress, v)
			}
		}
	}
	for _, fn := range []string{fnMCP, fnOAuth} {
		if got := jsonText(fnEnv(t, plain, fn)[envPublicURL]); got != frontDoorURL(plain, t, "") {
			t.Errorf("plain %s %s = %s", fn, envPublicURL, got)
		}
	}
	if _, ok := plain.raw.Outputs[outFrontDoorID]; !ok {
		t.Errorf("plain lacks output %s", outFrontDoorID)
	}
	if _, ok := bare.raw.Outputs[outFrontDoorID]; ok {
		t.Errorf("bare has output %s", outFrontDoorID)
	}
}

// TestFrontDoorNeedsRegion: without a region the front door cannot be defined, and
// says how to give one.
func TestFrontDoorNeedsRegion(t *testing.T) {
	_, err := NewStack(newApp(t.TempDir()), "NoRegion", &StackProps{Config: config.Defaults(), EdgeCode: "unused"})
	if err == nil || !strings.Contains(err.Error(), "CDK_DEFAULT_REGION") || !strings.Contains(err.Error(), config.KeyRegion) {
		t.Errorf("error = %v", err)
	}
}

func TestStackEnv(t *testing.T) {
	for _, tt := range []struct {
		name            string
		env             map[string]string
		ctxRegion       string
		account, region string // "" = unset; nil env when both are
	}{
		{"CLI", map[string]string{"CDK_DEFAULT_ACCOUNT": "123456789012", "CDK_DEFAULT_REGION": "eu-west-1"}, "", "123456789012", "eu-west-1"},
		{"CLI region wins over context", map[string]string{"CDK_DEFAULT_REGION": "eu-west-1"}, "us-west-2", "", "eu-west-1"},
		{"context region", nil, "eu-central-1", "", "eu-central-1"},
		{"nothing", map[string]string{"CDK_DEFAULT_ACCOUNT": "123456789012"}, "", "", ""},
	} {
		cfg := config.Defaults()
		cfg.Region = tt.ctxRegion
		got := stackEnv(func(k string) string { return tt.env[k] }, cfg)
		var account, region string
		if got != nil {
			region = *got.Region
			if got.Account != nil {
				account = *got.Account
			}
		}
		if account != tt.account || region != tt.region {
			t.Errorf("%s: account %q region %q, want %q %q", tt.name, account, region, tt.account, tt.region)
		}
	}
	if _, err := edgeAsset(t.TempDir()); err == nil {
		t.Error("edgeAsset accepted a tree without functions/edge/index.mjs")
	}
}

// TestCrossRegionProviders: the roles and custom resources CDK adds for the references
// between a stack and its edge stack reach SSM parameters under /cdk/exports/ and
// nothing else, and carry only the edge function's version and the web ACL's ARN.
func TestCrossRegionProviders(t *testing.T) {
	for _, s := range []*synthesized{plain, plain.edge, full, full.edge} {
		t.Run(*s.stack.StackName(), func(t *testing.T) {
			roles := 0
			for _, id := range s.raw.ofType("AWS::IAM::Role") {
				if !strings.HasPrefix(id, crossRegionProvider) {
					continue
				}
				roles++
				for _, pol := range asList(s.raw.Resources[id].Properties["Policies"]) {
					for _, st := range asList(path(pol, "PolicyDocument", "Statement")) {
						for _, a := range asList(path(st, "Action")) {
							if !strings.HasPrefix(a.(string), "ssm:") || strings.Contains(a.(string), "*") {
								t.Errorf("%s may %v", id, a)
							}
						}
						if res := jsonText(path(st, "Resource")); !strings.Contains(res, ":parameter/cdk/exports/") {
							t.Errorf("%s reaches %s", id, res)
						}
					}
				}
			}
			if roles != 1 {
				t.Errorf("%d cross-region provider roles, want 1", roles)
			}
			for id, r := range s.raw.Resources {
				var values map[string]any
				switch r.Type {
				case "Custom::CrossRegionExportReader":
					values, _ = path(r.Properties, "ReaderProps", "imports").(map[string]any)
				case "Custom::CrossRegionExportWriter":
					values, _ = path(r.Properties, "WriterProps", "exports").(map[string]any)
				default:
					continue
				}
				carried := jsonText(values)
				if strings.Contains(carried, "Secret") || len(values) != 2 ||
					!strings.Contains(carried, "RestoreChallengeCurrentVersion") || !strings.Contains(carried, "EdgeWebAcl") {
					t.Errorf("%s (%s) carries %s", id, r.Type, carried)
				}
			}
		})
	}
}
