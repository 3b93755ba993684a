package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awswafv2"
	"github.com/aws/jsii-runtime-go"

	"github.com/aacworkflow/aacmcp/infra/config"
	"github.com/aacworkflow/aacmcp/shared/approval"
	"github.com/aacworkflow/aacmcp/shared/oauth"
	"github.com/aacworkflow/aacmcp/shared/store/dynamo"
)

// frontDoorURL is the template's value of the public URL on the distribution's own
// domain (the default).
func frontDoorURL(s *synthesized, t *testing.T, suffix string) string {
	dist := s.raw.logicalIDWithPrefix(t, "AWS::CloudFront::Distribution", "FrontDoor")
	parts := []any{"https://", getAtt(dist, "DomainName")}
	if suffix != "" {
		parts = append(parts, suffix)
	}
	return jsonText(map[string]any{"Fn::Join": []any{"", parts}})
}

func fnEnv(t *testing.T, s *synthesized, fn string) map[string]any {
	t.Helper()
	id := s.raw.logicalIDWithPrefix(t, "AWS::Lambda::Function", functionID(fn))
	env, _ := path(s.raw.Resources[id].Properties, "Environment", "Variables").(map[string]any)
	return env
}

// methodPath rebuilds a method's full resource path from the Resource parent chain.
func methodPath(s *synthesized, resourceRef any) string {
	var parts []string
	for {
		m, ok := resourceRef.(map[string]any)
		if !ok || m["Ref"] == nil {
			return "/" + strings.Join(parts, "/") // Fn::GetAtt RootResourceId
		}
		r := s.raw.Resources[m["Ref"].(string)]
		parts = append([]string{r.Properties["PathPart"].(string)}, parts...)
		resourceRef = r.Properties["ParentId"]
	}
}

// TestOAuthRoutesReachOAuthFunction: the authorization server's routes have no
// authorizer and integrate with the oauth function; no other route does.
func TestOAuthRoutesReachOAuthFunction(t *testing.T) {
	each(t, func(t *testing.T, s *synthesized) {
		oauthFn := s.raw.logicalIDWithPrefix(t, "AWS::Lambda::Function", functionID(fnOAuth))
		mcpFn := s.raw.logicalIDWithPrefix(t, "AWS::Lambda::Function", functionID(fnMCP))
		isOAuth := map[string]bool{}
		for _, r := range oauthRoutes {
			isOAuth[r.method+" "+r.path] = true
		}
		seen := 0
		for _, id := range s.raw.ofType("AWS::ApiGateway::Method") {
			p := s.raw.Resources[id].Properties
			route := fmt.Sprintf("%s %s", p["HttpMethod"], methodPath(s, p["ResourceId"]))
			uri := jsonText(path(p, "Integration", "Uri"))
			if !isOAuth[route] {
				if strings.Contains(uri, oauthFn) {
					t.Errorf("%s integrates with the oauth function", route)
				}
				continue
			}
			seen++
			if p["AuthorizationType"] != "NONE" || p["AuthorizerId"] != nil {
				t.Errorf("%s: authorization %v, want NONE and no authorizer", route, p["AuthorizationType"])
			}
			if path(p, "Integration", "Type") != "AWS_PROXY" || !strings.Contains(uri, oauthFn) || strings.Contains(uri, mcpFn) {
				t.Errorf("%s: integration %s, want a proxy to the oauth function", route, uri)
			}
		}
		if seen != len(oauthRoutes) {
			t.Errorf("found %d of the %d authorization server routes", seen, len(oauthRoutes))
		}
	})
}

func TestOAuthFunctionEnvironment(t *testing.T) {
	plainEnv := fnEnv(t, plain, fnOAuth)
	pool := plain.raw.logicalIDWithPrefix(t, "AWS::Cognito::UserPool", "UserPool")
	client := plain.raw.logicalIDWithPrefix(t, "AWS::Cognito::UserPoolClient", "UserPoolAuthorizationServer")
	secret := plain.raw.logicalIDWithPrefix(t, "AWS::SecretsManager::Secret", "CognitoClientSecret")
	essEnv := fnEnv(t, essentials, fnOAuth)
	essPool := essentials.raw.logicalIDWithPrefix(t, "AWS::Cognito::UserPool", "UserPool")
	fullEnv := fnEnv(t, full, fnOAuth)
	cognitoIssuer := func(pool string) string {
		return jsonText(map[string]any{"Fn::Join": []any{"", []any{
			"https://cognito-idp." + testRegion + ".", ref("AWS::URLSuffix"), "/", ref(pool),
		}}})
	}
	tests := []struct {
		name string
		env  map[string]any
		key  string
		want string // JSON text; "" means unset
	}{
		{"plain", plainEnv, envPublicURL, frontDoorURL(plain, t, "")},
		{"plain", plainEnv, envOIDCIssuer, cognitoIssuer(pool)},
		{"plain", plainEnv, envOIDCClientID, jsonText(ref(client))},
		{"plain", plainEnv, envOIDCClientSecretARN, jsonText(ref(secret))},
		{"plain", plainEnv, envOAuthAccessTTL, ""},
		{"essentials", essEnv, envPublicURL, `"https://mcp.acme.example"`},
		{"essentials", essEnv, envOIDCIssuer, cognitoIssuer(essPool)},
		{"full", fullEnv, envPublicURL, `"https://mcp.example.com"`},
		{"full", fullEnv, envOIDCIssuer, `"https://login.example.com/oauth2/default"`},
		{"full", fullEnv, envOIDCClientID, `"0oa1b2c3d4e5f6"`},
		{"full", fullEnv, envOIDCClientSecretARN, `"arn:aws:secretsmanager:eu-west-1:123456789012:secret:aacmcp/oidc-client-AbC123"`},
		{"full", fullEnv, envOAuthAccessTTL, `"30m0s"`},
	}
	for _, tt := range tests {
		got, ok := tt.env[tt.key]
		if tt.want == "" {
			if ok {
				t.Errorf("%s %s = %s, want unset", tt.name, tt.key, jsonText(got))
			}
			continue
		}
		if jsonText(got) != tt.want {
			t.Errorf("%s %s = %s\nwant %s", tt.name, tt.key, jsonText(got), tt.want)
		}
	}
	// The function needs the tables and the stream like the others, and the secret's
	// value is never in the environment of any function.
	each(t, func(t *testing.T, s *synthesized) {
		env := fnEnv(t, s, fnOAuth)
		for _, k := range []string{envTable, envTokensTable, envAuditStream} {
			if env[k] == nil {
				t.Errorf("oauth function lacks %s", k)
			}
		}
		for _, fn := range wiredFunctions {
			if strings.Contains(jsonText(fnEnv(t, s, fn)), `"ClientSecret"`) {
				t.Errorf("%s's environment refers to the client secret's value", fn)
			}
		}
	})
}

