package main

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/aacworkflow/aacmcp/infra/auditschema"
	"github.com/aacworkflow/aacmcp/shared/audit/accesslog"
	"github.com/aacworkflow/aacmcp/shared/store/dynamo"
)

// each runs f on every synthesized stack, the Cognito variants included.
func each(t *testing.T, f func(t *testing.T, s *synthesized)) {
	t.Helper()
	for name, s := range map[string]*synthesized{"plain": plain, "full": full, "essentials": essentials} {
		t.Run(name, func(t *testing.T) { f(t, s) })
	}
}

func TestFunctionsFolderMatchesStack(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	names, err := discoverFunctions(filepath.Join(root, "functions"))
	if err != nil {
		t.Fatalf("functions/ does not match the functions the stack deploys: %v", err)
	}
	if !slices.Equal(names, wiredFunctions) {
		t.Errorf("functions/ = %v, stack deploys %v", names, wiredFunctions)
	}
}

func TestLambdaFunctions(t *testing.T) {
	each(t, func(t *testing.T, s *synthesized) {
		var ids []string
		for _, id := range s.raw.ofType("AWS::Lambda::Function") {
			if !strings.HasPrefix(id, crossRegionProvider) {
				ids = append(ids, id)
			}
		}
		if len(ids) != len(wiredFunctions) {
			t.Fatalf("want %d functions, got %v", len(wiredFunctions), ids)
		}
		for _, name := range wiredFunctions {
			id := s.raw.logicalIDWithPrefix(t, "AWS::Lambda::Function", functionID(name))
			p := s.raw.Resources[id].Properties
			spec := functionSpecs[name]
			for _, c := range []struct {
				key  string
				got  any
				want any
			}{
				{"Runtime", p["Runtime"], "provided.al2023"},
				{"Architectures", jsonText(p["Architectures"]), `["arm64"]`},
				{"Handler", p["Handler"], "bootstrap"},
				{"Tracing", path(p, "TracingConfig", "Mode"), "Active"},
				{"MemorySize", p["MemorySize"], spec.memoryMB},
				{"Timeout", p["Timeout"], spec.timeoutSec},
				{"LogGroup", jsonText(path(p, "LoggingConfig", "LogGroup")),
					jsonText(ref(s.raw.logicalIDWithPrefix(t, "AWS::Logs::LogGroup", functionID(name)+"Logs")))},
			} {
				if c.got != c.want {
					t.Errorf("%s %s = %v, want %v", name, c.key, c.got, c.want)
				}
			}
			env, _ := path(p, "Environment", "Variables").(map[string]any)
			for _, k := range []string{envTable, envTokensTable, envAuditStream, envAutopilotSecretARN, envRateLimit, envAuthFailLimit, envLogLevel} {
				if _, ok := env[k]; !ok {
					t.Errorf("%s: environment lacks %s", name, k)
				}
			}
		}
		if fn := s.raw.logicalIDWithPrefix(t, "AWS::Lambda::Function", functionID(fnMCP)); s.raw.Resources[fn].Properties["Timeout"].(float64) >= 29 {
			t.Error("the mcp timeout must stay under API Gateway's 29 s integration timeout")
		}
		for _, id := range s.raw.ofType("AWS::Logs::LogGroup") {
			if s.raw.Resources[id].Properties["RetentionInDays"] == nil {
				t.Errorf("log group %s keeps logs forever", id)
			}
		}
	})
}

