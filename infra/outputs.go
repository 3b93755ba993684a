package main

import (
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/aacworkflow/aacmcp/shared/auth"
)

// Output names; docs/deploy.md refers to them.
const (
	outEndpointURL        = "EndpointUrl"
	outMCPURL             = "McpUrl"
	outTableName          = "TableName"
	outTokensTableName    = "TokensTableName"
	outAuditStreamName    = "AuditStreamName"
	outAuditBucketName    = "AuditBucketName"
	outAthenaWorkGroup    = "AthenaWorkGroup"
	outGlueDatabase       = "GlueDatabase"
	outAuditTable         = "AuditTableName"
	outAlarmTopicARN      = "AlarmTopicArn"
	outWebhookSecretARN   = "AutopilotWebhookSecretArn"
	outTokenCreateCommand = "TokenCreateCommand"
	outDomainTarget       = "CustomDomainTarget"
	outOAuthIssuer        = "OAuthIssuer"
	outUpstreamIssuer     = "UpstreamIssuer"
	outUpstreamSecretARN  = "UpstreamClientSecretArn"
	outMemberAddCommand   = "MemberAddCommand"
	outCognitoUserPoolID  = "CognitoUserPoolId"
	outCognitoDomain      = "CognitoDomain"
	outAddUserCommand     = "AddUserCommand"
	outOAuthDiscovery     = "OAuthDiscovery"
	outStepUpChallenge    = "StepUpChallenge"
	outFrontDoorID        = "FrontDoorDistributionId"
	outDigestKeyARN       = "AuditDigestKeyArn" // written by newDigests
)

// What the deployed URL does for OAuth clients (docs/decisions.md, "Challenges and
// discovery through API Gateway"): said at deploy time, where the URL is handed out.
const (
	discoveryStageURL = "OAuth clients cannot discover the authorization server on this default URL: it has the " +
		"stage in its path, so the RFC 8414 and RFC 9728 well-known URLs clients build by inserting " +
		"/.well-known/... before that path are at the host root, outside the stage, where API Gateway answers 403. " +
		"The MCP TypeScript SDK (and mcp-remote) finds the resource metadata from the 401 challenge, then stops " +
		"at the authorization server metadata. Personal tokens (Authorization: Bearer aac_...) work here; for " +
		"OAuth (claude.ai, ChatGPT) deploy with a custom domain: docs/deploy.md, \"Custom domain for OAuth clients\"."
	discoveryCustomDomain = "Custom domain at the root: every RFC 8414 and RFC 9728 well-known URL is served."
	discoveryFrontDoor    = "The MCP URL is the CloudFront distribution's, whose root is the API stage's: every " +
		"RFC 8414 and RFC 9728 well-known URL a client derives from it is at the root and served."
	stepUpBare = "The 401s API Gateway answers itself carry WWW-Authenticate. The MCP function's own " +
		"challenges (403 insufficient_scope, and 401 for a token that expired inside the 60 s authorizer cache) " +
		"arrive as x-amzn-Remapped-WWW-Authenticate: API Gateway REST renames that header in Lambda proxy " +
		"answers, so clients do not step up by themselves. This stack was deployed with frontDoor=false; " +
		"the CloudFront front door (the default) restores the header."
	stepUpFrontDoor = "Every challenge reaches clients as WWW-Authenticate on the MCP URL: API Gateway's own 401s " +
		"carry it, and the Lambda@Edge origin-response function of the CloudFront front door renames the MCP " +
		"function's x-amzn-Remapped-WWW-Authenticate (403 insufficient_scope, 401 for a token expired inside the " +
		"authorizer cache) back. The execute-api URL answers 403 to requests that did not come through CloudFront."
)

