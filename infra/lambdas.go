package main

import (
	"fmt"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdadestinations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/aacworkflow/aacmcp/infra/config"
	"github.com/aacworkflow/aacmcp/shared/lambdaenv"
	"github.com/aacworkflow/aacmcp/shared/store/dynamo"
)

// Environment variable names the functions read (shared/lambdaenv is the reading side).
const (
	envTable                = lambdaenv.EnvTable
	envTokensTable          = lambdaenv.EnvTokensTable
	envAuditStream          = lambdaenv.EnvAuditStream
	envAutopilotWebhook     = lambdaenv.EnvAutopilotWebhook
	envAutopilotSecretARN   = lambdaenv.EnvAutopilotSecretARN
	envRateLimit            = lambdaenv.EnvRateLimit
	envAuthFailLimit        = lambdaenv.EnvAuthFailLimit
	envAllowedOrigins       = lambdaenv.EnvAllowedOrigins
	envAuthorizationServers = lambdaenv.EnvAuthorizationServers
	envLogLevel             = lambdaenv.EnvLogLevel
	envTrustViewerAddress   = lambdaenv.EnvTrustViewerAddress
)

// functionSpec is the sizing of one function.
type functionSpec struct {
	description string
	memoryMB    float64
	timeoutSec  float64
}

// Sizing, justified in docs/deploy.md. On Lambda, memory buys CPU in proportion (1,769 MB
// is one vCPU); these Go binaries need well under 100 MB of heap, so memory is chosen
// for CPU and cold start, and timeouts bound the worst case rather than the usual one.
var functionSpecs = map[string]functionSpec{
	// JSON encoding and schema validation are CPU-bound; 512 MB roughly halves cold
	// start and p99 against 128 MB for little cost. 20 s stays under API Gateway's 29 s
	// integration timeout, so a slow call still ends in the function's own error and
	// audit record, not the gateway's 504.
	fnMCP: {"aacmcp MCP and REST tool calls", 512, 20},
	// On every uncached request's path: one GetItem and, on failure, one UpdateItem and
	// one PutRecord. A short timeout fails closed quickly.
	fnAuthorizer: {"aacmcp bearer token authorizer", 256, 5},
	// Decodes a CloudWatch Logs batch and puts records on the stream with retries;
	// batches can hold thousands of lines.
	fnForwarder: {"aacmcp audit fallback and unauthenticated-request forwarder", 256, 60},
	// The authorization server: a few DynamoDB calls per request, plus outbound HTTPS
	// (client metadata documents, the upstream provider's discovery at cold start and
	// its token endpoint at sign-in), where TLS handshakes are CPU-bound: 512 MB for
	// the handshakes, 15 s to bound a slow upstream well inside API Gateway's 29 s.
	fnOAuth: {"aacmcp OAuth authorization server", 512, 15},
	// Reads and hashes an hour's Parquet objects (at most a few hundred MB) and signs
	// one digest per hour; a run after an outage catches up several hours, and one cut
	// short by the timeout is continued by the next run.
	fnDigest: {"aacmcp hourly signed digests of the audit bucket", 512, 300},
}

// functionSet holds the deployed functions and what the rest of the stack wires to them.
type functionSet struct {
	fns       map[string]awslambda.Function
	logGroups map[string]awslogs.LogGroup
	// failures is the forwarder's on-failure destination.
	failures awssqs.Queue
	secret   awssecretsmanager.Secret
}

func (f *functionSet) get(name string) awslambda.Function { return f.fns[name] }

// functionEnv is the environment every function receives. One environment for all
// keeps the functions' configuration loaders identical; what a function may reach is
// decided by its role, not by which names it can read. Empty values are left unset.
func functionEnv(cfg config.Config, d *dataTables, p *pipeline, secret awssecretsmanager.Secret) *map[string]*string {
	env := map[string]*string{
		envTable:              d.main.TableName(),
		envTokensTable:        d.tokens.TableName(),
		envAuditStream:        p.stream.StreamName(),
		envAutopilotSecretARN: secret.SecretArn(),
		envRateLimit:          jsii.String(cfg.RateLimit),
		envAuthFailLimit:      jsii.String(cfg.AuthFailLimit),
		envLogLevel:           jsii.String(cfg.LogLevel),
	}
	if cfg.FrontDoor {
		// Behind the front door API Gateway's source IP is a CloudFront edge server;
		// the regional WAF refuses whatever did not come through the distribution, so
		// CloudFront-Viewer-Address names the client (shared/apigw.SourceIP).
		env[envTrustViewerAddress] = jsii.String("true")
	}
	for k, v := range map[string]string{
		envAutopilotWebhook:     cfg.AutopilotWebhookURL,
		envAllowedOrigins:       strings.Join(cfg.AllowedOrigins, ","),
		envAuthorizationServers: strings.Join(cfg.AuthorizationServers, ","),
	} {
		if v != "" {
			env[k] = jsii.String(v)
		}
	}
	return &env
}

