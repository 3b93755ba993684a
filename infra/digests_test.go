package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/aacworkflow/aacmcp/functions/digest/digestfn"
	"github.com/aacworkflow/aacmcp/shared/audit/digest"
)

// assertCDK runs a CDK assertion, which panics on failure, as a test error.
func assertCDK(t *testing.T, name string, fn func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s: %v", name, r)
		}
	}()
	fn()
}

func TestAuditBucketObjectLock(t *testing.T) {
	for _, tt := range []struct {
		s    *synthesized
		mode string
		days float64
	}{{plain, "GOVERNANCE", 365}, {full, "COMPLIANCE", 730}} {
		assertCDK(t, tt.mode, func() {
			tt.s.template.HasResourceProperties(jsii.String("AWS::S3::Bucket"), map[string]any{
				"ObjectLockEnabled":       true,
				"VersioningConfiguration": map[string]any{"Status": "Enabled"},
				"ObjectLockConfiguration": map[string]any{
					"ObjectLockEnabled": "Enabled",
					"Rule":              map[string]any{"DefaultRetention": map[string]any{"Mode": tt.mode, "Days": tt.days}},
				},
			})
		})
	}
}

func TestDigestKeyAndSchedule(t *testing.T) {
	assertCDK(t, "key", func() {
		plain.template.HasResource(jsii.String("AWS::KMS::Key"), map[string]any{
			"Properties":     map[string]any{"KeySpec": "ECC_NIST_P256", "KeyUsage": "SIGN_VERIFY"},
			"DeletionPolicy": "Retain",
		})
	})
	fn := plain.raw.logicalIDWithPrefix(t, "AWS::Lambda::Function", functionID(fnDigest))
	key := plain.raw.logicalIDWithPrefix(t, "AWS::KMS::Key", "AuditDigestKey")
	bucket := plain.raw.logicalIDWithPrefix(t, "AWS::S3::Bucket", "AuditBucket")
	env := jsonText(path(plain.raw.Resources[fn].Properties, "Environment", "Variables"))
	if !strings.Contains(env, `"`+digestfn.EnvAuditBucket+`":{"Ref":"`+bucket+`"}`) ||
		!strings.Contains(env, `"`+digestfn.EnvDigestKeyARN+`":{"Fn::GetAtt":["`+key+`","Arn"]}`) {
		t.Errorf("digest function environment = %s", env)
	}
	assertCDK(t, "schedule", func() {
		plain.template.HasResourceProperties(jsii.String("AWS::Events::Rule"), map[string]any{
			"ScheduleExpression": "cron(15 * * * ? *)",
			"State":              "ENABLED",
			"Targets": assertions.Match_ArrayWith(&[]any{assertions.Match_ObjectLike(&map[string]any{
				"Arn":         map[string]any{"Fn::GetAtt": []any{fn, "Arn"}},
				"RetryPolicy": map[string]any{"MaximumRetryAttempts": 2, "MaximumEventAgeInSeconds": 2400},
			})}),
		})
	})
}

// TestDigestRoleIsConfined: the digest function signs with its key only, with the
// digest algorithm only; writes only under audit-digest/; deletes nothing and cannot
// touch retention.
func TestDigestRoleIsConfined(t *testing.T) {
	role := plain.raw.logicalIDWithPrefix(t, "AWS::IAM::Role", functionID(fnDigest)+"Role")
	key := jsonText(getAtt(plain.raw.logicalIDWithPrefix(t, "AWS::KMS::Key", "AuditDigestKey"), "Arn"))
	for _, st := range statementsOf(t, plain, role) {
		for _, a := range st.Actions {
			if strings.HasPrefix(a, "s3:Delete") || strings.Contains(a, "Retention") || strings.Contains(a, "Bypass") {
				t.Errorf("digest role may %s", a)
			}
		}
		switch {
		case slices.Contains(st.Actions, "kms:Sign"):
			if !slices.Equal(st.Resources, []string{key}) || !strings.Contains(st.Conditions, `"kms:SigningAlgorithm":"ECDSA_SHA_256"`) {
				t.Errorf("kms:Sign on %v if %s", st.Resources, st.Conditions)
			}
		case slices.Contains(st.Actions, "s3:PutObject"):
			if len(st.Resources) != 1 || !strings.Contains(st.Resources[0], `/audit-digest/*`) {
				t.Errorf("digest role writes to %v", st.Resources)
			}
		case slices.Contains(st.Actions, "s3:ListBucket"):
			if !strings.Contains(st.Conditions, `"s3:prefix":["audit/*","audit-errors/*","audit-digest/*"]`) {
				t.Errorf("ListBucket condition %s", st.Conditions)
			}
		}
	}
}

// TestDigestKeyOutput: the stack names the digest key's ARN, what audit verify --s3
// --kms-key pins (docs/deploy.md, "Verify your audit log").
func TestDigestKeyOutput(t *testing.T) {
	key := plain.raw.logicalIDWithPrefix(t, "AWS::KMS::Key", "AuditDigestKey")
	assertCDK(t, "output", func() {
		plain.template.HasOutput(jsii.String(outDigestKeyARN), map[string]any{
			"Value": map[string]any{"Fn::GetAtt": []any{key, "Arn"}},
		})
	})
}

// TestDigestRoleReadsErrorObjects: the digests list audit-errors/ too, so the role
// reads that prefix (and still writes only under audit-digest/).
func TestDigestRoleReadsErrorObjects(t *testing.T) {
	role := plain.raw.logicalIDWithPrefix(t, "AWS::IAM::Role", functionID(fnDigest)+"Role")
	read := false
	for _, st := range statementsOf(t, plain, role) {
		if slices.Contains(st.Actions, "s3:GetObject") && slices.ContainsFunc(st.Resources, func(r string) bool { return strings.Contains(r, `/audit-errors/*`) }) {
			read = true
		}
	}
	if !read {
		t.Error("the digest role cannot read audit-errors/")
	}
	// Firehose's error prefix is the one the digest package lists.
	if auditErrorPrefix != digest.ErrorPrefix {
		t.Errorf("Firehose writes errors under %q, the digests list %q", auditErrorPrefix, digest.ErrorPrefix)
	}
}

func TestDigestFailureAlarm(t *testing.T) {
	fn := plain.raw.logicalIDWithPrefix(t, "AWS::Lambda::Function", functionID(fnDigest))
	assertCDK(t, "alarm", func() {
		plain.template.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{
			"MetricName": "Errors", "Namespace": "AWS/Lambda", "Period": 3600, "Threshold": 1,
			"Dimensions":   []any{map[string]any{"Name": "FunctionName", "Value": map[string]any{"Ref": fn}}},
			"AlarmActions": assertions.Match_AnyValue(),
		})
	})
}
