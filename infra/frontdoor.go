package main

import (
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscertificatemanager"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudfront"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudfrontorigins"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/aws-cdk-go/awscdk/v2/awswafv2"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/aacworkflow/aacmcp/functions/forwarder/forwarderfn"
	"github.com/aacworkflow/aacmcp/infra/config"
	"github.com/aacworkflow/aacmcp/shared/apigw"
)

// The CloudFront front door (docs/decisions.md, "Challenges and discovery through API
// Gateway"): a distribution whose root is the REST API's stage, with a Lambda@Edge
// origin-response function (functions/edge) that gives the challenges the MCP
// function writes back their WWW-Authenticate name, which API Gateway renames. Its
// root being the API's also puts the RFC 8414 and RFC 9728 well-known URLs, which
// clients derive at the host root, on the API.
//
// Lambda@Edge functions and CloudFront-scoped web ACLs live in us-east-1, so they are
// a second stack, <stack>Edge, pinned there; the main stack refers to them with CDK's
// cross-region references (an SSM parameter written in the main stack's region by a
// custom resource of the edge stack).

// edgeRegion is where Lambda@Edge functions and CloudFront web ACLs are created.
const edgeRegion = config.CloudFrontCertificateRegion

// originVerifyHeader carries the distribution's secret to the origin (apigw says why).
const originVerifyHeader = apigw.OriginVerifyHeader

// EdgeStackID is the id (and name) of the us-east-1 stack of the stack id.
func EdgeStackID(id string) string { return id + "Edge" }

// edgeFunctionName is the physical name of the origin-response function. It is
// fixed so that its role can name the log groups Lambda@Edge writes to in every
// region ("/aws/lambda/us-east-1.<name>").
func edgeFunctionName(edge awscdk.Stack) string { return *edge.StackName() + "-restore-challenge" }

// edgeStack is what the front door needs from us-east-1.
type edgeStack struct {
	stack   awscdk.Stack
	fn      awslambda.Function
	version awslambda.IVersion
	webACL  awswafv2.CfnWebACL
}

// newEdgeStack defines the us-east-1 stack: the origin-response function and the
// web ACL of the distribution, which holds the per-IP rate limits (rateRules): only
// CloudFront still sees the client's address as the connection's.
func newEdgeStack(scope constructs.Construct, id string, account *string, cfg config.Config, code string) *edgeStack {
	e := &edgeStack{}
	e.stack = awscdk.NewStack(scope, jsii.String(EdgeStackID(id)), &awscdk.StackProps{
		Env:         &awscdk.Environment{Account: account, Region: jsii.String(edgeRegion)},
		Description: jsii.String("aacmcp: the CloudFront front door's Lambda@Edge function and web ACL (us-east-1)"),
	})
	name := edgeFunctionName(e.stack)
	// Lambda@Edge runs the function as the role in every region with an edge cache,
	// so both services assume it ("Set up IAM permissions and roles for
	// Lambda@Edge"). Its only permission is its own logs.
	role := awsiam.NewRole(e.stack, jsii.String("RestoreChallengeRole"), &awsiam.RoleProps{
		AssumedBy: awsiam.NewCompositePrincipal(
			awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
			awsiam.NewServicePrincipal(jsii.String("edgelambda.amazonaws.com"), nil),
		),
		Description: jsii.String("aacmcp Lambda@Edge origin-response function"),
	})
	logGroup := "arn:" + *e.stack.Partition() + ":logs:*:" + *e.stack.Account() + ":log-group:/aws/lambda/" + edgeRegion + "." + name
	role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("WriteOwnLogsInEveryRegion"),
		Actions:   jsii.Strings("logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"),
		Resources: jsii.Strings(logGroup, logGroup+":*"),
	}))
	// cdk-nag names the resource with the account as CloudFormation's pseudo parameter.
	acct := *e.stack.Account()
	if *awscdk.Token_IsUnresolved(e.stack.Account()) {
		acct = "<AWS::AccountId>"
	}
	nagGroup := "Resource::arn:" + *e.stack.Partition() + ":logs:*:" + acct + ":log-group:/aws/lambda/" + edgeRegion + "." + name
	suppress(role, "IAM5", "Lambda@Edge writes a replica's logs to /aws/lambda/us-east-1.<function> in the region "+
		"where it ran, creating the group there: the region must be a wildcard, the group name is exact.",
		nagGroup, nagGroup+":*")
	// Lambda@Edge supports neither arm64, nor environment variables, nor layers, nor
	// X-Ray active tracing ("Restrictions on Lambda@Edge"): a small x86_64 Node.js
	// function, whose whole code is functions/edge/index.mjs.
	e.fn = awslambda.NewFunction(e.stack, jsii.String("RestoreChallenge"), &awslambda.FunctionProps{
		FunctionName: jsii.String(name),
		Description:  jsii.String("aacmcp: renames X-Amzn-Remapped-WWW-Authenticate back to WWW-Authenticate (origin response)"),
		Runtime:      awslambda.Runtime_NODEJS_22_X(),
		Architecture: awslambda.Architecture_X86_64(),
		Handler:      jsii.String("index.handler"),
		Code:         awslambda.Code_FromAsset(jsii.String(code), nil),
		MemorySize:   jsii.Number(128),
		// Origin-response functions may run 30 s; this one renames a header.
		Timeout: awscdk.Duration_Seconds(jsii.Number(5)),
		Role:    role,
		// A replicated version cannot be deleted until CloudFront has removed its
		// replicas (hours after the association changes): keep old versions instead
		// of failing the update that replaces one.
		CurrentVersionOptions: &awslambda.VersionOptions{RemovalPolicy: awscdk.RemovalPolicy_RETAIN},
	})
	suppress(e.fn, "L1", "Lambda@Edge supports a subset of Lambda's runtimes (\"Restrictions on Lambda@Edge\"): "+
		"nodejs22.x is one it lists; the newest Node.js runtime could not be confirmed for Lambda@Edge here.")
	e.version = e.fn.CurrentVersion()

	bodies := rateBodies(cfg)
	rules := rateRules(cfg)
	e.webACL = awswafv2.NewCfnWebACL(e.stack, jsii.String("EdgeWebAcl"), &awswafv2.CfnWebACLProps{
		Scope:                jsii.String("CLOUDFRONT"),
		Description:          jsii.String("aacmcp front door: rate limits per IP without a token, per token and per IP with one, OAuth token and registration per IP"),
		DefaultAction:        &awswafv2.CfnWebACL_DefaultActionProperty{Allow: &map[string]any{}},
		VisibilityConfig:     wafVisibility("aacmcp-edge"),
		CustomResponseBodies: &bodies,
		Rules:                &rules,
	})
	return e
}

