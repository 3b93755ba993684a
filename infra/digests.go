package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/aacworkflow/aacmcp/functions/digest/digestfn"
	"github.com/aacworkflow/aacmcp/shared/audit/digest"
)

// digestPrefix is where the digest function writes, next to auditPrefix.
const digestPrefix = digest.Prefix

// newDigests wires the digest function: its signing key, its schedule and its
// rights. ECC_NIST_P256 with ECDSA_SHA_256 rather than CloudTrail's RSA_2048
// (SHA256withRSA): 128-bit security against RSA-2048's 112, 72-byte signatures, and
// the same openssl dgst -sha256 -verify check. The key signs and nothing else; its
// private half never leaves KMS.
func newDigests(scope constructs.Construct, p *pipeline, fns *functionSet) awskms.Key {
	key := awskms.NewKey(scope, jsii.String("AuditDigestKey"), &awskms.KeyProps{
		Description: jsii.String("aacmcp: signs the audit bucket's hourly digests"),
		KeySpec:     awskms.KeySpec_ECC_NIST_P256,
		KeyUsage:    awskms.KeyUsage_SIGN_VERIFY,
		// Old digests stay verifiable only while their key exists.
		RemovalPolicy: awscdk.RemovalPolicy_RETAIN,
	})
	fn := fns.get(fnDigest)
	fn.AddEnvironment(jsii.String(digestfn.EnvAuditBucket), p.bucket.BucketName(), nil)
	fn.AddEnvironment(jsii.String(digestfn.EnvDigestKeyARN), key.KeyArn(), nil)

	role := fn.Role()
	role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("SignDigests"),
		Actions:   jsii.Strings("kms:Sign"),
		Resources: jsii.Strings(*key.KeyArn()),
		Conditions: &map[string]any{
			"StringEquals": map[string]any{"kms:SigningAlgorithm": "ECDSA_SHA_256", "kms:MessageType": "DIGEST"},
		},
	}))
	bucketArn := *p.bucket.BucketArn()
	role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("ListLogAndDigests"),
		Actions:   jsii.Strings("s3:ListBucket"),
		Resources: jsii.Strings(bucketArn),
		Conditions: &map[string]any{
			"StringLike": map[string]any{"s3:prefix": []string{auditPrefix + "*", auditErrorPrefix + "*", digestPrefix + "*"}},
		},
	}))
	role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("ReadLogAndDigests"),
		Actions:   jsii.Strings("s3:GetObject"),
		Resources: jsii.Strings(bucketArn+"/"+auditPrefix+"*", bucketArn+"/"+auditErrorPrefix+"*", bucketArn+"/"+digestPrefix+"*"),
	}))
	// PutObject only: no delete, no overwrite of a locked version, no retention
	// change, no governance bypass.
	role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("WriteDigests"),
		Actions:   jsii.Strings("s3:PutObject"),
		Resources: jsii.Strings(bucketArn + "/" + digestPrefix + "*"),
	}))
	suppress(role, "IAM5", "The function reads every audit object, error object and digest and creates digests: "+
		"object ARNs cannot be listed in advance, so the grants are confined to the three prefixes.",
		"Resource::<"+logicalID(p.bucket)+".Arn>/"+auditPrefix+"*",
		"Resource::<"+logicalID(p.bucket)+".Arn>/"+auditErrorPrefix+"*",
		"Resource::<"+logicalID(p.bucket)+".Arn>/"+digestPrefix+"*")

	// Minute 15: past Firehose's latest delivery of the hour before (1.5 x 300 s).
	// EventBridge retries a failed invocation; a run that fails anyway is caught up by
	// the next one, and the function's Errors metric is alarmed by the monitoring.
	awsevents.NewRule(scope, jsii.String("AuditDigestSchedule"), &awsevents.RuleProps{
		Description: jsii.String("aacmcp: write the audit bucket's digests for the hour that ended"),
		Schedule:    awsevents.Schedule_Cron(&awsevents.CronOptions{Minute: jsii.String("15")}),
		Targets: &[]awsevents.IRuleTarget{awseventstargets.NewLambdaFunction(fn, &awseventstargets.LambdaFunctionProps{
			RetryAttempts: jsii.Number(2),
			MaxEventAge:   awscdk.Duration_Minutes(jsii.Number(40)),
		})},
	})
	// audit verify --s3 --kms-key pins this key: without the pin any signing key the
	// caller may read verifies a rewritten digest that names it.
	awscdk.NewCfnOutput(scope, jsii.String(outDigestKeyARN), &awscdk.CfnOutputProps{
		Value:       key.KeyArn(),
		Description: jsii.String("KMS key that signs the audit digests: pass it to aacmcp audit verify --s3 --kms-key"),
	})
	return key
}
