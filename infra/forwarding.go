package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogsdestinations"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/aacworkflow/aacmcp/functions/forwarder/forwarderfn"
	"github.com/aacworkflow/aacmcp/shared/metrics"
)

// fallbackFilterPattern selects the one-line JSON records a function prints when it
// could not put an audit record on the stream (docs/architecture.md section 8).
const fallbackFilterPattern = `{ $.audit_fallback IS TRUE }`

// unauthenticatedFilterPattern selects the access-log entries of requests answered 401.
// It is deliberately broader than "refused before the authorizer ran": the forwarder
// makes that decision itself (accesslog.Entry.RefusedWithoutAuthorizer)
// from several fields, and a pattern that missed API Gateway's spelling of an absent
// value would silently drop those requests from the audit log.
const unauthenticatedFilterPattern = `{ $.status = "401" }`

// metricAuditFallbackLines is derived from the logs (the functions' own EMF metrics are
// in monitoring.go). Counting the fallback lines themselves, rather than a metric the
// failing code path also has to emit, makes the "any fallback" alarm independent of the
// code that failed.
const metricAuditFallbackLines = "AuditFallbackLines"

// newForwarding subscribes the forwarder to the two kinds of log lines that must still
// become audit records: fallback lines of the functions that write audit records (the
// authorization server's consent, token and registration events among them), and
// access-log entries of requests refused 401 before the authorizer ran. The forwarder's
// own log group is not subscribed: a failing forwarder would feed itself.
func newForwarding(scope constructs.Construct, fns *functionSet, a *api) {
	dest := awslogsdestinations.NewLambdaDestination(fns.get(fnForwarder), nil)
	var auditing []*string
	for _, name := range []string{fnMCP, fnAuthorizer, fnOAuth} {
		lg := fns.logGroups[name]
		auditing = append(auditing, lg.LogGroupName())
		id := functionID(name)
		awslogs.NewSubscriptionFilter(scope, jsii.String(id+"AuditFallback"), &awslogs.SubscriptionFilterProps{
			LogGroup:      lg,
			Destination:   dest,
			FilterPattern: awslogs.FilterPattern_Literal(jsii.String(fallbackFilterPattern)),
		})
		awslogs.NewMetricFilter(scope, jsii.String(id+"AuditFallbackMetric"), &awslogs.MetricFilterProps{
			LogGroup:        lg,
			FilterPattern:   awslogs.FilterPattern_Literal(jsii.String(fallbackFilterPattern)),
			MetricNamespace: jsii.String(metrics.Namespace),
			MetricName:      jsii.String(metricAuditFallbackLines),
			MetricValue:     jsii.String("1"),
		})
	}
	awslogs.NewSubscriptionFilter(scope, jsii.String("ApiUnauthenticated"), &awslogs.SubscriptionFilterProps{
		LogGroup:      a.accessLog,
		Destination:   dest,
		FilterPattern: awslogs.FilterPattern_Literal(jsii.String(unauthenticatedFilterPattern)),
	})
	// The forwarder reads each kind of line only from the groups that can hold it
	// (fallback lines from the functions, access-log entries from the access log):
	// a caller-chosen User-Agent in the access log must not pass for a fallback line.
	fwd := fns.get(fnForwarder)
	fwd.AddEnvironment(jsii.String(forwarderfn.EnvFunctionLogGroups), awscdk.Fn_Join(jsii.String(","), &auditing), nil)
	fwd.AddEnvironment(jsii.String(forwarderfn.EnvAccessLogGroup), a.accessLog.LogGroupName(), nil)
}