// frontDoor is the distribution and the secret that proves a request came through it.
type frontDoor struct {
	dist   awscloudfront.Distribution
	secret awssecretsmanager.Secret
	// version and previous are the secret's versions the origin header and the WAF
	// rule name (config.OriginSecretVersion); "" is AWSCURRENT at deploy time.
	version, previous string
	// customDomain: the distribution answers domainName (the DNS record is to be
	// pointed at it).
	customDomain bool
}

// newFrontDoor puts the distribution in front of the API. It names the API by its id
// alone (not its stage or deployment): the functions' AACMCP_PUBLIC_URL names the
// distribution, the methods name the functions and the deployment the methods, so a
// reference to the stage would be a cycle (synth refuses it: with the app's
// validateAgainstDefaultRules flag a distribution naming the stage fails with
// "Circular Dependencies", tried).
func newFrontDoor(scope constructs.Construct, cfg config.Config, a *api, edge *edgeStack) *frontDoor {
	stack := awscdk.Stack_Of(scope)
	f := &frontDoor{version: cfg.OriginSecretVersion, previous: cfg.OriginSecretPreviousVersion}
	f.secret = awssecretsmanager.NewSecret(scope, jsii.String("OriginVerifySecret"), &awssecretsmanager.SecretProps{
		Description: jsii.String("aacmcp: the header value CloudFront sends the API and its regional WAF requires"),
		GenerateSecretString: &awssecretsmanager.SecretStringGenerator{
			PasswordLength:     jsii.Number(48),
			ExcludePunctuation: jsii.Bool(true),
		},
	})
	suppress(f.secret, "SMG4", "The value must change in the distribution's origin header and the regional WAF rule "+
		"together, which both read it at deploy time: rotation is put-secret-value then cdk deploy with the new "+
		"version id, the old one still accepted until CloudFront has deployed (docs/deploy.md), not an unattended "+
		"Lambda that would break every request between the two.")

	origin := awscloudfrontorigins.NewHttpOrigin(
		jsii.String(*a.rest.RestApiId()+".execute-api."+*stack.Region()+"."+*stack.UrlSuffix()),
		&awscloudfrontorigins.HttpOriginProps{
			// The distribution's root is the stage's: /mcp is /prod/mcp, and
			// /.well-known/... is at the host root where clients look.
			OriginPath:         jsii.String("/" + stageName),
			ProtocolPolicy:     awscloudfront.OriginProtocolPolicy_HTTPS_ONLY,
			OriginSslProtocols: &[]awscloudfront.OriginSslPolicy{awscloudfront.OriginSslPolicy_TLS_V1_2},
			CustomHeaders:      &map[string]*string{originVerifyHeader: f.secretValue(f.version)},
			// API Gateway's integration timeout is 29 s.
			ReadTimeout: awscdk.Duration_Seconds(jsii.Number(30)),
		})
	props := &awscloudfront.DistributionProps{
		Comment: jsii.String("aacmcp MCP server: front door of the REST API"),
		DefaultBehavior: &awscloudfront.BehaviorOptions{
			Origin:               origin,
			AllowedMethods:       awscloudfront.AllowedMethods_ALLOW_ALL(),
			ViewerProtocolPolicy: awscloudfront.ViewerProtocolPolicy_HTTPS_ONLY,
			// Nothing is cached: every answer depends on the caller's token. With
			// caching disabled, the managed AllViewerExceptHostHeader policy forwards
			// Authorization ("How do I configure CloudFront to forward the
			// Authorization header to the origin?"), every other viewer header but
			// Host (execute-api needs its own) and the CloudFront headers, among them
			// CloudFront-Viewer-Address ("Use managed origin request policies").
			CachePolicy:         awscloudfront.CachePolicy_CACHING_DISABLED(),
			OriginRequestPolicy: awscloudfront.OriginRequestPolicy_ALL_VIEWER_EXCEPT_HOST_HEADER(),
			Compress:            jsii.Bool(false),
			EdgeLambdas: &[]*awscloudfront.EdgeLambda{{
				FunctionVersion: edge.version,
				// Runs for error answers too, unlike viewer-response functions and
				// CloudFront Functions ("CloudFront events that can trigger a
				// Lambda@Edge function").
				EventType:   awscloudfront.LambdaEdgeEventType_ORIGIN_RESPONSE,
				IncludeBody: jsii.Bool(false),
			}},
		},
		HttpVersion: awscloudfront.HttpVersion_HTTP2_AND_3,
		EnableIpv6:  jsii.Bool(true),
		WebAclId:    edge.webACL.AttrArn(),
	}
	if cfg.DomainName != "" {
		props.DomainNames = jsii.Strings(cfg.DomainName)
		props.Certificate = awscertificatemanager.Certificate_FromCertificateArn(scope, jsii.String("DomainCertificate"), jsii.String(cfg.CertificateARN))
		props.MinimumProtocolVersion = awscloudfront.SecurityPolicyProtocol_TLS_V1_2_2021
		f.customDomain = true
	}
	f.dist = awscloudfront.NewDistribution(scope, jsii.String("FrontDoor"), props)
	suppress(f.dist, "CFR1", "A remote MCP server for AI assistants that run anywhere: no country is refused.")
	suppress(f.dist, "CFR3", "Every request is logged at the origin (API Gateway access log, regional WAF log, the "+
		"functions' audit records); CloudFront standard logs would need an ACL-enabled bucket, which the stack's "+
		"BucketOwnerEnforced buckets refuse.")
	if cfg.DomainName == "" {
		suppress(f.dist, "CFR4", "Without the domainName context key the distribution serves *.cloudfront.net with "+
			"CloudFront's default certificate, whose minimum protocol CloudFront fixes; with a custom domain the "+
			"stack sets TLSv1.2_2021.")
	}
	return f
}

