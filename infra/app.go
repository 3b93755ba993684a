package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
)

// featureFlags are the CDK feature flags the stack is written against. They live in code
// rather than only in cdk.json so that `go run ./infra` and the tests (whose App does not
// read cdk.json) synthesize the same template as `cdk deploy`; context from cdk.json or
// the CLI still takes precedence.
var featureFlags = map[string]any{
	// Grant S3 log delivery through a bucket policy instead of the legacy ACL, which
	// BucketOwnerEnforced object ownership forbids.
	"@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy": true,
	"@aws-cdk/aws-s3:createDefaultLoggingPolicy":      true,
	// Redeploy the stage when the authorizer changes, or the change never goes live.
	"@aws-cdk/aws-apigateway:authorizerChangeDeploymentLogicalId": true,
	// Don't create a 1-second log retention custom resource for anything.
	"@aws-cdk/aws-lambda:useCdkManagedLogGroup": false,
	"@aws-cdk/core:enablePartitionLiterals":     true,
	// Fail synth on a template CloudFormation would refuse (a WAF description with
	// parentheses did, once) instead of printing a warning and deploying it.
	"@aws-cdk/core:validateAgainstDefaultRules": true,
	// The front door's references from the stack to its us-east-1 edge stack: "strong"
	// (CDK's default, said explicitly) keeps the edge stack from removing a value the
	// stack still uses, instead of a deploy that breaks the distribution.
	"@aws-cdk/core:defaultCrossStackReferences": "strong",
}

// newApp creates the CDK app with the stack's feature flags; outdir "" means CDK_OUTDIR
// (what the CDK CLI sets) or a temporary directory.
func newApp(outdir string) awscdk.App {
	ctx := make(map[string]any, len(featureFlags))
	for k, v := range featureFlags {
		ctx[k] = v
	}
	props := &awscdk.AppProps{Context: &ctx}
	if outdir != "" {
		props.Outdir = jsii.String(outdir)
	}
	return awscdk.NewApp(props)
}