// TestOAuthIAMExact pins the authorization server's role statement by statement.
func TestOAuthIAMExact(t *testing.T) {
	mainTable := plain.raw.logicalIDWithPrefix(t, "AWS::DynamoDB::GlobalTable", "MainTable")
	tokensTable := plain.raw.logicalIDWithPrefix(t, "AWS::DynamoDB::GlobalTable", "TokensTable")
	mainArn := jsonText(getAtt(mainTable, "Arn"))
	gsiArn := `{"Fn::Join":["",[{"Fn::GetAtt":["` + mainTable + `","Arn"]},"/index/GSI1"]]}`
	tokensArn := jsonText(getAtt(tokensTable, "Arn"))
	leading := func(prefixes ...string) string {
		return jsonText(map[string]any{"ForAllValues:StringLike": map[string]any{"dynamodb:LeadingKeys": prefixes}})
	}
	want := []statement{
		{[]string{"logs:CreateLogStream", "logs:PutLogEvents"}, []string{jsonText(getAtt(plain.raw.logicalIDWithPrefix(t, "AWS::Logs::LogGroup", functionID(fnOAuth)+"Logs"), "Arn"))}, ""},
		{[]string{"xray:PutTraceSegments", "xray:PutTelemetryRecords"}, []string{`"*"`}, ""},
		{[]string{"dynamodb:PutItem", "dynamodb:GetItem"}, []string{tokensArn}, leading("TOKEN#*", "TOKENID#*")},
		{[]string{"dynamodb:UpdateItem"}, []string{tokensArn}, leading("TOKEN#*")},
		{[]string{"dynamodb:DeleteItem"}, []string{tokensArn}, leading("TOKENID#*")},
		{[]string{"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"}, []string{mainArn}, leading("OAUTH#*")},
		{[]string{"dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query"}, []string{mainArn, gsiArn}, leading("OAUTH#*")},
		{[]string{"dynamodb:Query"}, []string{mainArn}, leading("MEMBERBY#*")},
		{[]string{"dynamodb:GetItem"}, []string{mainArn}, previewCondition},
		{[]string{"dynamodb:BatchGetItem"}, []string{mainArn}, commentPreviewCondition},
		{[]string{"dynamodb:GetItem", "dynamodb:UpdateItem"}, []string{mainArn}, approvalCondition},
		{[]string{"secretsmanager:GetSecretValue"}, []string{jsonText(ref(plain.raw.logicalIDWithPrefix(t, "AWS::SecretsManager::Secret", "CognitoClientSecret")))}, ""},
		{[]string{"dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query"}, []string{mainArn}, memberRecordsCondition},
		{[]string{"kinesis:PutRecord"}, []string{jsonText(getAtt(plain.raw.logicalIDWithPrefix(t, "AWS::Kinesis::Stream", "AuditStream"), "Arn"))}, ""},
		{[]string{"secretsmanager:GetSecretValue"}, []string{jsonText(ref(plain.raw.logicalIDWithPrefix(t, "AWS::SecretsManager::Secret", "ConfirmKey")))}, ""},
	}
	got := statementsOf(t, plain, plain.raw.logicalIDWithPrefix(t, "AWS::IAM::Role", functionID(fnOAuth)+"Role"))
	if jsonText(got) != jsonText(want) {
		t.Errorf("oauth role statements:\n%s\nwant\n%s", pretty(got), pretty(want))
	}
	// With an external provider, the secrets it may read are the configured one and
	// the confirmation key.
	var reads []string
	for _, st := range statementsOf(t, full, full.raw.logicalIDWithPrefix(t, "AWS::IAM::Role", functionID(fnOAuth)+"Role")) {
		if slices.Contains(st.Actions, "secretsmanager:GetSecretValue") {
			reads = append(reads, st.Resources...)
		}
	}
	if want := []string{jsonText(fullContext[config.KeyOIDCClientSecretARN]), jsonText(ref(full.raw.logicalIDWithPrefix(t, "AWS::SecretsManager::Secret", "ConfirmKey")))}; !slices.Equal(reads, want) {
		t.Errorf("full: GetSecretValue on %v, want %v", reads, want)
	}
}

// previewCondition, commentPreviewCondition and approvalCondition are the IAM
// conditions of the approval page's ReadDeletePreviews, ReadCommentPreviews and
// DecideApprovals.
const (
	previewCondition        = `{"ForAllValues:StringLike":{"dynamodb:LeadingKeys":["WS#*#ISSUE#*","WS#*#KEY#*","WS#*#COMMENT#*"]},"ForAllValues:StringNotLike":{"dynamodb:LeadingKeys":["WS#*#*#*#*"]}}`
	commentPreviewCondition = `{"ForAllValues:StringLike":{"dynamodb:LeadingKeys":["WS#*#ISSUE#*"]},"ForAllValues:StringNotLike":{"dynamodb:LeadingKeys":["WS#*#*#*#*"]}}`
	approvalCondition       = `{"ForAllValues:StringLike":{"dynamodb:LeadingKeys":["WS#*#APPROVAL#*"]},"ForAllValues:StringNotLike":{"dynamodb:LeadingKeys":["WS#*#*#*#*"]}}`
)

// memberRecordsCondition is the IAM condition of ReadMemberRecords.
const memberRecordsCondition = `{"ForAllValues:StringLike":{"dynamodb:LeadingKeys":["WS#*"]},"ForAllValues:StringNotLike":{"dynamodb:LeadingKeys":["WS#*#*"]}}`

