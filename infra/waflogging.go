package main

import (
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogsdestinations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awswafv2"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/aacworkflow/aacmcp/functions/forwarder/forwarderfn"
	"github.com/aacworkflow/aacmcp/infra/config"
	"github.com/aacworkflow/aacmcp/shared/apigw"
)

// wafLogGroupPrefix is the prefix AWS WAF requires of a CloudWatch Logs logging
// destination's name.
const wafLogGroupPrefix = "aws-waf-logs-"

// wafBlockedFilterPattern selects the WAF log records of blocked requests: the only
// ones the forwarder turns into audit records (waf_blocked).
const wafBlockedFilterPattern = `{ $.action = "BLOCK" }`

// newWAFLogging makes the web ACL log the requests it blocks to an aws-waf-logs-*
// group and subscribes the forwarder to it, so that a request refused before any of
// our code ran still has its audit record. Only BLOCK is logged: allowed requests
// have their records from the functions, and logging them would only cost.
//
// The Authorization header is redacted: WAF logs every header otherwise, and a log
// group must never hold bearer secrets. The price is that a waf_blocked record
// cannot name the caller's workspace (docs/security.md). So is the front door's
// origin secret, which every request through the distribution carries: whoever
// read it could call the execute-api URL directly and forge
// CloudFront-Viewer-Address, the source IP of audit records.
func newWAFLogging(scope constructs.Construct, cfg config.Config, a *api, fns *functionSet) awslogs.LogGroup {
	stack := awscdk.Stack_Of(scope)
	lg := awslogs.NewLogGroup(scope, jsii.String("WafLogs"), &awslogs.LogGroupProps{
		// The name must carry the prefix; the stack name keeps two stacks apart.
		LogGroupName:  jsii.String(wafLogGroupPrefix + *stack.StackName()),
		Retention:     retention(cfg.LogRetentionDays),
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	// WAF wants the group's ARN without the ":*" suffix LogGroupArn carries.
	arn := stack.FormatArn(&awscdk.ArnComponents{
		Service:      jsii.String("logs"),
		Resource:     jsii.String("log-group"),
		ResourceName: lg.LogGroupName(),
		ArnFormat:    awscdk.ArnFormat_COLON_RESOURCE_NAME,
	})
	logging := awswafv2.NewCfnLoggingConfiguration(scope, jsii.String("ApiWebAclLogging"), &awswafv2.CfnLoggingConfigurationProps{
		ResourceArn:           a.webACL.AttrArn(),
		LogDestinationConfigs: &[]any{arn},
		RedactedFields: &[]any{
			&awswafv2.CfnLoggingConfiguration_FieldToMatchProperty{
				SingleHeader: map[string]any{"Name": "authorization"},
			},
			&awswafv2.CfnLoggingConfiguration_FieldToMatchProperty{
				SingleHeader: map[string]any{"Name": strings.ToLower(apigw.OriginVerifyHeader)},
			},
		},
		LoggingFilter: map[string]any{
			"DefaultBehavior": "DROP",
			"Filters": []any{map[string]any{
				"Behavior":    "KEEP",
				"Requirement": "MEETS_ANY",
				"Conditions":  []any{map[string]any{"ActionCondition": map[string]any{"Action": "BLOCK"}}},
			}},
		},
	})
	logging.Node().AddDependency(lg)
	awslogs.NewSubscriptionFilter(scope, jsii.String("WafBlocked"), &awslogs.SubscriptionFilterProps{
		LogGroup:      lg,
		Destination:   awslogsdestinations.NewLambdaDestination(fns.get(fnForwarder), nil),
		FilterPattern: awslogs.FilterPattern_Literal(jsii.String(wafBlockedFilterPattern)),
	})
	fns.get(fnForwarder).AddEnvironment(jsii.String(forwarderfn.EnvWAFLogGroup), lg.LogGroupName(), nil)
	return lg
}