func TestFunctionEnvironmentFromContext(t *testing.T) {
	tests := []struct {
		s    *synthesized
		key  string
		want any // nil: unset
	}{
		{plain, envAutopilotWebhook, nil},
		{plain, envAllowedOrigins, nil},
		{plain, envRateLimit, "120/m"},
		{plain, envAuthFailLimit, "20/m"},
		{full, envAutopilotWebhook, "https://runner.example.com/hooks/aacmcp"},
		{full, envAllowedOrigins, "https://app.example.com,https://admin.example.com"},
		// The built-in authorization server first, then the configured ones.
		{plain, envAuthorizationServers, nil},
		{full, envAuthorizationServers, "https://mcp.example.com,https://auth.example.com"},
		{full, envPublicURL, "https://mcp.example.com"},
		{full, envRateLimit, "60/m"},
	}
	for _, tt := range tests {
		id := tt.s.raw.logicalIDWithPrefix(t, "AWS::Lambda::Function", functionID(fnMCP))
		env := path(tt.s.raw.Resources[id].Properties, "Environment", "Variables").(map[string]any)
		if tt.s == plain && tt.key == envAuthorizationServers {
			// On the stage URL the issuer is built from the API's id: a token.
			if got := jsonText(env[tt.key]); got != jsonText(path(plain.raw.Resources[id].Properties, "Environment", "Variables", envPublicURL)) {
				t.Errorf("plain %s = %s, want the public URL alone", tt.key, got)
			}
			continue
		}
		if got := env[tt.key]; got != tt.want {
			t.Errorf("%s = %v, want %v", tt.key, got, tt.want)
		}
	}
	id := plain.raw.logicalIDWithPrefix(t, "AWS::Lambda::Function", functionID(fnMCP))
	env := path(plain.raw.Resources[id].Properties, "Environment", "Variables").(map[string]any)
	secret := plain.raw.logicalIDWithPrefix(t, "AWS::SecretsManager::Secret", "AutopilotWebhookSecret")
	if jsonText(env[envAutopilotSecretARN]) != jsonText(ref(secret)) {
		t.Errorf("%s = %v, want the stack's secret", envAutopilotSecretARN, env[envAutopilotSecretARN])
	}
}

// TestTablesMatchSharedSpec is the stack's half of the contract with `aacmcp init
// --backend dynamodb`: both build from shared/store/dynamo/tablespec.go.
func TestTablesMatchSharedSpec(t *testing.T) {
	for _, tt := range []struct {
		prefix string
		spec   dynamo.TableSpec
	}{{"MainTable", dynamo.Main}, {"TokensTable", dynamo.Tokens}} {
		id := plain.raw.logicalIDWithPrefix(t, "AWS::DynamoDB::GlobalTable", tt.prefix)
		p := plain.raw.Resources[id].Properties
		want := map[string]any{
			"KeySchema": []any{
				map[string]any{"AttributeName": tt.spec.PartitionKey, "KeyType": "HASH"},
				map[string]any{"AttributeName": tt.spec.SortKey, "KeyType": "RANGE"},
			},
			"BillingMode":             "PAY_PER_REQUEST",
			"TimeToLiveSpecification": map[string]any{"AttributeName": tt.spec.TTLAttribute, "Enabled": true},
			"SSESpecification":        map[string]any{"SSEEnabled": true, "SSEType": "KMS"},
		}
		var gsis, attrs []any
		for _, g := range tt.spec.GSIs {
			gsis = append(gsis, map[string]any{
				"IndexName": g.Name,
				"KeySchema": []any{
					map[string]any{"AttributeName": g.PartitionKey, "KeyType": "HASH"},
					map[string]any{"AttributeName": g.SortKey, "KeyType": "RANGE"},
				},
				"Projection": map[string]any{"ProjectionType": g.Projection},
			})
		}
		for _, a := range tt.spec.KeyAttributes() {
			attrs = append(attrs, map[string]any{"AttributeName": a, "AttributeType": dynamo.AttributeType})
		}
		want["GlobalSecondaryIndexes"] = gsis
		want["AttributeDefinitions"] = attrs
		for k, v := range want {
			if jsonText(p[k]) != jsonText(v) {
				t.Errorf("%s %s = %s, want %s", tt.prefix, k, jsonText(p[k]), jsonText(v))
			}
		}
		replica := path(p, "Replicas", 0)
		if path(replica, "PointInTimeRecoverySpecification", "PointInTimeRecoveryEnabled") != true {
			t.Errorf("%s: point-in-time recovery is off", tt.prefix)
		}
		if path(replica, "DeletionProtectionEnabled") != true {
			t.Errorf("%s: deletion protection is off", tt.prefix)
		}
	}
}