// TestMemberRecordCondition checks the IAM patterns of ReadMemberRecords against the
// store's key layout (shared/store/dynamo/keys.go): member records and the workspace
// partition match; every other tenant item does not.
func TestMemberRecordCondition(t *testing.T) {
	allowed := func(pk string) bool { return iamLike("WS#*", pk) && !iamLike("WS#*#*", pk) }
	for pk, want := range map[string]bool{
		"WS#acme":                   true, // META, MEMBER#<user>, AGENT#<agent>
		"WS#acme#ISSUE#01J":         false,
		"WS#acme#ISSUES":            false,
		"WS#acme#KEY#ACME-1":        false,
		"WS#acme#COMMENT#01J":       false,
		"WS#acme#USAGE":             false,
		"WS#acme#RATE#1700000000#k": false,
		"WS#acme#IDEM#u#t#h":        false,
		"WS#acme#TOKENS":            false,
		"OAUTH#GRANT#g":             false,
		"MEMBERBY#USER#alice":       false,
	} {
		if got := allowed(pk); got != want {
			t.Errorf("ReadMemberRecords allows %s = %v, want %v", pk, got, want)
		}
	}
}

// iamLike is IAM's StringLike: '*' is any run of characters, '?' one; no other
// metacharacter.
func iamLike(pattern, s string) bool {
	re := "^" + strings.ReplaceAll(strings.ReplaceAll(regexp.QuoteMeta(pattern), `\*`, ".*"), `\?`, ".") + "$"
	return regexp.MustCompile(re).MatchString(s)
}

// leadingKeyHolds evaluates a statement's condition block, as IAM would, for a
// request on the one partition key pk. Only the LeadingKeys operators the stack
// writes are known; any other fails the test rather than passing unread.
func leadingKeyHolds(t *testing.T, conditions, pk string) bool {
	t.Helper()
	if conditions == "" {
		return true
	}
	var c map[string]map[string][]string
	if err := json.Unmarshal([]byte(conditions), &c); err != nil {
		t.Fatalf("condition %s: %v", conditions, err)
	}
	for op, keys := range c {
		matched := false
		for k, patterns := range keys {
			if k != "dynamodb:LeadingKeys" {
				t.Fatalf("condition key %s not evaluated here", k)
			}
			matched = slices.ContainsFunc(patterns, func(p string) bool { return iamLike(p, pk) })
		}
		switch op {
		case "ForAllValues:StringLike":
			if !matched {
				return false
			}
		case "ForAllValues:StringNotLike":
			if matched {
				return false
			}
		default:
			t.Fatalf("condition operator %s not evaluated here", op)
		}
	}
	return true
}

// TestApprovalPageReach evaluates the authorization server's role for the main
// table requests its approval page makes through the dynamo store (the preview
// loaders' GetIssue and GetComment, GetApproval, DecideApproval), and for the
// requests beside them it must not be able to make: no issue, comment or member
// write, no listing, no other tenant kind, no approval put (the MCP function's).
func TestApprovalPageReach(t *testing.T) {
	mainArn := jsonText(getAtt(plain.raw.logicalIDWithPrefix(t, "AWS::DynamoDB::GlobalTable", "MainTable"), "Arn"))
	sts := statementsOf(t, plain, plain.raw.logicalIDWithPrefix(t, "AWS::IAM::Role", functionID(fnOAuth)+"Role"))
	allowed := func(action, pk string) bool {
		for _, st := range sts {
			if (slices.Contains(st.Actions, action) || slices.Contains(st.Actions, "dynamodb:*")) &&
				(slices.Contains(st.Resources, mainArn) || slices.Contains(st.Resources, `"*"`)) && leadingKeyHolds(t, st.Conditions, pk) {
				return true
			}
		}
		return false
	}
	kind := func(k, id string) string { return dynamo.TenantPrefix + "acme#" + k + "#" + id }
	issue, byKey, comment := kind(dynamo.IssueKind, "0190c2a4-7d1e-7cc0-9f3b-1d2e3f4a5b6c"), kind(dynamo.IssueKeyKind, "ACME-1"), kind(dynamo.CommentRefKind, "01J0000000000000000000000")
	approval := kind(dynamo.ApprovalKind, "b1nd1ng")
	for _, c := range []struct {
		action, pk string
		want       bool
	}{
		{"GetItem", byKey, true}, {"GetItem", issue, true}, // GetIssue by key, then the issue
		{"GetItem", comment, true}, {"BatchGetItem", issue, true}, // GetComment: the reference, then comment and issue
		{"GetItem", approval, true}, {"UpdateItem", approval, true}, // GetApproval, DecideApproval
		{"GetItem", "WS#acme", true}, // the member record, as before
		{"Query", issue, false}, {"Query", "WS#acme#ISSUES", false}, {"Scan", issue, false},
		{"BatchGetItem", byKey, false}, {"BatchGetItem", comment, false},
		{"PutItem", issue, false}, {"UpdateItem", issue, false}, {"DeleteItem", issue, false}, {"BatchWriteItem", issue, false},
		{"UpdateItem", comment, false}, {"DeleteItem", comment, false}, {"PutItem", byKey, false},
		{"PutItem", approval, false}, {"DeleteItem", approval, false}, {"BatchGetItem", approval, false},
		{"UpdateItem", "WS#acme", false}, {"PutItem", "WS#acme", false},
		{"GetItem", "WS#acme#GONE#ISSUE#x", false}, {"GetItem", "WS#acme#IDEM#u#delete_issue#h", false},
		{"GetItem", "WS#acme#RATE#1700000000#k", false}, {"GetItem", "WS#acme#USAGE", false}, {"GetItem", "WS#acme#RUN#r", false},
		{"UpdateItem", "WS#acme#ISSUE#x#APPROVAL#b", false}, {"UpdateItem", "WS#acme#APPROVAL#b#ISSUE#x", false},
		{"GetItem", "WS#acme#ISSUE#x#ISSUE#y", false},
	} {
		if got := allowed("dynamodb:"+c.action, c.pk); got != c.want {
			t.Errorf("%s on %s allowed = %v, want %v", c.action, c.pk, got, c.want)
		}
	}
}