// url is the public base URL without a trailing slash.
func (f *frontDoor) url(cfg config.Config) string {
	if cfg.DomainName != "" {
		return "https://" + cfg.DomainName
	}
	return "https://" + *f.dist.DistributionDomainName()
}

// secretValue is the dynamic reference to one version of the origin secret.
// CloudFormation resolves a {{resolve:secretsmanager:...}} reference only when the
// resource that holds it changes, so a new value reaches the distribution and the
// WAF rule only through a new reference: the version id in it is what changes both
// resources in one deploy. "" is the version current at the first deploy.
func (f *frontDoor) secretValue(version string) *string {
	if version == "" {
		return f.secret.SecretValue().UnsafeUnwrap()
	}
	return awscdk.SecretValue_SecretsManager(f.secret.SecretArn(), &awscdk.SecretsManagerSecretOptions{
		VersionId: jsii.String(version),
	}).UnsafeUnwrap()
}

// originVerifyRule, first in the regional web ACL, refuses a request without the
// distribution's secret. During a rotation (previous set) it accepts the old
// version too: CloudFront deploys a changed origin header over minutes, WAF in
// seconds, and requests still carrying the old value must not get 403 meanwhile.
func (f *frontDoor) originVerifyRule() any {
	match := func(value *string) *awswafv2.CfnWebACL_StatementProperty {
		return &awswafv2.CfnWebACL_StatementProperty{ByteMatchStatement: &awswafv2.CfnWebACL_ByteMatchStatementProperty{
			FieldToMatch: &awswafv2.CfnWebACL_FieldToMatchProperty{
				SingleHeader: &map[string]any{"Name": strings.ToLower(originVerifyHeader)},
			},
			PositionalConstraint: jsii.String("EXACTLY"),
			SearchString:         value,
			TextTransformations: &[]any{
				&awswafv2.CfnWebACL_TextTransformationProperty{Priority: jsii.Number(0), Type: jsii.String("NONE")},
			},
		}}
	}
	accepted := match(f.secretValue(f.version))
	if f.previous != "" {
		accepted = &awswafv2.CfnWebACL_StatementProperty{OrStatement: &awswafv2.CfnWebACL_OrStatementProperty{
			Statements: &[]any{accepted, match(f.secretValue(f.previous))},
		}}
	}
	return &awswafv2.CfnWebACL_RuleProperty{
		// The forwarder knows the rule by name: what it blocked carries no CloudFront
		// header it may believe.
		Name:             jsii.String(forwarderfn.OriginVerifyRule),
		Priority:         jsii.Number(0),
		Statement:        &awswafv2.CfnWebACL_StatementProperty{NotStatement: &awswafv2.CfnWebACL_NotStatementProperty{Statement: accepted}},
		Action:           wafBlock(403, notFrontDoorBody),
		VisibilityConfig: wafVisibility("aacmcp-only-through-cloudfront"),
	}
}