func TestRoutesAndAuthorization(t *testing.T) {
	each(t, func(t *testing.T, s *synthesized) {
		got := map[string]string{} // "POST /mcp" -> authorization type
		for _, id := range s.raw.ofType("AWS::ApiGateway::Method") {
			p := s.raw.Resources[id].Properties
			got[fmt.Sprintf("%s %s", p["HttpMethod"], methodPath(s, p["ResourceId"]))] = p["AuthorizationType"].(string)
			if p["AuthorizationType"] == "CUSTOM" && p["AuthorizerId"] == nil {
				t.Errorf("%s: CUSTOM authorization without an authorizer", id)
			}
		}
		want := map[string]string{}
		for _, r := range append(slices.Clone(routes), oauthRoutes...) {
			auth := "NONE"
			if r.authed {
				auth = "CUSTOM"
			}
			want[r.method+" "+r.path] = auth
		}
		if s == full {
			want["OPTIONS /mcp"] = "NONE" // CORS preflight, only with allowed origins
		}
		if !maps.Equal(got, want) {
			t.Errorf("methods = %v\nwant %v", got, want)
		}
		for _, r := range []string{"POST /mcp", "GET /mcp", "DELETE /mcp", "GET /tools", "POST /tools/{name}"} {
			if want[r] != "CUSTOM" {
				t.Errorf("%s must require the authorizer", r)
			}
		}
		for _, r := range []string{"GET /healthz", "GET /.well-known/oauth-protected-resource", "GET /.well-known/oauth-protected-resource/mcp",
			"ANY /oauth/{proxy+}", "GET /.well-known/oauth-authorization-server", "GET /.well-known/openid-configuration"} {
			if want[r] != "NONE" {
				t.Errorf("%s must be public: a client reads it before it has a token", r)
			}
		}
	})
}

func TestAuthorizer(t *testing.T) {
	check(t, "authorizer", func() {
		plain.template.HasResourceProperties(jsii.String("AWS::ApiGateway::Authorizer"), map[string]any{
			"Type":                         "REQUEST",
			"IdentitySource":               "method.request.header.Authorization",
			"AuthorizerResultTtlInSeconds": 60,
		})
	})
	// The authorizer's permission is for the API's authorizers, not any caller.
	check(t, "authorizer permission", func() {
		plain.template.HasResourceProperties(jsii.String("AWS::Lambda::Permission"), map[string]any{
			"Principal":    "apigateway.amazonaws.com",
			"FunctionName": assertions.Match_ObjectLike(&map[string]any{"Fn::GetAtt": assertions.Match_ArrayWith(&[]any{assertions.Match_StringLikeRegexp(jsii.String("^AuthorizerFunction"))})}),
			"SourceArn":    assertions.Match_ObjectLike(&map[string]any{"Fn::Join": assertions.Match_ArrayWith(&[]any{assertions.Match_ArrayWith(&[]any{"/authorizers/"})})}),
		})
	})
}

func TestGatewayResponses(t *testing.T) {
	tests := []struct {
		s          *synthesized
		typ        string
		status     string
		code       string
		authHeader string // substring of WWW-Authenticate, "" for none
	}{
		// No error code: UNAUTHORIZED is also the answer to a request without a token.
		// Behind the front door the metadata is at the distribution's root.
		{plain, "UNAUTHORIZED", "401", "invalid_token", `"/.well-known/oauth-protected-resource/mcp\"'`},
		{plain, "ACCESS_DENIED", "401", "invalid_token", `"/.well-known/oauth-protected-resource/mcp\", error=\"invalid_token\"'`},
		{essentials, "UNAUTHORIZED", "401", "invalid_token", `'Bearer resource_metadata=\"https://mcp.acme.example/.well-known/oauth-protected-resource/mcp\"'`},
		{full, "UNAUTHORIZED", "401", "invalid_token", `'Bearer resource_metadata=\"https://mcp.example.com/.well-known/oauth-protected-resource/mcp\"'`},
		{full, "ACCESS_DENIED", "401", "invalid_token", `'Bearer resource_metadata=\"https://mcp.example.com/.well-known/oauth-protected-resource/mcp\", error=\"invalid_token\"'`},
		{plain, "THROTTLED", "429", "rate_limited", ""},
		{plain, "MISSING_AUTHENTICATION_TOKEN", "404", "not_found", ""},
		{plain, "DEFAULT_5XX", "", "internal_error", ""},
	}
	for _, tt := range tests {
		var found bool
		for _, id := range tt.s.raw.ofType("AWS::ApiGateway::GatewayResponse") {
			p := tt.s.raw.Resources[id].Properties
			if p["ResponseType"] != tt.typ {
				continue
			}
			found = true
			if st, _ := p["StatusCode"].(string); st != tt.status {
				t.Errorf("%s status = %q, want %q", tt.typ, st, tt.status)
			}
			if body := jsonText(path(p, "ResponseTemplates", "application/json")); !strings.Contains(body, `\"code\":\"`+tt.code+`\"`) {
				t.Errorf("%s body %s lacks code %s", tt.typ, body, tt.code)
			}
			h := jsonText(path(p, "ResponseParameters", "gatewayresponse.header.WWW-Authenticate"))
			if tt.authHeader != "" && !strings.Contains(h, tt.authHeader) {
				t.Errorf("%s WWW-Authenticate = %s, want it to contain %s", tt.typ, h, tt.authHeader)
			}
		}
		if !found {
			t.Errorf("no gateway response %s", tt.typ)
		}
	}
}