// TestApprovalPageRoute: the link the MCP function hands out (approval.PagePath)
// and the sign-in's return to it reach the authorization server's function, by
// GET and POST, without the authorizer, through the front door's one behavior.
func TestApprovalPageRoute(t *testing.T) {
	each(t, func(t *testing.T, s *synthesized) {
		oauthFn := s.raw.logicalIDWithPrefix(t, "AWS::Lambda::Function", functionID(fnOAuth))
		// method finds what API Gateway runs for method and p: an exact resource
		// first, then a greedy {proxy+} (one or more non-empty segments).
		method := func(m, p string) (map[string]any, bool) {
			var greedy map[string]any
			for _, id := range s.raw.ofType("AWS::ApiGateway::Method") {
				props := s.raw.Resources[id].Properties
				if props["HttpMethod"] != m && props["HttpMethod"] != "ANY" {
					continue
				}
				res := methodPath(s, props["ResourceId"])
				if res == p {
					return props, true
				}
				if prefix, ok := strings.CutSuffix(res, "{proxy+}"); ok {
					if rest, ok := strings.CutPrefix(p, prefix); ok && rest != "" && !strings.Contains(rest, "//") {
						greedy = props
					}
				}
			}
			return greedy, greedy != nil
		}
		for _, p := range []string{approval.PagePath, callbackPath} {
			for _, m := range []string{"GET", "POST"} {
				props, ok := method(m, p)
				if !ok {
					t.Errorf("%s %s has no route", m, p)
					continue
				}
				if uri := jsonText(path(props, "Integration", "Uri")); !strings.Contains(uri, oauthFn) || props["AuthorizationType"] != "NONE" {
					t.Errorf("%s %s: integration %s, authorization %v; want the oauth function, NONE", m, p, uri, props["AuthorizationType"])
				}
			}
		}
		if s.edge == nil {
			return
		}
		dc := path(s.raw.Resources[s.raw.logicalIDWithPrefix(t, "AWS::CloudFront::Distribution", "FrontDoor")].Properties, "DistributionConfig")
		if b := path(dc, "CacheBehaviors"); b != nil {
			t.Errorf("the front door has path behaviors %s: the approval page must take the default one to the API", jsonText(b))
		}
	})
}

// TestMCPRoleCannotReachOAuthState: the MCP function's role is as it was: no token
// writes, nothing under OAUTH# or MEMBERBY#.
func TestMCPRoleCannotReachOAuthState(t *testing.T) {
	each(t, func(t *testing.T, s *synthesized) {
		tokensTable := s.raw.logicalIDWithPrefix(t, "AWS::DynamoDB::GlobalTable", "TokensTable")
		for _, st := range statementsOf(t, s, s.raw.logicalIDWithPrefix(t, "AWS::IAM::Role", functionID(fnMCP)+"Role")) {
			text := jsonText(st)
			if strings.Contains(text, tokensTable) {
				t.Errorf("mcp role reaches the tokens table: %s", text)
			}
			if strings.Contains(text, dynamo.OAuthPrefix) || strings.Contains(text, dynamo.MemberLookupPrefix) || strings.Contains(text, "secretsmanager:GetSecretValue") && !strings.Contains(text, "AutopilotWebhookSecret") && !strings.Contains(text, "AuditHmacKey") && !strings.Contains(text, "ConfirmKey") {
				t.Errorf("mcp role reaches OAuth state or the upstream secret: %s", text)
			}
		}
	})
}

