package main

import (
	"fmt"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssnssubscriptions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/aacworkflow/aacmcp/infra/config"
	"github.com/aacworkflow/aacmcp/shared/metrics"
	"github.com/aacworkflow/aacmcp/shared/store/dynamo"
)

// The functions emit EMF metrics (shared/metrics) with the dimension Function, and
// Denied also by Function and Reason. The dashboard reads them with SEARCH expressions
// and the denial alarm with a Metrics Insights query over the Function-only schema, so
// every function's series counts once and a new function needs no change here.

var fiveMinutes = awscdk.Duration_Minutes(jsii.Number(5))

type monitoring struct {
	topic     awssns.Topic
	dashboard awscloudwatch.Dashboard
	// errorObjects holds one message per object Firehose wrote under
	// auditErrorPrefix, until an operator has looked at it.
	errorObjects awssqs.Queue
}

func newMonitoring(scope constructs.Construct, cfg config.Config, d *dataTables, p *pipeline, fns *functionSet, a *api) *monitoring {
	m := &monitoring{}
	stack := awscdk.Stack_Of(scope)

	// CloudWatch can publish to an encrypted topic only with a key whose policy lets it
	// use the key; the AWS-managed aws/sns key's policy cannot be changed.
	key := awskms.NewKey(scope, jsii.String("AlarmTopicKey"), &awskms.KeyProps{
		Description:       jsii.String("aacmcp alarm topic encryption"),
		EnableKeyRotation: jsii.Bool(true),
	})
	key.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("CloudWatchAlarmsPublish"),
		Principals: &[]awsiam.IPrincipal{awsiam.NewServicePrincipal(jsii.String("cloudwatch.amazonaws.com"), nil)},
		Actions:    jsii.Strings("kms:Decrypt", "kms:GenerateDataKey"),
		Resources:  jsii.Strings("*"), // in a key policy, "*" is this key
		Conditions: &map[string]any{"StringEquals": map[string]any{"aws:SourceAccount": stack.Account()}},
	}), nil)
	m.topic = awssns.NewTopic(scope, jsii.String("AlarmTopic"), &awssns.TopicProps{
		DisplayName: jsii.String("aacmcp alarms"),
		MasterKey:   key,
		EnforceSSL:  jsii.Bool(true),
	})
	if cfg.AlarmEmail != "" {
		m.topic.AddSubscription(awssnssubscriptions.NewEmailSubscription(jsii.String(cfg.AlarmEmail), nil))
	}
	action := awscloudwatchactions.NewSnsAction(m.topic)
	alarm := func(id, description string, metric awscloudwatch.IMetric, threshold float64, op awscloudwatch.ComparisonOperator) {
		al := awscloudwatch.NewAlarm(scope, jsii.String(id), &awscloudwatch.AlarmProps{
			AlarmDescription:   jsii.String(description),
			Metric:             metric,
			Threshold:          jsii.Number(threshold),
			ComparisonOperator: op,
			EvaluationPeriods:  jsii.Number(1),
			// No traffic is not an incident.
			TreatMissingData: awscloudwatch.TreatMissingData_NOT_BREACHING,
		})
		al.AddAlarmAction(action)
		al.AddOkAction(action)
	}

	alarm("Api5xxRateAlarm", "More than 5% of API requests failed with 5xx in 5 minutes",
		a.rest.MetricServerError(&awscloudwatch.MetricOptions{Statistic: jsii.String("Average"), Period: fiveMinutes}),
		0.05, awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD)

	fallback := awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace: jsii.String(metrics.Namespace), MetricName: jsii.String(metricAuditFallbackLines),
		Statistic: jsii.String("Sum"), Period: fiveMinutes,
	})
	alarm("AuditFallbackAlarm", "An audit record missed the stream and went through the fallback log line",
		fallback, 1, awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD)

	firehose := func(name, stat string) awscloudwatch.Metric {
		return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
			Namespace: jsii.String("AWS/Firehose"), MetricName: jsii.String(name),
			DimensionsMap: &map[string]*string{"DeliveryStreamName": p.delivery.Ref()},
			Statistic:     jsii.String(stat), Period: fiveMinutes,
		})
	}
	alarm("AuditDeliveryFailureAlarm", "Firehose failed to write audit objects to S3",
		firehose("DeliveryToS3.Success", "Minimum"), 1, awscloudwatch.ComparisonOperator_LESS_THAN_THRESHOLD)
	alarm("AuditConversionFailureAlarm", "Audit records failed Parquet conversion (schema mismatch); they are under "+auditErrorPrefix,
		firehose("FailedConversion.Records", "Sum"), 1, awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD)
	m.errorObjects = newErrorObjectQueue(scope, p)
	alarm("AuditErrorObjectAlarm", "Firehose wrote audit records it could not partition, convert or process under "+
		auditErrorPrefix+": they are missing from the audit table. The queue's messages name the objects (docs/deploy.md)",
		m.errorObjects.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{Statistic: jsii.String("Maximum"), Period: fiveMinutes}),
		1, awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD)
	alarm("AuditDeliveryStaleAlarm", "The oldest audit record in Firehose is over 15 minutes old",
		firehose("DeliveryToS3.DataFreshness", "Maximum"), 900, awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD)

	alarm("ForwarderFailureAlarm", "A forwarder batch failed after retries; its records are in the failure queue",
		fns.failures.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{Statistic: jsii.String("Maximum"), Period: fiveMinutes}),
		1, awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD)

	// A missed hour is caught up by the next run, but a run that keeps failing leaves
	// the bucket undigested; audit verify would report the hours only when asked.
	alarm("AuditDigestFailureAlarm", "The hourly audit digest function failed; the hours it missed have no signed digest yet",
		fns.get(fnDigest).MetricErrors(&awscloudwatch.MetricOptions{Statistic: jsii.String("Sum"), Period: awscdk.Duration_Hours(jsii.Number(1))}),
		1, awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD)

	for _, t := range []struct {
		id    string
		table awsdynamodb.TableV2
		spec  dynamo.TableSpec
	}{{"MainTable", d.main, dynamo.Main}, {"TokensTable", d.tokens, dynamo.Tokens}} {
		alarm(t.id+"ThrottleAlarm", "DynamoDB throttled requests on "+t.id,
			throttles(t.table, t.spec, t.id+" throttles", "t"), 1, awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD)
	}

	// Metrics Insights counts every Denied series whatever its dimensions; the L2 Alarm
	// cannot take a query, so this one is the L1 resource.
	awscloudwatch.NewCfnAlarm(scope, jsii.String("DenialSpikeAlarm"), &awscloudwatch.CfnAlarmProps{
		AlarmDescription:   jsii.String(fmt.Sprintf("%d or more denied tool calls in 5 minutes", cfg.DenialAlarmThreshold)),
		ComparisonOperator: jsii.String("GreaterThanOrEqualToThreshold"),
		Threshold:          jsii.Number(float64(cfg.DenialAlarmThreshold)),
		EvaluationPeriods:  jsii.Number(1),
		TreatMissingData:   jsii.String("notBreaching"),
		Metrics: &[]any{&awscloudwatch.CfnAlarm_MetricDataQueryProperty{
			Id:         jsii.String("denied"),
			Expression: jsii.String(fmt.Sprintf(`SELECT SUM(%s) FROM SCHEMA("%s", %s)`, metrics.MetricDenied, metrics.Namespace, metrics.DimFunction)),
			Period:     jsii.Number(300),
			ReturnData: jsii.Bool(true),
		}},
		AlarmActions: &[]any{m.topic.TopicArn()},
		OkActions:    &[]any{m.topic.TopicArn()},
	})

	m.dashboard = newDashboard(scope, p, fns, a, d, fallback, m.errorObjects)
	return m
}

