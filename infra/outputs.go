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
)

func newOutputs(scope constructs.Construct, d *dataTables, p *pipeline, fns *functionSet, a *api, an *analytics, m *monitoring) {
	stack := awscdk.Stack_Of(scope)
	out := func(id, description string, value *string) {
		awscdk.NewCfnOutput(scope, jsii.String(id), &awscdk.CfnOutputProps{Value: value, Description: jsii.String(description)})
	}
	out(outEndpointURL, "Base URL of the API (REST: GET tools, POST tools/{name})", a.baseURL)
	out(outMCPURL, "MCP Streamable HTTP endpoint: give this URL to MCP clients", jsii.String(*a.baseURL+"mcp"))
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
	if dn := a.rest.DomainName(); dn != nil {
		out(outDomainTarget, "Point the custom domain's DNS (CNAME or alias) at this name", dn.DomainNameAliasDomainName())
	}
}