func TestCognito(t *testing.T) {
	t.Run("plain: Plus plan with threat protection", func(t *testing.T) {
		pool := plain.raw.Resources[plain.raw.logicalIDWithPrefix(t, "AWS::Cognito::UserPool", "UserPool")]
		p := pool.Properties
		for _, c := range []struct {
			what string
			got  any
			want any
		}{
			{"admin creates users only", path(p, "AdminCreateUserConfig", "AllowAdminCreateUserOnly"), true},
			{"e-mail is the user name", jsonText(p["UsernameAttributes"]), `["email"]`},
			{"e-mail verified", jsonText(p["AutoVerifiedAttributes"]), `["email"]`},
			{"e-mail change kept until verified", jsonText(path(p, "UserAttributeUpdateSettings", "AttributesRequireVerificationBeforeUpdate")), `["email"]`},
			{"case-insensitive user names", path(p, "UsernameConfiguration", "CaseSensitive"), false},
			{"MFA required", p["MfaConfiguration"], "ON"},
			{"TOTP only", jsonText(p["EnabledMfas"]), `["SOFTWARE_TOKEN_MFA"]`},
			{"plan", p["UserPoolTier"], "PLUS"},
			{"threat protection", path(p, "UserPoolAddOns", "AdvancedSecurityMode"), "ENFORCED"},
			{"deletion protection", p["DeletionProtection"], "ACTIVE"},
			{"retained", pool.DeletionPolicy, "Retain"},
			{"password length", path(p, "Policies", "PasswordPolicy", "MinimumLength"), 12.0},
			{"recovery by e-mail only", jsonText(path(p, "AccountRecoverySetting", "RecoveryMechanisms")), `[{"Name":"verified_email","Priority":1}]`},
		} {
			if c.got != c.want {
				t.Errorf("user pool %s: %v, want %v", c.what, c.got, c.want)
			}
		}
		invite := jsonText(path(p, "AdminCreateUserConfig", "InviteMessageTemplate", "EmailMessage"))
		for _, part := range []string{"{username}", "{####}", `"/mcp`} {
			if !strings.Contains(invite, part) {
				t.Errorf("invitation %s lacks %s", invite, part)
			}
		}
		risk := plain.raw.Resources[plain.raw.logicalIDWithPrefix(t, "AWS::Cognito::UserPoolRiskConfigurationAttachment", "UserPoolRiskConfiguration")].Properties
		if path(risk, "CompromisedCredentialsRiskConfiguration", "Actions", "EventAction") != "BLOCK" ||
			path(risk, "AccountTakeoverRiskConfiguration", "Actions", "HighAction", "EventAction") != "BLOCK" || risk["ClientId"] != "ALL" {
			t.Errorf("risk configuration = %s", jsonText(risk))
		}
	})
	t.Run("plain: confidential code-grant client", func(t *testing.T) {
		c := plain.raw.Resources[plain.raw.logicalIDWithPrefix(t, "AWS::Cognito::UserPoolClient", "UserPoolAuthorizationServer")].Properties
		for _, x := range []struct {
			what string
			got  any
			want any
		}{
			{"secret", c["GenerateSecret"], true},
			{"flows", jsonText(c["AllowedOAuthFlows"]), `["code"]`},
			{"OAuth on", c["AllowedOAuthFlowsUserPoolClient"], true},
			{"scopes", jsonText(c["AllowedOAuthScopes"]), `["openid","email","profile"]`},
			{"callback", jsonText(c["CallbackURLs"]), "[" + frontDoorURL(plain, t, callbackPath) + "]"},
			{"providers", jsonText(c["SupportedIdentityProviders"]), `["COGNITO"]`},
			{"no existence errors", c["PreventUserExistenceErrors"], "ENABLED"},
			{"token revocation", c["EnableTokenRevocation"], true},
			{"reads", jsonText(c["ReadAttributes"]), `["email","email_verified","name"]`},
			{"writes (never the e-mail)", jsonText(c["WriteAttributes"]), `["name"]`},
			{"ID token minutes", c["IdTokenValidity"], 5.0},
			{"token units", jsonText(c["TokenValidityUnits"]), `{"AccessToken":"minutes","IdToken":"minutes","RefreshToken":"minutes"}`},
		} {
			if x.got != x.want {
				t.Errorf("client %s: %v, want %v", x.what, x.got, x.want)
			}
		}
		if c["ExplicitAuthFlows"] != nil && strings.Contains(jsonText(c["ExplicitAuthFlows"]), "USER_PASSWORD") {
			t.Errorf("the client allows password sign-in through the API: %s", jsonText(c["ExplicitAuthFlows"]))
		}
	})
	t.Run("plain: managed-login domain with a derived prefix", func(t *testing.T) {
		d := plain.raw.Resources[plain.raw.logicalIDWithPrefix(t, "AWS::Cognito::UserPoolDomain", "UserPoolManagedLogin")].Properties
		if d["ManagedLoginVersion"] != 2.0 {
			t.Errorf("managed login version = %v, want 2 (managed login, not the classic hosted UI)", d["ManagedLoginVersion"])
		}
		if got := jsonText(d["Domain"]); !strings.HasPrefix(got, `{"Fn::Join":["",["plain-",{"Fn::Select":[0,{"Fn::Split":["-",{"Fn::Select":[2,{"Fn::Split":["/",{"Ref":"AWS::StackId"}]}]}]}]}]]}`) {
			t.Errorf("domain prefix = %s", got)
		}
		b := plain.raw.Resources[plain.raw.logicalIDWithPrefix(t, "AWS::Cognito::ManagedLoginBranding", "ManagedLoginBranding")].Properties
		if b["UseCognitoProvidedValues"] != true || jsonText(b["ClientId"]) != jsonText(ref(plain.raw.logicalIDWithPrefix(t, "AWS::Cognito::UserPoolClient", "UserPoolAuthorizationServer"))) {
			t.Errorf("branding = %s", jsonText(b))
		}
	})
	t.Run("essentials: context keys", func(t *testing.T) {
		p := essentials.raw.Resources[essentials.raw.logicalIDWithPrefix(t, "AWS::Cognito::UserPool", "UserPool")].Properties
		if p["UserPoolTier"] != "ESSENTIALS" || path(p, "UserPoolAddOns", "AdvancedSecurityMode") != nil {
			t.Errorf("essentials pool: tier %v, add-ons %v", p["UserPoolTier"], jsonText(p["UserPoolAddOns"]))
		}
		if ids := essentials.raw.ofType("AWS::Cognito::UserPoolRiskConfigurationAttachment"); len(ids) != 0 {
			t.Errorf("risk configuration without threat protection: %v", ids)
		}
		d := essentials.raw.Resources[essentials.raw.logicalIDWithPrefix(t, "AWS::Cognito::UserPoolDomain", "UserPoolManagedLogin")].Properties
		if d["Domain"] != "acme-mcp" {
			t.Errorf("domain prefix = %v", d["Domain"])
		}
		c := essentials.raw.Resources[essentials.raw.logicalIDWithPrefix(t, "AWS::Cognito::UserPoolClient", "UserPoolAuthorizationServer")].Properties
		if got := jsonText(c["CallbackURLs"]); got != `["https://mcp.acme.example/oauth/callback"]` {
			t.Errorf("callback = %s", got)
		}
		if !hasSuppression(essentials, "AWS::Cognito::UserPool", "AwsSolutions-COG8") {
			t.Error("the Essentials plan's COG8 finding is not suppressed with a reason")
		}
		if hasSuppression(plain, "AWS::Cognito::UserPool", "AwsSolutions-COG8") {
			t.Error("the Plus pool suppresses COG8: it should satisfy it")
		}
	})
	t.Run("full: an external provider replaces Cognito", func(t *testing.T) {
		for _, typ := range []string{"AWS::Cognito::UserPool", "AWS::Cognito::UserPoolClient", "AWS::Cognito::UserPoolDomain", "AWS::Cognito::ManagedLoginBranding"} {
			if ids := full.raw.ofType(typ); len(ids) != 0 {
				t.Errorf("full has %s %v", typ, ids)
			}
		}
	})
}

func hasSuppression(s *synthesized, typ, rule string) bool {
	for _, id := range s.raw.ofType(typ) {
		for _, x := range asList(path(s.raw.Resources[id].Metadata, "cdk_nag", "rules_to_suppress")) {
			if path(x, "id") == rule {
				return true
			}
		}
	}
	return false
}