func TestStage(t *testing.T) {
	check(t, "stage", func() {
		plain.template.HasResourceProperties(jsii.String("AWS::ApiGateway::Stage"), map[string]any{
			"StageName":      stageName,
			"TracingEnabled": true,
			"AccessLogSetting": map[string]any{
				"Format":         accesslog.Format,
				"DestinationArn": getAtt(plain.raw.logicalIDWithPrefix(t, "AWS::Logs::LogGroup", "ApiAccessLogs"), "Arn"),
			},
			"MethodSettings": assertions.Match_ArrayWith(&[]any{assertions.Match_ObjectLike(&map[string]any{
				"HttpMethod": "*", "ResourcePath": "/*",
				"ThrottlingRateLimit": 1000, "ThrottlingBurstLimit": 2000,
				"LoggingLevel": "ERROR", "DataTraceEnabled": false, "MetricsEnabled": true,
			})}),
		})
	})
	check(t, "regional endpoint", func() {
		plain.template.HasResourceProperties(jsii.String("AWS::ApiGateway::RestApi"), map[string]any{
			"EndpointConfiguration": map[string]any{"Types": []any{"REGIONAL"}},
		})
	})
}

func TestCustomDomainOnlyFromContext(t *testing.T) {
	for _, s := range []*synthesized{plain, full} {
		check(t, "no API Gateway domain behind the front door", func() {
			s.template.ResourceCountIs(jsii.String("AWS::ApiGateway::DomainName"), jsii.Number(0))
		})
	}
	check(t, "the bare API's domain from context", func() {
		essentials.template.HasResourceProperties(jsii.String("AWS::ApiGateway::DomainName"), map[string]any{
			"DomainName":             "mcp.acme.example",
			"RegionalCertificateArn": essentialsContext["certificateArn"],
			"SecurityPolicy":         "TLS_1_2",
		})
		essentials.template.ResourceCountIs(jsii.String("AWS::ApiGateway::BasePathMapping"), jsii.Number(1))
	})
	check(t, "the distribution's domain from context", func() {
		full.template.HasResourceProperties(jsii.String("AWS::CloudFront::Distribution"), map[string]any{
			"DistributionConfig": assertions.Match_ObjectLike(&map[string]any{
				"Aliases": []any{"mcp.example.com"},
				"ViewerCertificate": map[string]any{
					"AcmCertificateArn":      fullContext["certificateArn"],
					"MinimumProtocolVersion": "TLSv1.2_2021",
					"SslSupportMethod":       "sni-only",
				},
			}),
		})
	})
	for _, s := range []*synthesized{full, essentials} {
		if _, ok := s.raw.Outputs[outDomainTarget]; !ok {
			t.Errorf("%s stack lacks output %s", *s.stack.StackName(), outDomainTarget)
		}
	}
	if _, ok := plain.raw.Outputs[outDomainTarget]; ok {
		t.Errorf("plain stack has output %s", outDomainTarget)
	}
}

func TestWAF(t *testing.T) {
	acl := plain.raw.Resources["ApiWebAcl"].Properties
	if acl["Scope"] != "REGIONAL" {
		t.Errorf("web ACL scope = %v", acl["Scope"])
	}
	byName := map[string]any{}
	for _, a := range []map[string]any{acl, rateACLOf(t, plain)} {
		for _, r := range asList(a["Rules"]) {
			byName[path(r, "Name").(string)] = r
		}
	}
	if got := path(byName["RateLimitPerIp"], "Statement", "RateBasedStatement"); path(got, "AggregateKeyType") != "IP" || path(got, "Limit") != 1000.0 {
		t.Errorf("rate rule = %s", jsonText(got))
	}
	if path(byName["RateLimitPerIp"], "Action", "Block") == nil {
		t.Error("rate rule does not block")
	}
	size := path(byName["BodySizeLimit"], "Statement", "SizeConstraintStatement")
	if path(size, "ComparisonOperator") != "GT" || path(size, "Size") != 65536.0 || path(size, "FieldToMatch", "Body", "OversizeHandling") != "MATCH" {
		t.Errorf("body size rule = %s", jsonText(size))
	}
	if path(byName["AWSManagedRulesCommonRuleSet"], "Statement", "ManagedRuleGroupStatement", "VendorName") != "AWS" {
		t.Error("AWS common rule set missing")
	}
	if path(acl, "AssociationConfig", "RequestBody", "API_GATEWAY", "DefaultSizeInspectionLimit") != "KB_64" {
		t.Error("WAF does not inspect the 64 KB the body limit needs")
	}
	check(t, "association", func() {
		plain.template.HasResourceProperties(jsii.String("AWS::WAFv2::WebACLAssociation"), map[string]any{
			"WebACLArn": getAtt("ApiWebAcl", "Arn"),
			"ResourceArn": map[string]any{"Fn::Join": assertions.Match_ArrayWith(&[]any{assertions.Match_ArrayWith(&[]any{
				map[string]any{"Ref": plain.raw.logicalIDWithPrefix(t, "AWS::ApiGateway::Stage", "ApiDeploymentStage")},
			})})},
		})
	})
}