func newFunctions(scope constructs.Construct, cfg config.Config, assets map[string]string, d *dataTables, p *pipeline) (*functionSet, error) {
	set := &functionSet{fns: map[string]awslambda.Function{}, logGroups: map[string]awslogs.LogGroup{}}

	// The agent runner verifies the HMAC of each webhook body with this secret; it is
	// generated here so that it never appears in context, templates or shell history.
	set.secret = awssecretsmanager.NewSecret(scope, jsii.String("AutopilotWebhookSecret"), &awssecretsmanager.SecretProps{
		Description: jsii.String("HMAC key that signs aacmcp's autopilot webhook bodies; share it with the agent runner"),
		GenerateSecretString: &awssecretsmanager.SecretStringGenerator{
			PasswordLength:     jsii.Number(64),
			ExcludePunctuation: jsii.Bool(true),
		},
	})
	suppress(set.secret, "SMG4", "The webhook signing key is shared with the external agent runner, which must "+
		"switch keys in step; rotation is an operator procedure (docs/deploy.md), not an unattended Lambda.")

	// Async invocations of the forwarder that still fail after Lambda's retries land
	// here, so a lost batch of audit records is visible and can be replayed.
	set.failures = awssqs.NewQueue(scope, jsii.String("ForwarderFailures"), &awssqs.QueueProps{
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:      jsii.Bool(true),
		RetentionPeriod: awscdk.Duration_Days(jsii.Number(14)),
	})
	suppress(set.failures, "SQS3", "This queue is itself the on-failure destination (the dead-letter store) of "+
		"the forwarder; a further dead-letter queue would have nothing to catch.")

	env := functionEnv(cfg, d, p, set.secret)
	for _, name := range wiredFunctions {
		dir, ok := assets[name]
		if !ok {
			return nil, fmt.Errorf("no code directory for function %s", name)
		}
		spec := functionSpecs[name]
		id := functionID(name)
		lg := awslogs.NewLogGroup(scope, jsii.String(id+"Logs"), &awslogs.LogGroupProps{
			Retention:     retention(cfg.LogRetentionDays),
			RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
		})
		// A role per function with inline statements only: the managed basic execution
		// policy would allow writing to every log group in the account.
		role := awsiam.NewRole(scope, jsii.String(id+"Role"), &awsiam.RoleProps{
			AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
			Description: jsii.String("aacmcp " + name + " function"),
		})
		role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("WriteOwnLogs"),
			Actions:   jsii.Strings("logs:CreateLogStream", "logs:PutLogEvents"),
			Resources: jsii.Strings(*lg.LogGroupArn()),
		}))
		props := &awslambda.FunctionProps{
			Description:  jsii.String(spec.description),
			Runtime:      awslambda.Runtime_PROVIDED_AL2023(),
			Architecture: awslambda.Architecture_ARM_64(),
			Handler:      jsii.String("bootstrap"),
			Code:         awslambda.Code_FromAsset(jsii.String(dir), nil),
			MemorySize:   jsii.Number(spec.memoryMB),
			Timeout:      awscdk.Duration_Seconds(jsii.Number(spec.timeoutSec)),
			Tracing:      awslambda.Tracing_ACTIVE,
			LogGroup:     lg,
			Role:         role,
			Environment:  env,
		}
		if name == fnForwarder {
			// CloudWatch Logs invokes subscribers asynchronously: two retries, then
			// the batch goes to the failure queue (alarmed) instead of vanishing.
			props.OnFailure = awslambdadestinations.NewSqsDestination(set.failures)
			props.RetryAttempts = jsii.Number(2)
			props.MaxEventAge = awscdk.Duration_Hours(jsii.Number(6))
		}
		fn := awslambda.NewFunction(scope, jsii.String(id), props)
		suppress(role, "IAM5", "X-Ray's PutTraceSegments and PutTelemetryRecords have no resource-level "+
			"permissions; active tracing requires Resource '*' for exactly these two actions.", "Resource::*")
		set.fns[name] = fn
		set.logGroups[name] = lg
	}

	grantMCP(set.get(fnMCP).Role(), d, p, set.secret)
	grantAuthorizer(set.get(fnAuthorizer).Role(), d, p)
	set.get(fnForwarder).Role().AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("PutAuditRecords"),
		Actions:   jsii.Strings("kinesis:PutRecord", "kinesis:PutRecords"),
		Resources: jsii.Strings(*p.stream.StreamArn()),
	}))
	return set, nil
}