// TestUpstreamClientSecret: Cognito's client secret reaches Secrets Manager through
// CloudFormation's attribute, with no custom resource and nothing in clear.
func TestUpstreamClientSecret(t *testing.T) {
	client := plain.raw.logicalIDWithPrefix(t, "AWS::Cognito::UserPoolClient", "UserPoolAuthorizationServer")
	secret := plain.raw.Resources[plain.raw.logicalIDWithPrefix(t, "AWS::SecretsManager::Secret", "CognitoClientSecret")].Properties
	if got := jsonText(secret["SecretString"]); got != jsonText(getAtt(client, "ClientSecret")) {
		t.Errorf("SecretString = %s, want the client's ClientSecret attribute", got)
	}
	each(t, func(t *testing.T, s *synthesized) {
		for id, r := range s.raw.Resources {
			// The front door's cross-region reference reader carries only the edge
			// stack's version and web ACL ARNs (TestCrossRegionProviders).
			if (strings.HasPrefix(r.Type, "Custom::") || r.Type == "AWS::CloudFormation::CustomResource") && r.Type != "Custom::CrossRegionExportReader" {
				t.Errorf("custom resource %s (%s): the secret must not pass through a Lambda", id, r.Type)
			}
		}
		// The only readers of any client secret attribute are the secrets.
		for id, r := range s.raw.Resources {
			if r.Type != "AWS::SecretsManager::Secret" && strings.Contains(jsonText(r.Properties), `"ClientSecret"]`) {
				t.Errorf("%s (%s) reads the client secret", id, r.Type)
			}
		}
		for name, o := range s.raw.Outputs {
			if strings.Contains(jsonText(o.Value), `"ClientSecret"]`) {
				t.Errorf("output %s exposes the client secret", name)
			}
		}
	})
	if ids := full.raw.ofType("AWS::SecretsManager::Secret"); len(ids) != 4 || !slices.ContainsFunc(ids, func(id string) bool { return strings.HasPrefix(id, "AuditHmacKey") }) ||
		!slices.ContainsFunc(ids, func(id string) bool { return strings.HasPrefix(id, "ConfirmKey") }) ||
		!slices.ContainsFunc(ids, func(id string) bool { return strings.HasPrefix(id, "OriginVerifySecret") }) {
		t.Errorf("full: secrets %v, want only the webhook key, the audit HMAC key, the confirmation key and the front door's origin secret (the OIDC secret is the admin's)", ids)
	}
}

// rateACLOf is the web ACL that holds the per-IP rate rules: CloudFront's, in the
// edge stack, behind the front door; the stage's without it.
func rateACLOf(t *testing.T, s *synthesized) map[string]any {
	t.Helper()
	if s.edge != nil {
		return s.edge.raw.Resources[s.edge.raw.logicalIDWithPrefix(t, "AWS::WAFv2::WebACL", "EdgeWebAcl")].Properties
	}
	return s.raw.Resources["ApiWebAcl"].Properties
}

func TestOAuthWAF(t *testing.T) {
	each(t, func(t *testing.T, s *synthesized) {
		acl := s.raw.Resources["ApiWebAcl"].Properties
		rateACL := rateACLOf(t, s)
		byName := map[string]any{}
		for _, a := range []map[string]any{acl, rateACL} {
			priorities := map[float64]string{}
			for _, r := range asList(a["Rules"]) {
				name := path(r, "Name").(string)
				byName[name] = r
				pr := path(r, "Priority").(float64)
				if other, dup := priorities[pr]; dup && other != name {
					t.Errorf("rules %s and %s share priority %v", name, other, pr)
				}
				priorities[pr] = name
			}
		}
		wantLimits := map[string]float64{"OAuthTokenRateLimitPerIp": 300, "OAuthRegisterRateLimitPerIp": 20}
		if s == full {
			wantLimits = map[string]float64{"OAuthTokenRateLimitPerIp": 120, "OAuthRegisterRateLimitPerIp": 10}
		}
		scopes := map[string][]string{
			"OAuthTokenRateLimitPerIp":    {"/oauth/token", "/oauth/revoke"},
			"OAuthRegisterRateLimitPerIp": {"/oauth/register"},
		}
		for name, limit := range wantLimits {
			rb := path(byName[name], "Statement", "RateBasedStatement")
			if path(rb, "AggregateKeyType") != "IP" || path(rb, "Limit") != limit || path(rb, "EvaluationWindowSec") != 300.0 {
				t.Errorf("%s = %s", name, jsonText(rb))
			}
			var got []string
			sd := path(rb, "ScopeDownStatement")
			stmts := asList(path(sd, "OrStatement", "Statements"))
			if stmts == nil {
				stmts = []any{sd}
			}
			for _, st := range stmts {
				bm := path(st, "ByteMatchStatement")
				if path(bm, "FieldToMatch", "UriPath") == nil || path(bm, "PositionalConstraint") != "CONTAINS" ||
					jsonText(path(bm, "TextTransformations")) != `[{"Priority":0,"Type":"URL_DECODE"},{"Priority":1,"Type":"LOWERCASE"}]` {
					t.Errorf("%s scope-down = %s", name, jsonText(bm))
				}
				got = append(got, path(bm, "SearchString").(string))
			}
			if !slices.Equal(got, scopes[name]) {
				t.Errorf("%s covers %v, want %v", name, got, scopes[name])
			}
			if path(byName[name], "Action", "Block", "CustomResponse", "ResponseCode") != 429.0 ||
				path(byName[name], "Action", "Block", "CustomResponse", "CustomResponseBodyKey") != "rate_"+strings.ToLower(name) {
				t.Errorf("%s action = %s", name, jsonText(path(byName[name], "Action")))
			}
			// Within the limit the request goes on to the body and core rules (behind
			// the front door those are the stage's, after CloudFront's ACL).
			if s.edge == nil && path(byName[name], "Priority").(float64) <= path(byName["AWSManagedRulesCommonRuleSet"], "Priority").(float64) {
				t.Errorf("%s runs before the core rule set", name)
			}
		}
		var body struct{ Error, ErrorDescription string }
		if err := json.Unmarshal([]byte(path(rateACL, "CustomResponseBodies", "rate_oauthtokenratelimitperip", "Content").(string)), &body); err != nil || body.Error != "temporarily_unavailable" {
			t.Errorf("OAuth rate-limit body %v: %v", body, err)
		}

		// The core rule set's URL-inclusion rules count, and are blocked on their
		// labels outside the OAuth endpoints.
		overrides := map[string]string{}
		for _, o := range asList(path(byName["AWSManagedRulesCommonRuleSet"], "Statement", "ManagedRuleGroupStatement", "RuleActionOverrides")) {
			if path(o, "ActionToUse", "Count") != nil {
				overrides[path(o, "Name").(string)] = "count"
			}
		}
		re := byName["UrlInclusionOutsideOAuth"]
		labels := jsonText(path(re, "Statement", "AndStatement", "Statements", 0))
		for rule, label := range urlInclusionRules {
			if overrides[rule] != "count" {
				t.Errorf("%s is not set to count", rule)
			}
			if !strings.Contains(labels, `"`+label+`"`) {
				t.Errorf("UrlInclusionOutsideOAuth does not block on %s", label)
			}
		}
		if overrides["SizeRestrictions_BODY"] != "count" {
			t.Error("SizeRestrictions_BODY no longer counts")
		}
		if path(re, "Action", "Block") == nil || path(re, "Priority").(float64) <= path(byName["AWSManagedRulesCommonRuleSet"], "Priority").(float64) {
			t.Errorf("UrlInclusionOutsideOAuth must block, after the group that labels: %s", jsonText(re))
		}
		rx := path(re, "Statement", "AndStatement", "Statements", 1, "NotStatement", "Statement", "RegexMatchStatement")
		if path(rx, "RegexString") != oauthEndpointPath || jsonText(path(rx, "TextTransformations")) != `[{"Priority":0,"Type":"NONE"}]` {
			t.Errorf("exception = %s", jsonText(rx))
		}
	})
}

