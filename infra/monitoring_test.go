package main

import (
	"strings"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/events/queries"
)

// TestAuditErrorObjectAlarm: any object under the Firehose error prefix, whatever
// wrote it there, reaches the alarm: the bucket sends its events to EventBridge, a
// rule on that prefix feeds a queue, and the alarm watches the queue.
func TestAuditErrorObjectAlarm(t *testing.T) {
	each(t, func(t *testing.T, s *synthesized) {
		bucket := s.raw.logicalIDWithPrefix(t, "AWS::S3::Bucket", "AuditBucket")
		queue := s.raw.logicalIDWithPrefix(t, "AWS::SQS::Queue", "AuditErrorObjects")
		rule := s.raw.logicalIDWithPrefix(t, "AWS::Events::Rule", "AuditErrorObjectRule")
		alarm := s.raw.logicalIDWithPrefix(t, "AWS::CloudWatch::Alarm", "AuditErrorObjectAlarm")

		if got := path(s.raw.Resources[bucket].Properties, "NotificationConfiguration", "EventBridgeConfiguration", "EventBridgeEnabled"); got != true {
			t.Errorf("audit bucket EventBridgeEnabled = %v", got)
		}
		// Set natively, not through CDK's notifications Lambda.
		if ids := s.raw.ofType("Custom::S3BucketNotifications"); len(ids) != 0 {
			t.Errorf("bucket notifications custom resource %v", ids)
		}

		// The rule's prefix is the one Firehose writes errors under.
		ds := s.raw.Resources["AuditDelivery"].Properties
		errorPrefix, _ := path(ds, "ExtendedS3DestinationConfiguration", "ErrorOutputPrefix").(string)
		if !strings.HasPrefix(errorPrefix, auditErrorPrefix) {
			t.Fatalf("Firehose ErrorOutputPrefix %q is not under %q", errorPrefix, auditErrorPrefix)
		}
		r := s.raw.Resources[rule].Properties
		want := map[string]any{
			"source":      []any{"aws.s3"},
			"detail-type": []any{"Object Created"},
			"detail": map[string]any{
				"bucket": map[string]any{"name": []any{ref(bucket)}},
				"object": map[string]any{"key": []any{map[string]any{"prefix": auditErrorPrefix}}},
			},
		}
		if got := jsonText(r["EventPattern"]); got != jsonText(want) {
			t.Errorf("rule pattern %s\nwant %s", got, jsonText(want))
		}
		if r["State"] != "ENABLED" {
			t.Errorf("rule state %v", r["State"])
		}
		targets := asList(r["Targets"])
		if len(targets) != 1 || jsonText(path(targets[0], "Arn")) != jsonText(getAtt(queue, "Arn")) {
			t.Errorf("rule targets %s, want the queue %s", jsonText(targets), queue)
		}

		// Only this rule may send to the queue.
		var allowed bool
		for _, id := range s.raw.ofType("AWS::SQS::QueuePolicy") {
			p := s.raw.Resources[id].Properties
			if !strings.Contains(jsonText(p["Queues"]), jsonText(ref(queue))) {
				continue
			}
			for _, st := range asList(path(p, "PolicyDocument", "Statement")) {
				if path(st, "Principal", "Service") == "events.amazonaws.com" {
					allowed = path(st, "Effect") == "Allow" &&
						jsonText(path(st, "Condition", "ArnEquals", "aws:SourceArn")) == jsonText(getAtt(rule, "Arn"))
				}
			}
		}
		if !allowed {
			t.Error("no queue policy lets exactly this rule send to the queue")
		}
		q := s.raw.Resources[queue].Properties
		if q["SqsManagedSseEnabled"] != true || q["MessageRetentionPeriod"] != float64(14*24*3600) {
			t.Errorf("queue %v", q)
		}

		a := s.raw.Resources[alarm].Properties
		for _, c := range []struct {
			what      string
			got, want any
		}{
			{"metric", a["MetricName"], "ApproximateNumberOfMessagesVisible"},
			{"queue", jsonText(path(a, "Dimensions", 0, "Value")), jsonText(getAtt(queue, "QueueName"))},
			{"threshold", a["Threshold"], float64(1)},
			{"comparison", a["ComparisonOperator"], "GreaterThanOrEqualToThreshold"},
			{"notifies", jsonText(path(a, "AlarmActions", 0)), jsonText(ref(s.raw.logicalIDWithPrefix(t, "AWS::SNS::Topic", "AlarmTopic")))},
		} {
			if jsonText(c.got) != jsonText(c.want) {
				t.Errorf("alarm %s = %s, want %s", c.what, jsonText(c.got), jsonText(c.want))
			}
		}
	})
}

// TestSavedQueriesWaitForDelivery: with dynamic partitioning, Firehose may deliver a
// record up to 1.5 times its buffer interval late (AWS, "Buffer data for dynamic
// partitioning"). A saved query's window must end at least that long ago, or Athena
// answers from fewer records than the local files hold.
func TestSavedQueriesWaitForDelivery(t *testing.T) {
	ds := plain.raw.Resources["AuditDelivery"].Properties
	interval, _ := path(ds, "ExtendedS3DestinationConfiguration", "BufferingHints", "IntervalInSeconds").(float64)
	if interval != firehoseBufferInterval {
		t.Fatalf("buffer interval %v, constant %d", interval, firehoseBufferInterval)
	}
	worst := time.Duration(1.5 * interval * float64(time.Second))
	if queries.DeliveryLag < worst {
		t.Errorf("queries.DeliveryLag %v is shorter than Firehose's worst delivery delay %v", queries.DeliveryLag, worst)
	}
}