func TestAuditStreamAndBucket(t *testing.T) {
	check(t, "stream", func() {
		plain.template.HasResourceProperties(jsii.String("AWS::Kinesis::Stream"), map[string]any{
			"StreamModeDetails": map[string]any{"StreamMode": "ON_DEMAND"},
			"StreamEncryption":  map[string]any{"EncryptionType": "KMS", "KeyId": "alias/aws/kinesis"},
		})
	})
	bucket := func(s *synthesized) map[string]any {
		return s.raw.Resources[s.raw.logicalIDWithPrefix(t, "AWS::S3::Bucket", "AuditBucket")].Properties
	}
	for _, tt := range []struct {
		s          *synthesized
		expiration any
	}{{plain, 400.0}, {full, 730.0}} {
		b := bucket(tt.s)
		rule := path(b, "LifecycleConfiguration", "Rules", 0)
		for _, c := range []struct{ got, want any }{
			{jsonText(b["PublicAccessBlockConfiguration"]), `{"BlockPublicAcls":true,"BlockPublicPolicy":true,"IgnorePublicAcls":true,"RestrictPublicBuckets":true}`},
			{path(b, "BucketEncryption", "ServerSideEncryptionConfiguration", 0, "ServerSideEncryptionByDefault", "SSEAlgorithm"), "AES256"},
			{path(b, "VersioningConfiguration", "Status"), "Enabled"},
			{path(b, "LoggingConfiguration", "LogFilePrefix"), "audit-bucket/"},
			{path(rule, "Transitions", 0, "StorageClass"), "GLACIER_IR"},
			{path(rule, "Transitions", 0, "TransitionInDays"), 90.0},
			{path(rule, "ExpirationInDays"), tt.expiration},
		} {
			if c.got != c.want {
				t.Errorf("audit bucket: %v, want %v", c.got, c.want)
			}
		}
	}
	// TLS only: the bucket policy denies aws:SecureTransport false.
	policy := plain.raw.Resources[plain.raw.logicalIDWithPrefix(t, "AWS::S3::BucketPolicy", "AuditBucketPolicy")].Properties
	if s := jsonText(policy); !strings.Contains(s, `"aws:SecureTransport":"false"`) || !strings.Contains(s, `"Effect":"Deny"`) {
		t.Errorf("audit bucket policy does not enforce TLS: %s", s)
	}
}

func TestFirehose(t *testing.T) {
	ds := plain.raw.Resources["AuditDelivery"].Properties
	s3 := ds["ExtendedS3DestinationConfiguration"]
	for _, c := range []struct {
		what string
		got  any
		want any
	}{
		{"type", ds["DeliveryStreamType"], "KinesisStreamAsSource"},
		{"source", jsonText(path(ds, "KinesisStreamSourceConfiguration", "KinesisStreamARN")), jsonText(getAtt(plain.raw.logicalIDWithPrefix(t, "AWS::Kinesis::Stream", "AuditStream"), "Arn"))},
		{"prefix", path(s3, "Prefix"), "audit/dt=!{partitionKeyFromQuery:dt}/hour=!{partitionKeyFromQuery:hour}/"},
		{"error prefix", strings.HasPrefix(path(s3, "ErrorOutputPrefix").(string), "audit-errors/!{firehose:error-output-type}/"), true},
		{"dynamic partitioning", path(s3, "DynamicPartitioningConfiguration", "Enabled"), true},
		{"jq", jsonText(path(s3, "ProcessingConfiguration", "Processors", 0)), jsonText(map[string]any{
			"Type": "MetadataExtraction",
			"Parameters": []any{
				map[string]any{"ParameterName": "MetadataExtractionQuery", "ParameterValue": partitionQuery},
				map[string]any{"ParameterName": "JsonParsingEngine", "ParameterValue": "JQ-1.6"},
			},
		})},
		{"buffer >= 64 MiB", path(s3, "BufferingHints", "SizeInMBs").(float64) >= 64, true},
		{"parquet", path(s3, "DataFormatConversionConfiguration", "OutputFormatConfiguration", "Serializer", "ParquetSerDe", "Compression"), "SNAPPY"},
		{"schema table", jsonText(path(s3, "DataFormatConversionConfiguration", "SchemaConfiguration", "TableName")), jsonText(ref(plain.raw.logicalIDWithPrefix(t, "AWS::Glue::Table", "AuditTable")))},
		{"logging", path(s3, "CloudWatchLoggingOptions", "Enabled"), true},
	} {
		if c.got != c.want {
			t.Errorf("firehose %s = %v, want %v", c.what, c.got, c.want)
		}
	}
}