// grantMCP: item access to the main table and its one index, confined to tenant keys
// (every partition key there starts with WS#, so the role cannot touch anything else),
// no Scan (no lookup needs one), no table administration; one stream put; the secret.
func grantMCP(role awsiam.IRole, d *dataTables, p *pipeline, secret awssecretsmanager.Secret) {
	gsi := dynamo.Main.GSIs[0].Name
	role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid: jsii.String("TenantItems"),
		Actions: jsii.Strings(
			"dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query",
			"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem",
			"dynamodb:BatchWriteItem", "dynamodb:ConditionCheckItem",
		),
		Resources: &[]*string{d.main.TableArn(), indexArn(d.main, gsi)},
		Conditions: &map[string]any{
			"ForAllValues:StringLike": map[string]any{"dynamodb:LeadingKeys": []string{dynamo.TenantPrefix + "*"}},
		},
	}))
	role.AddToPrincipalPolicy(putAuditRecord(p))
	role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("ReadWebhookSecret"),
		Actions:   jsii.Strings("secretsmanager:GetSecretValue"),
		Resources: &[]*string{secret.SecretArn()},
	}))
}

// grantAuthorizer: read token records, count failures (an update that returns the
// count: no read), put audit records of rejected tokens. Nothing in the main table.
func grantAuthorizer(role awsiam.IRole, d *dataTables, p *pipeline) {
	role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("ReadTokens"),
		Actions:   jsii.Strings("dynamodb:GetItem"),
		Resources: &[]*string{d.tokens.TableArn()},
		Conditions: &map[string]any{
			"ForAllValues:StringLike": map[string]any{"dynamodb:LeadingKeys": []string{dynamo.TokenPrefix + "*"}},
		},
	}))
	role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("CountFailures"),
		Actions:   jsii.Strings("dynamodb:UpdateItem"),
		Resources: &[]*string{d.tokens.TableArn()},
		Conditions: &map[string]any{
			"ForAllValues:StringLike": map[string]any{"dynamodb:LeadingKeys": []string{dynamo.FailurePrefix + "*"}},
		},
	}))
	role.AddToPrincipalPolicy(putAuditRecord(p))
}

func putAuditRecord(p *pipeline) awsiam.PolicyStatement {
	return awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("PutAuditRecord"),
		Actions:   jsii.Strings("kinesis:PutRecord"),
		Resources: &[]*string{p.stream.StreamArn()},
	})
}

// functionID is the construct id of a function: "mcp" -> "McpFunction".
func functionID(name string) string {
	return strings.ToUpper(name[:1]) + name[1:] + "Function"
}

// retention maps validated day counts (config checks the set) to the CDK enum.
func retention(days int) awslogs.RetentionDays {
	switch days {
	case 1:
		return awslogs.RetentionDays_ONE_DAY
	case 3:
		return awslogs.RetentionDays_THREE_DAYS
	case 5:
		return awslogs.RetentionDays_FIVE_DAYS
	case 7:
		return awslogs.RetentionDays_ONE_WEEK
	case 14:
		return awslogs.RetentionDays_TWO_WEEKS
	case 30:
		return awslogs.RetentionDays_ONE_MONTH
	case 60:
		return awslogs.RetentionDays_TWO_MONTHS
	case 90:
		return awslogs.RetentionDays_THREE_MONTHS
	case 120:
		return awslogs.RetentionDays_FOUR_MONTHS
	case 150:
		return awslogs.RetentionDays_FIVE_MONTHS
	case 180:
		return awslogs.RetentionDays_SIX_MONTHS
	case 365:
		return awslogs.RetentionDays_ONE_YEAR
	case 400:
		return awslogs.RetentionDays_THIRTEEN_MONTHS
	case 545:
		return awslogs.RetentionDays_EIGHTEEN_MONTHS
	case 731:
		return awslogs.RetentionDays_TWO_YEARS
	case 1096:
		return awslogs.RetentionDays_THREE_YEARS
	case 1827:
		return awslogs.RetentionDays_FIVE_YEARS
	case 2192:
		return awslogs.RetentionDays_SIX_YEARS
	case 2557:
		return awslogs.RetentionDays_SEVEN_YEARS
	case 2922:
		return awslogs.RetentionDays_EIGHT_YEARS
	case 3288:
		return awslogs.RetentionDays_NINE_YEARS
	case 3653:
		return awslogs.RetentionDays_TEN_YEARS
	}
	// Unreachable for a validated config; the longest finite period errs on keeping logs.
	return awslogs.RetentionDays_TEN_YEARS
}
