package main

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsathena"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/aacworkflow/aacmcp/infra/config"
	"github.com/aacworkflow/aacmcp/infra/savedqueries"
)

// analytics is where admins query the audit log.
type analytics struct {
	results   awss3.Bucket
	workgroup awsathena.CfnWorkGroup
	queries   []awsathena.CfnNamedQuery
}

func newAnalytics(scope constructs.Construct, cfg config.Config, p *pipeline, queries []savedqueries.Query) *analytics {
	an := &analytics{}
	stack := awscdk.Stack_Of(scope)
	// Query results can hold audit rows: encrypted, private, and gone after 30 days
	// (anyone can re-run a query; nobody needs last quarter's result files).
	an.results = awss3.NewBucket(scope, jsii.String("AthenaResultsBucket"), &awss3.BucketProps{
		BlockPublicAccess:      awss3.BlockPublicAccess_BLOCK_ALL(),
		EnforceSSL:             jsii.Bool(true),
		MinimumTLSVersion:      jsii.Number(1.2),
		Encryption:             awss3.BucketEncryption_S3_MANAGED,
		ObjectOwnership:        awss3.ObjectOwnership_BUCKET_OWNER_ENFORCED,
		ServerAccessLogsBucket: p.logsBucket,
		ServerAccessLogsPrefix: jsii.String("athena-results/"),
		LifecycleRules: &[]*awss3.LifecycleRule{{
			Id:                                  jsii.String("expire-results"),
			Expiration:                          awscdk.Duration_Days(jsii.Number(30)),
			AbortIncompleteMultipartUploadAfter: awscdk.Duration_Days(jsii.Number(1)),
		}},
		RemovalPolicy: awscdk.RemovalPolicy_RETAIN,
	})

	an.workgroup = awsathena.NewCfnWorkGroup(scope, jsii.String("AuditWorkGroup"), &awsathena.CfnWorkGroupProps{
		Name:        jsii.String(fmt.Sprintf("%s-audit", *stack.StackName())),
		Description: jsii.String("aacmcp audit log queries"),
		// Deleting the stack removes the saved queries with the workgroup.
		RecursiveDeleteOption: jsii.Bool(true),
		WorkGroupConfiguration: &awsathena.CfnWorkGroup_WorkGroupConfigurationProperty{
			// Enforced: a client cannot send results elsewhere or unencrypted, nor lift
			// the scan cutoff that bounds what one careless query can cost.
			EnforceWorkGroupConfiguration:   jsii.Bool(true),
			PublishCloudWatchMetricsEnabled: jsii.Bool(true),
			BytesScannedCutoffPerQuery:      jsii.Number(float64(cfg.AthenaScanCutoff)),
			EngineVersion: &awsathena.CfnWorkGroup_EngineVersionProperty{
				SelectedEngineVersion: jsii.String("Athena engine version 3"),
			},
			ResultConfiguration: &awsathena.CfnWorkGroup_ResultConfigurationProperty{
				OutputLocation: jsii.String("s3://" + *an.results.BucketName() + "/results/"),
				EncryptionConfiguration: &awsathena.CfnWorkGroup_EncryptionConfigurationProperty{
					EncryptionOption: jsii.String("SSE_S3"),
				},
			},
		},
	})

	for _, q := range queries {
		props := &awsathena.CfnNamedQueryProps{
			Name:        jsii.String(q.Name),
			Database:    p.database.DatabaseName(),
			QueryString: jsii.String(q.SQL),
			WorkGroup:   an.workgroup.Ref(),
		}
		if q.Description != "" {
			props.Description = jsii.String(q.Description)
		}
		nq := awsathena.NewCfnNamedQuery(scope, jsii.String("Query-"+q.Name), props)
		// The table must exist before a query that names it is saved for use.
		nq.Node().AddDependency(p.table)
		an.queries = append(an.queries, nq)
	}
	return an
}