func TestGlueTable(t *testing.T) {
	cols, err := auditschema.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var want []any
	for _, c := range cols {
		want = append(want, map[string]any{"Name": c.Name, "Type": c.Type})
	}
	in := path(plain.raw.Resources[plain.raw.logicalIDWithPrefix(t, "AWS::Glue::Table", "AuditTable")].Properties, "TableInput")
	if got := path(in, "StorageDescriptor", "Columns"); jsonText(got) != jsonText(want) {
		t.Errorf("columns = %s\nwant %s", jsonText(got), jsonText(want))
	}
	if got := jsonText(path(in, "PartitionKeys")); got != `[{"Name":"dt","Type":"string"},{"Name":"hour","Type":"string"}]` {
		t.Errorf("partition keys = %s", got)
	}
	params := path(in, "Parameters").(map[string]any)
	for k, v := range map[string]any{
		"projection.enabled": "true", "projection.dt.type": "date", "projection.dt.format": "yyyy-MM-dd",
		"projection.hour.type": "integer", "projection.hour.range": "0,23", "projection.hour.digits": "2",
		"has_encrypted_data": false,
	} {
		if params[k] != v {
			t.Errorf("table parameter %s = %v, want %v", k, params[k], v)
		}
	}
	if !strings.Contains(jsonText(params["storage.location.template"]), "/audit/dt=${dt}/hour=${hour}/") {
		t.Errorf("location template = %s", jsonText(params["storage.location.template"]))
	}
	if path(in, "Name") != AuditTableName {
		t.Errorf("table name = %v", path(in, "Name"))
	}
}

func TestAthena(t *testing.T) {
	wg := plain.raw.Resources["AuditWorkGroup"].Properties
	c := path(wg, "WorkGroupConfiguration")
	if path(c, "EnforceWorkGroupConfiguration") != true || path(c, "BytesScannedCutoffPerQuery") != float64(10*1024*1024*1024) ||
		path(c, "ResultConfiguration", "EncryptionConfiguration", "EncryptionOption") != "SSE_S3" {
		t.Errorf("workgroup configuration = %s", jsonText(c))
	}
	results := plain.raw.logicalIDWithPrefix(t, "AWS::S3::Bucket", "AthenaResultsBucket")
	if !strings.Contains(jsonText(path(c, "ResultConfiguration", "OutputLocation")), results) {
		t.Errorf("results do not go to the results bucket: %s", jsonText(path(c, "ResultConfiguration", "OutputLocation")))
	}
}

// TestNamedQueriesMatchRepository: one saved query per events/queries/*.sql, whatever is there.
func TestNamedQueriesMatchRepository(t *testing.T) {
	got := map[string]map[string]any{}
	for _, id := range plain.raw.ofType("AWS::Athena::NamedQuery") {
		p := plain.raw.Resources[id].Properties
		got[p["Name"].(string)] = p
	}
	if len(got) != len(repoQueries) {
		t.Errorf("%d named queries for %d query files", len(got), len(repoQueries))
	}
	for _, q := range repoQueries {
		p, ok := got[q.Name]
		if !ok {
			t.Errorf("no named query for %s.sql", q.Name)
			continue
		}
		if p["QueryString"] != q.SQL {
			t.Errorf("%s: query text differs from the file", q.Name)
		}
		if d, _ := p["Description"].(string); d != q.Description {
			t.Errorf("%s: description %q, want %q", q.Name, d, q.Description)
		}
		if jsonText(p["WorkGroup"]) != jsonText(ref("AuditWorkGroup")) {
			t.Errorf("%s: not in the audit workgroup", q.Name)
		}
	}
}