// newErrorObjectQueue routes every object created under auditErrorPrefix to a queue.
// Firehose files a record there for any failure (processing, dynamic partitioning,
// format conversion, S3 delivery; each under its own !{firehose:error-output-type}
// folder), and only conversion failures have a Firehose metric, so the object itself
// is the signal. S3 sends Object Created to EventBridge as a durable, at-least-once
// event (AWS: EventBridge event reference for S3; S3 Event Notifications), where S3
// request metrics on a prefix filter are best effort and may never be delivered. The
// queue keeps each event, with the object's key, for 14 days: the alarm stays on until
// an operator has read and deleted them, as the forwarder's failure queue does.
//
// EventBridge delivery is set on the bucket's CloudFormation resource itself: the L2
// (eventBridgeEnabled) would add CDK's notifications custom resource, a Lambda function
// with a managed-policy role, to set what CloudFormation sets natively. Nothing else may
// use the L2's notification methods on this bucket: that resource would overwrite it.
func newErrorObjectQueue(scope constructs.Construct, p *pipeline) awssqs.Queue {
	bucket := p.bucket.Node().DefaultChild().(awss3.CfnBucket)
	bucket.SetNotificationConfiguration(&awss3.CfnBucket_NotificationConfigurationProperty{
		EventBridgeConfiguration: &awss3.CfnBucket_EventBridgeConfigurationProperty{EventBridgeEnabled: jsii.Bool(true)},
	})
	q := awssqs.NewQueue(scope, jsii.String("AuditErrorObjects"), &awssqs.QueueProps{
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:      jsii.Bool(true),
		RetentionPeriod: awscdk.Duration_Days(jsii.Number(14)),
	})
	suppress(q, "SQS3", "Nothing consumes this queue but an operator reading which objects failed; its messages "+
		"are the record, and a dead-letter queue would have no failed consumer to catch.")
	awsevents.NewRule(scope, jsii.String("AuditErrorObjectRule"), &awsevents.RuleProps{
		Description: jsii.String("Every object Firehose writes under " + auditErrorPrefix + " in the audit bucket"),
		EventPattern: &awsevents.EventPattern{
			Source:     jsii.Strings("aws.s3"),
			DetailType: jsii.Strings("Object Created"),
			Detail: &map[string]any{
				"bucket": map[string]any{"name": []any{p.bucket.BucketName()}},
				"object": map[string]any{"key": []any{map[string]any{"prefix": auditErrorPrefix}}},
			},
		},
		Targets: &[]awsevents.IRuleTarget{awseventstargets.NewSqsQueue(q, nil)},
	})
	return q
}