// TestOAuthEndpointPath: the exception from the URL-inclusion rules covers exactly
// the endpoints whose parameters are URLs, on either URL, and nothing else.
func TestOAuthEndpointPath(t *testing.T) {
	re := regexp.MustCompile(oauthEndpointPath)
	for p, want := range map[string]bool{
		"/prod/oauth/authorize":   true,
		"/prod/oauth/token":       true,
		"/prod/oauth/register":    true,
		"/prod/oauth/revoke":      true,
		"/oauth/authorize":        true, // custom domain, no stage
		"/oauth/token":            true,
		"/prod/oauth/callback":    false,
		"/prod/oauth/consent":     false,
		"/prod/mcp":               false,
		"/prod/tools/x":           false,
		"/prod/tools/oauth/token": false,
		"/prod/oauth/token/":      false,
		"/prod/oauth/%74oken":     false,
		"/prod//oauth/token":      false,
		"/dev/oauth/token":        false,
		"/prod/oauth/tokens":      false,
		"/prod/oauth/token/x":     false,
	} {
		if got := re.MatchString(p); got != want {
			t.Errorf("%s exempt = %v, want %v", p, got, want)
		}
	}
}

func TestDomainPlumbing(t *testing.T) {
	for _, tt := range []struct {
		name     string
		s        *synthesized
		disabled any
		records  int
	}{{"plain", plain, nil, 0}, {"full", full, nil, 2}, {"essentials", essentials, true, 0}} {
		api := tt.s.raw.Resources[tt.s.raw.logicalIDWithPrefix(t, "AWS::ApiGateway::RestApi", "Api")].Properties
		if api["DisableExecuteApiEndpoint"] != tt.disabled {
			t.Errorf("%s: DisableExecuteApiEndpoint = %v, want %v", tt.name, api["DisableExecuteApiEndpoint"], tt.disabled)
		}
		if ids := tt.s.raw.ofType("AWS::Route53::RecordSet"); len(ids) != tt.records {
			t.Errorf("%s: DNS records %v, want %d", tt.name, ids, tt.records)
		}
	}
	// The A record (TestCustomDomainRecords has the AAAA beside it).
	var rec map[string]any
	for _, id := range full.raw.ofType("AWS::Route53::RecordSet") {
		if p := full.raw.Resources[id].Properties; p["Type"] == "A" {
			rec = p
		}
	}
	// Behind the front door the domain is the distribution's; CloudFront's alias zone
	// is Z2FDTNDATAQYW2 (Route 53 "AliasTarget").
	dist := full.raw.logicalIDWithPrefix(t, "AWS::CloudFront::Distribution", "FrontDoor")
	for _, c := range []struct{ got, want any }{
		{rec["Type"], "A"},
		{rec["Name"], "mcp.example.com."},
		{rec["HostedZoneId"], "Z0123456789ABCDEFGHIJ"},
		{jsonText(path(rec, "AliasTarget", "DNSName")), jsonText(getAtt(dist, "DomainName"))},
		{jsonText(path(rec, "AliasTarget", "HostedZoneId")), jsonText(map[string]any{"Fn::FindInMap": []any{"AWSCloudFrontPartitionHostedZoneIdMap", ref("AWS::Partition"), "zoneId"}})},
	} {
		if c.got != c.want {
			t.Errorf("DNS record: %v, want %v", c.got, c.want)
		}
	}
}

func TestOAuthStackOutputs(t *testing.T) {
	cognitoOnly := []string{outCognitoUserPoolID, outCognitoDomain, outAddUserCommand}
	always := []string{outMCPURL, outOAuthIssuer, outUpstreamIssuer, outUpstreamSecretARN, outMemberAddCommand}
	for _, tt := range []struct {
		name    string
		s       *synthesized
		cognito bool
	}{{"plain", plain, true}, {"essentials", essentials, true}, {"full", full, false}} {
		for _, o := range always {
			if _, ok := tt.s.raw.Outputs[o]; !ok {
				t.Errorf("%s lacks output %s", tt.name, o)
			}
		}
		for _, o := range cognitoOnly {
			if _, ok := tt.s.raw.Outputs[o]; ok != tt.cognito {
				t.Errorf("%s: output %s present = %v, want %v", tt.name, o, ok, tt.cognito)
			}
		}
	}
	if got := jsonText(plain.raw.Outputs[outOAuthIssuer].Value); got != frontDoorURL(plain, t, "") {
		t.Errorf("plain issuer = %s", got)
	}
	if got := jsonText(plain.raw.Outputs[outMCPURL].Value); got != frontDoorURL(plain, t, "/mcp") {
		t.Errorf("plain connector URL = %s", got)
	}
	if got := jsonText(full.raw.Outputs[outOAuthIssuer].Value); got != `"https://mcp.example.com"` {
		t.Errorf("full issuer = %s", got)
	}
	if got := jsonText(full.raw.Outputs[outUpstreamIssuer].Value); got != `"https://login.example.com/oauth2/default"` {
		t.Errorf("full upstream issuer = %s", got)
	}
	pool := plain.raw.logicalIDWithPrefix(t, "AWS::Cognito::UserPool", "UserPool")
	add := jsonText(plain.raw.Outputs[outAddUserCommand].Value)
	for _, part := range []string{"aws cognito-idp admin-create-user --region ", jsonText(ref(pool)), "--username <email>",
		"Name=email,Value=<email> Name=email_verified,Value=true", "--desired-delivery-mediums EMAIL"} {
		if !strings.Contains(add, part) {
			t.Errorf("add-user command %s lacks %s", add, part)
		}
	}
	member := jsonText(plain.raw.Outputs[outMemberAddCommand].Value)
	for _, part := range []string{"aacmcp member add --backend dynamodb --table ", " --tokens-table ", " --region ",
		"--workspace <workspace> --user <user> --role <role> --email <email>"} {
		if !strings.Contains(member, part) {
			t.Errorf("member command %s lacks %s", member, part)
		}
	}
	domain := plain.raw.logicalIDWithPrefix(t, "AWS::Cognito::UserPoolDomain", "UserPoolManagedLogin")
	if got := jsonText(plain.raw.Outputs[outCognitoDomain].Value); !strings.Contains(got, jsonText(ref(domain))) || !strings.Contains(got, ".amazoncognito.com") {
		t.Errorf("Cognito domain output = %s", got)
	}
}