func TestForwarding(t *testing.T) {
	forwarder := getAtt(plain.raw.logicalIDWithPrefix(t, "AWS::Lambda::Function", functionID(fnForwarder)), "Arn")
	want := map[string]string{ // log group logical id prefix -> pattern
		functionID(fnMCP) + "Logs":        fallbackFilterPattern,
		functionID(fnAuthorizer) + "Logs": fallbackFilterPattern,
		functionID(fnOAuth) + "Logs":      fallbackFilterPattern,
		"ApiAccessLogs":                   unauthenticatedFilterPattern,
		"WafLogs":                         wafBlockedFilterPattern,
	}
	got := map[string]string{}
	for _, id := range plain.raw.ofType("AWS::Logs::SubscriptionFilter") {
		p := plain.raw.Resources[id].Properties
		if jsonText(p["DestinationArn"]) != jsonText(forwarder) {
			t.Errorf("%s does not feed the forwarder", id)
		}
		lg := path(p, "LogGroupName", "Ref").(string)
		for prefix := range want {
			if strings.HasPrefix(lg, prefix) {
				got[prefix] = p["FilterPattern"].(string)
			}
		}
	}
	if !maps.Equal(got, want) {
		t.Errorf("subscriptions = %v, want %v", got, want)
	}
	check(t, "on-failure destination", func() {
		plain.template.HasResourceProperties(jsii.String("AWS::Lambda::EventInvokeConfig"), map[string]any{
			"DestinationConfig": map[string]any{"OnFailure": map[string]any{
				"Destination": getAtt(plain.raw.logicalIDWithPrefix(t, "AWS::SQS::Queue", "ForwarderFailures"), "Arn"),
			}},
		})
	})
}

func TestAlarms(t *testing.T) {
	topic := ref(plain.raw.logicalIDWithPrefix(t, "AWS::SNS::Topic", "AlarmTopic"))
	metrics := map[string]bool{}
	for _, id := range plain.raw.ofType("AWS::CloudWatch::Alarm") {
		p := plain.raw.Resources[id].Properties
		if !strings.Contains(jsonText(p["AlarmActions"]), jsonText(topic)) {
			t.Errorf("alarm %s does not notify the topic", id)
		}
		if name, ok := p["MetricName"].(string); ok {
			metrics[name] = true
		}
		for _, m := range asList(p["Metrics"]) {
			if e, ok := path(m, "Expression").(string); ok {
				metrics[e] = true
			}
			if n, ok := path(m, "MetricStat", "Metric", "MetricName").(string); ok {
				metrics[n] = true
			}
		}
	}
	for _, m := range []string{
		"5XXError", metricAuditFallbackLines, "DeliveryToS3.Success", "FailedConversion.Records",
		"ApproximateNumberOfMessagesVisible", "WriteThrottleEvents",
		`SELECT SUM(Denied) FROM SCHEMA("AACMCP", Function)`,
	} {
		if !metrics[m] {
			t.Errorf("no alarm on %s (alarmed: %v)", m, sortedKeys(metrics))
		}
	}
	check(t, "topic encrypted", func() {
		plain.template.HasResourceProperties(jsii.String("AWS::SNS::Topic"), map[string]any{
			"KmsMasterKeyId": assertions.Match_AnyValue(),
		})
	})
	check(t, "no subscription without alarmEmail", func() {
		plain.template.ResourceCountIs(jsii.String("AWS::SNS::Subscription"), jsii.Number(0))
	})
	check(t, "subscription from alarmEmail", func() {
		full.template.HasResourceProperties(jsii.String("AWS::SNS::Subscription"), map[string]any{
			"Protocol": "email", "Endpoint": "ops@example.com",
		})
	})
	check(t, "dashboard", func() { plain.template.ResourceCountIs(jsii.String("AWS::CloudWatch::Dashboard"), jsii.Number(1)) })
	body := jsonText(plain.raw.Resources[plain.raw.logicalIDWithPrefix(t, "AWS::CloudWatch::Dashboard", "Dashboard")].Properties["DashboardBody"])
	for _, w := range []string{"Tool calls", "Denials by reason", "p99", "cold starts", "Firehose delivery", "Audit fallback", "DynamoDB throttles"} {
		if !strings.Contains(body, w) {
			t.Errorf("dashboard lacks %q", w)
		}
	}
}