// throttles sums a table's read and write throttle events, its indexes' included.
// idPrefix keeps metric ids unique when two of these share a graph.
func throttles(t awsdynamodb.TableV2, spec dynamo.TableSpec, label, idPrefix string) awscloudwatch.IMetric {
	using := map[string]awscloudwatch.IMetric{}
	expr := ""
	add := func(name string, dims map[string]*string) {
		id := fmt.Sprintf("%s%d", idPrefix, len(using))
		using[id] = awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
			Namespace: jsii.String("AWS/DynamoDB"), MetricName: jsii.String(name),
			DimensionsMap: &dims, Statistic: jsii.String("Sum"), Period: fiveMinutes,
		})
		if expr != "" {
			expr += " + "
		}
		expr += "FILL(" + id + ", 0)"
	}
	for _, name := range []string{"ReadThrottleEvents", "WriteThrottleEvents"} {
		add(name, map[string]*string{"TableName": t.TableName()})
		for _, g := range spec.GSIs {
			add(name, map[string]*string{"TableName": t.TableName(), "GlobalSecondaryIndexName": jsii.String(g.Name)})
		}
	}
	return awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression:   jsii.String(expr),
		UsingMetrics: &using,
		Label:        jsii.String(label),
		Period:       fiveMinutes,
	})
}

// search graphs every series of an EMF metric with exactly the given dimensions.
func search(metric, stat, label string, dims ...string) awscloudwatch.IMetric {
	schema := strings.Join(append([]string{metrics.Namespace}, dims...), ",")
	return awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression: jsii.String(fmt.Sprintf(`SEARCH('{%s} MetricName="%s"', '%s', 300)`, schema, metric, stat)),
		Label:      jsii.String(label),
		Period:     fiveMinutes,
	})
}