func newOutputs(scope constructs.Construct, d *dataTables, p *pipeline, fns *functionSet, a *api, an *analytics, m *monitoring, o *oauthStack) {
	stack := awscdk.Stack_Of(scope)
	out := func(id, description string, value *string) {
		awscdk.NewCfnOutput(scope, jsii.String(id), &awscdk.CfnOutputProps{Value: value, Description: jsii.String(description)})
	}
	out(outEndpointURL, "Base URL of the API (REST: GET tools, POST tools/{name})", a.baseURL)
	out(outMCPURL, "MCP Streamable HTTP endpoint: the connector URL to add in claude.ai, ChatGPT and other MCP clients", jsii.String(*a.baseURL+"mcp"))
	out(outTableName, "DynamoDB main table", d.main.TableName())
	out(outTokensTableName, "DynamoDB tokens table", d.tokens.TableName())
	out(outAuditStreamName, "Kinesis audit stream", p.stream.StreamName())
	out(outAuditBucketName, "S3 bucket with the audit log (Parquet under audit/)", p.bucket.BucketName())
	out(outAthenaWorkGroup, "Athena workgroup with the saved audit queries", an.workgroup.Ref())
	out(outGlueDatabase, "Glue database of the audit table", p.database.DatabaseName())
	out(outAuditTable, "Glue table of the audit log", p.table.TableName())
	out(outAlarmTopicARN, "SNS topic the alarms publish to", m.topic.TopicArn())
	out(outWebhookSecretARN, "Secrets Manager secret that signs autopilot webhooks", fns.secret.SecretArn())
	// The first token has to come from somewhere: an operator with AWS credentials mints
	// it straight into the tables. Placeholders in <> are to be filled in.
	out(outTokenCreateCommand, "Mint a token (fill in <workspace> and <user>)", jsii.String(
		"aacmcp token create --backend dynamodb --table "+*d.main.TableName()+
			" --tokens-table "+*d.tokens.TableName()+
			" --region "+*stack.Region()+
			" --workspace <workspace> --user <user> --scopes "+strings.Join(auth.AllScopes, ",")))
	backend := "--backend dynamodb --table " + *d.main.TableName() + " --tokens-table " + *d.tokens.TableName() + " --region " + *stack.Region()
	out(outOAuthIssuer, "Issuer of the built-in OAuth authorization server (RFC 8414 metadata below it)", o.issuer)
	out(outUpstreamIssuer, "OpenID Connect provider people sign in with", o.upstreamIssuer)
	out(outUpstreamSecretARN, "Secrets Manager secret holding the upstream client secret", o.upstreamSecretARN)
	// A person who signs in is matched to members by verified e-mail: without a member
	// record carrying that e-mail they get the "member of no workspace" page.
	out(outMemberAddCommand, "Link a person to a member (fill in <workspace>, <user>, <role>, <email>)", jsii.String(
		"aacmcp member add "+backend+" --workspace <workspace> --user <user> --role <role> --email <email>"))
	if c := o.cognito; c != nil {
		out(outCognitoUserPoolID, "Cognito user pool of the people who may sign in", c.pool.UserPoolId())
		out(outCognitoDomain, "Cognito managed-login domain (the sign-in pages)", c.domain.BaseUrl(nil))
		// The e-mail is both the user name and the verified attribute the
		// authorization server trusts; Cognito mails the temporary password.
		out(outAddUserCommand, "Invite the first person (fill in <email>; Cognito e-mails a temporary password)", jsii.String(
			"aws cognito-idp admin-create-user --region "+*stack.Region()+" --user-pool-id "+*c.pool.UserPoolId()+
				" --username <email> --user-attributes Name=email,Value=<email> Name=email_verified,Value=true"+
				" --desired-delivery-mediums EMAIL"))
	}
	switch dn := a.rest.DomainName(); {
	case a.front != nil:
		if a.front.customDomain {
			out(outDomainTarget, "Point the custom domain's DNS (CNAME or alias) at this name", a.front.dist.DistributionDomainName())
		}
		out(outOAuthDiscovery, "OAuth discovery on the MCP URL", jsii.String(discoveryFrontDoor))
		out(outStepUpChallenge, "How OAuth challenges reach clients", jsii.String(stepUpFrontDoor))
		out(outFrontDoorID, "CloudFront distribution in front of the API", a.front.dist.DistributionId())
	case dn != nil:
		out(outDomainTarget, "Point the custom domain's DNS (CNAME or alias) at this name", dn.DomainNameAliasDomainName())
		out(outOAuthDiscovery, "OAuth discovery on the MCP URL", jsii.String(discoveryCustomDomain))
		out(outStepUpChallenge, "How OAuth challenges reach clients", jsii.String(stepUpBare))
	default:
		out(outOAuthDiscovery, "OAuth discovery on the MCP URL", jsii.String(discoveryStageURL))
		out(outStepUpChallenge, "How OAuth challenges reach clients", jsii.String(stepUpBare))
	}
}