// TestOAuthOutputs: cdk deploy says what the URL it hands out does for OAuth
// discovery and challenges.
func TestOAuthOutputs(t *testing.T) {
	for _, tt := range []struct {
		s         *synthesized
		name      string
		discovery []string
		challenge []string
	}{
		{plain, "front door", []string{"CloudFront distribution", "at the root and served"},
			[]string{"Lambda@Edge origin-response function", "back", "403 to requests that did not come through CloudFront"}},
		{full, "front door on a custom domain", []string{"CloudFront distribution", "at the root and served"}, []string{"Lambda@Edge"}},
		{bare, "bare API", []string{"cannot discover", "outside the stage", "403", "custom domain", "docs/deploy.md"},
			[]string{"x-amzn-Remapped-WWW-Authenticate", "frontDoor=false"}},
		{essentials, "bare API on a custom domain", []string{"Custom domain at the root"}, []string{"x-amzn-Remapped-WWW-Authenticate", "frontDoor=false"}},
	} {
		for out, want := range map[string][]string{outOAuthDiscovery: tt.discovery, outStepUpChallenge: tt.challenge} {
			got := jsonText(tt.s.raw.Outputs[out].Value)
			for _, w := range want {
				if !strings.Contains(got, w) {
					t.Errorf("%s: %s = %s, want it to say %q", tt.name, out, got, w)
				}
			}
		}
	}
}

func TestOutputs(t *testing.T) {
	for _, o := range []string{outEndpointURL, outMCPURL, outTableName, outTokensTableName, outAuditStreamName,
		outAuditBucketName, outAthenaWorkGroup, outGlueDatabase, outAuditTable, outTokenCreateCommand} {
		if _, ok := plain.raw.Outputs[o]; !ok {
			t.Errorf("missing output %s", o)
		}
	}
	cmd := jsonText(plain.raw.Outputs[outTokenCreateCommand].Value)
	for _, part := range []string{
		"aacmcp token create --backend dynamodb --table ",
		jsonText(ref(plain.raw.logicalIDWithPrefix(t, "AWS::DynamoDB::GlobalTable", "MainTable"))),
		" --tokens-table ", " --region " + testRegion + " --workspace <workspace> --user <user> --scopes issues:read,",
	} {
		if !strings.Contains(cmd, part) {
			t.Errorf("token command %s lacks %s", cmd, part)
		}
	}
	if got := jsonText(full.raw.Outputs[outMCPURL].Value); got != `"https://mcp.example.com/mcp"` {
		t.Errorf("full McpUrl = %s", got)
	}
}

// TestNagAwsSolutions: every AwsSolutions error is fixed or suppressed with a reason.
func TestNagAwsSolutions(t *testing.T) {
	stacks := map[string]*synthesized{"plain": plain, "full": full, "essentials": essentials, "bare": bare,
		"plain edge": plain.edge, "full edge": full.edge}
	for name, s := range stacks {
		t.Run(name, func(t *testing.T) { nagClean(t, s) })
	}
}

// nagClean: no unsuppressed AwsSolutions error, and a real reason on every suppression.
func nagClean(t *testing.T, s *synthesized) {
	t.Helper()
	{
		for _, e := range s.nagErrors {
			t.Error(e)
		}
		suppressions := 0
		for id, r := range s.raw.Resources {
			sup, _ := path(r.Metadata, "cdk_nag", "rules_to_suppress").([]any)
			for _, x := range sup {
				if reason, _ := path(x, "reason").(string); len(strings.Fields(reason)) < 8 {
					t.Errorf("%s: suppression of %v has no real reason: %q", id, path(x, "id"), reason)
				}
				suppressions++
			}
		}
		if suppressions == 0 {
			t.Error("found no suppressions at all: the metadata path changed and this check is blind")
		}
	}
}

// TestNagHarnessSeesFindings proves the nag check above is not blind: a bare bucket in
// a throwaway app must be reported (no access logs, no TLS enforcement).
func TestNagHarnessSeesFindings(t *testing.T) {
	app := newApp(t.TempDir())
	stack := awscdk.NewStack(app, jsii.String("Bare"), nil)
	awss3.NewBucket(stack, jsii.String("Bucket"), nil)
	awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Reports: jsii.Bool(false)}), nil)
	check(t, "synth", func() { app.Synth(nil) })
	errs := strings.Join(nagErrorsOf(stack), "\n")
	for _, rule := range []string{"AwsSolutions-S1:", "AwsSolutions-S10:"} {
		if !strings.Contains(errs, rule) {
			t.Errorf("nag did not report %s; got:\n%s", rule, errs)
		}
	}
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}