func newDashboard(scope constructs.Construct, p *pipeline, fns *functionSet, a *api, d *dataTables, fallback awscloudwatch.IMetric, errorObjects awssqs.Queue) awscloudwatch.Dashboard {
	graph := func(title string, left ...awscloudwatch.IMetric) awscloudwatch.GraphWidget {
		return awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{
			Title: jsii.String(title), Left: &left, Width: jsii.Number(12), Height: jsii.Number(6),
		})
	}
	firehose := func(name, stat string) awscloudwatch.IMetric {
		return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
			Namespace: jsii.String("AWS/Firehose"), MetricName: jsii.String(name),
			DimensionsMap: &map[string]*string{"DeliveryStreamName": p.delivery.Ref()},
			Statistic:     jsii.String(stat), Period: fiveMinutes,
		})
	}
	var logGroups []awslogs.ILogGroup
	for _, name := range wiredFunctions {
		logGroups = append(logGroups, fns.logGroups[name])
	}
	db := awscloudwatch.NewDashboard(scope, jsii.String("Dashboard"), &awscloudwatch.DashboardProps{
		DefaultInterval: awscdk.Duration_Hours(jsii.Number(3)),
	})
	db.AddWidgets(
		graph("Tool calls and errors", search(metrics.MetricCalls, "Sum", "", metrics.DimFunction), search(metrics.MetricErrors, "Sum", "", metrics.DimFunction)),
		graph("Denials by reason", search(metrics.MetricDenied, "Sum", "", metrics.DimFunction, metrics.DimReason)),
	)
	db.AddWidgets(
		graph("Tool latency p50 / p99 (ms)", search(metrics.MetricLatencyMs, "p50", "p50", metrics.DimFunction), search(metrics.MetricLatencyMs, "p99", "p99", metrics.DimFunction)),
		graph("API requests, 4xx, 5xx",
			a.rest.MetricCount(&awscloudwatch.MetricOptions{Period: fiveMinutes}),
			a.rest.MetricClientError(&awscloudwatch.MetricOptions{Period: fiveMinutes}),
			a.rest.MetricServerError(&awscloudwatch.MetricOptions{Period: fiveMinutes})),
	)
	db.AddWidgets(
		awscloudwatch.NewLogQueryWidget(&awscloudwatch.LogQueryWidgetProps{
			Title:         jsii.String("Lambda cold starts"),
			LogGroupNames: logGroupNames(logGroups),
			QueryLines: jsii.Strings(
				`filter @type = "REPORT"`,
				`stats count(@initDuration) as coldStarts, count(*) as invocations by bin(5m)`,
			),
			View:   awscloudwatch.LogQueryVisualizationType_LINE,
			Width:  jsii.Number(12),
			Height: jsii.Number(6),
		}),
		graph("Audit fallback lines and forwarder failures",
			fallback, search(metrics.MetricAuditFallback, "Sum", "", metrics.DimFunction),
			fns.failures.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{Period: fiveMinutes})),
	)
	db.AddWidgets(
		graph("Firehose delivery to S3",
			firehose("DeliveryToS3.Records", "Sum"), firehose("DeliveryToS3.Success", "Average"),
			firehose("FailedConversion.Records", "Sum"),
			errorObjects.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{
				Label: jsii.String("objects under " + auditErrorPrefix + " not yet reviewed"), Period: fiveMinutes,
			})),
		graph("Firehose data freshness (s)", firehose("DeliveryToS3.DataFreshness", "Maximum")),
	)
	db.AddWidgets(
		graph("DynamoDB throttles", throttles(d.main, dynamo.Main, "main table", "main"), throttles(d.tokens, dynamo.Tokens, "tokens table", "tokens")),
	)
	return db
}

func logGroupNames(groups []awslogs.ILogGroup) *[]*string {
	out := make([]*string, len(groups))
	for i, g := range groups {
		out[i] = g.LogGroupName()
	}
	return &out
}