func TestDomainLabel(t *testing.T) {
	for in, want := range map[string]string{
		"Aacmcp":                            "aacmcp",
		"Plain":                             "plain",
		"my_Stack.Prod":                     "my-stack-prod",
		"AwsCognitoAmazonThing":             "thing",
		"--x--":                             "x",
		"Cognito":                           "aacmcp",
		strings.Repeat("abcde", 20):         strings.Repeat("abcde", 8),
		"a" + strings.Repeat("-", 50) + "b": "a-b",
	} {
		got := domainLabel(in)
		if got != want {
			t.Errorf("domainLabel(%q) = %q, want %q", in, got, want)
		}
		// A full prefix ("<label>-" and eight hex digits) must be one Cognito accepts.
		prefix := got + "-0a1b2c3d"
		if _, err := config.Load(func(k string) any {
			if k == config.KeyCognitoDomainPrefix {
				return prefix
			}
			return nil
		}); err != nil {
			t.Errorf("derived prefix %q is refused: %v", prefix, err)
		}
	}
}

func TestMaxAccessTTLMatchesServer(t *testing.T) {
	if config.MaxOAuthAccessTTL != oauth.MaxAccessTokenTTL {
		t.Errorf("config.MaxOAuthAccessTTL = %s, shared/oauth allows %s", config.MaxOAuthAccessTTL, oauth.MaxAccessTokenTTL)
	}
}

func pretty(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

// TestTemplateValidationIsFatal: with the app's feature flags, a template that
// CloudFormation would refuse fails synth instead of printing a warning.
func TestTemplateValidationIsFatal(t *testing.T) {
	app := newApp(t.TempDir())
	stack := awscdk.NewStack(app, jsii.String("Invalid"), nil)
	awswafv2.NewCfnWebACL(stack, jsii.String("Acl"), &awswafv2.CfnWebACLProps{
		Scope:         jsii.String("REGIONAL"),
		Description:   jsii.String("not (allowed)"),
		DefaultAction: &awswafv2.CfnWebACL_DefaultActionProperty{Allow: &map[string]any{}},
		VisibilityConfig: &awswafv2.CfnWebACL_VisibilityConfigProperty{
			CloudWatchMetricsEnabled: jsii.Bool(false), MetricName: jsii.String("x"), SampledRequestsEnabled: jsii.Bool(false),
		},
	})
	failed := func() (failed bool) {
		defer func() { failed = recover() != nil }()
		app.Synth(nil)
		return false
	}()
	if !failed {
		t.Error("synth of an invalid WAF description succeeded")
	}
}

// TestExternalJWT: with jwtIssuer the token authorizer gets the issuer's settings and
// read access to member lookups and records; without it, neither.
func TestExternalJWT(t *testing.T) {
	env := fnEnv(t, full, fnAuthorizer)
	for k, want := range map[string]string{
		envJWTIssuer:     "https://idp.example.com/oauth2/aus1",
		envJWTClients:    "claude-connector,chatgpt-connector",
		envJWTAlgorithms: "RS256,ES256",
		envJWTUserClaim:  "email",
		envJWTWorkspace:  "acme",
		envPublicURL:     "https://mcp.example.com",
	} {
		if env[k] != want {
			t.Errorf("full authorizer %s = %v, want %q", k, env[k], want)
		}
	}
	for _, k := range []string{envJWTAudience, envJWTJWKSURL, envJWTWorkspaceClaim, envJWTRequireATJWT} {
		if v, ok := env[k]; ok {
			t.Errorf("full authorizer %s = %v, want unset", k, v)
		}
	}
	if got := fnEnv(t, full, fnMCP)[envJWTIssuer]; got != "https://idp.example.com/oauth2/aus1" {
		t.Errorf("full mcp %s = %v: its resource metadata would not name the issuer", envJWTIssuer, got)
	}
	for _, s := range []*synthesized{plain, essentials} {
		for _, fn := range wiredFunctions {
			for k := range fnEnv(t, s, fn) {
				if strings.HasPrefix(k, "AACMCP_JWT_") {
					t.Errorf("%s without jwtIssuer: %s has %s", *s.stack.StackName(), fn, k)
				}
			}
		}
	}

	mainTable := full.raw.logicalIDWithPrefix(t, "AWS::DynamoDB::GlobalTable", "MainTable")
	var reads []statement
	for _, st := range statementsOf(t, full, full.raw.logicalIDWithPrefix(t, "AWS::IAM::Role", functionID(fnAuthorizer)+"Role")) {
		if strings.Contains(jsonText(st.Resources), mainTable) {
			reads = append(reads, st)
		}
	}
	want := []statement{
		{[]string{"dynamodb:Query"}, []string{jsonText(getAtt(mainTable, "Arn"))}, `{"ForAllValues:StringLike":{"dynamodb:LeadingKeys":["MEMBERBY#*"]}}`},
		{[]string{"dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query"}, []string{jsonText(getAtt(mainTable, "Arn"))}, memberRecordsCondition},
	}
	if jsonText(reads) != jsonText(want) {
		t.Errorf("full authorizer main-table access:\n%s\nwant\n%s", pretty(reads), pretty(want))
	}
}
