package main

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsglue"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskinesis"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskinesisfirehose"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/aacworkflow/aacmcp/infra/auditschema"
	"github.com/aacworkflow/aacmcp/infra/config"
)

// S3 layout of the audit bucket. The data prefix is the one the local file sink writes
// (audit/dt=YYYY-MM-DD/hour=HH/), so the same queries run on both.
const (
	auditPrefix      = "audit/"
	auditErrorPrefix = "audit-errors/"
	// AuditTableName is the Glue table the saved queries select from.
	AuditTableName = "audit_log"
	// Firehose buffering: format conversion requires at least 64 MiB; 128 MiB never
	// binds at this volume, so the interval decides. 300 s gives at most 12 Parquet
	// files per hour per partition (small files slow Athena) and records are queryable
	// within about five minutes, well inside "the same hour".
	firehoseBufferMiB      = 128
	firehoseBufferInterval = 300
)

// partitionQuery is the JQ that Firehose runs on each record to pick its partition from
// the record's own RFC 3339 UTC timestamp. Firehose's !{timestamp:...} is the arrival
// time, which would file a late fallback record under the wrong hour.
const partitionQuery = `{dt: .timestamp[0:10], hour: .timestamp[11:13]}`

// pipeline is the audit path: stream -> Firehose -> S3 (Parquet) <- Glue table.
type pipeline struct {
	stream      awskinesis.Stream
	bucket      awss3.Bucket
	logsBucket  awss3.Bucket
	database    awsglue.Database
	table       awsglue.S3Table
	delivery    awskinesisfirehose.CfnDeliveryStream
	deliveryLog awslogs.LogGroup
}

func newPipeline(scope constructs.Construct, cfg config.Config) (*pipeline, error) {
	p := &pipeline{}
	// On demand: no shard count to size for bursts; the AWS-managed key (aws/kinesis)
	// encrypts at rest without key policies for every producer to get right.
	p.stream = awskinesis.NewStream(scope, jsii.String("AuditStream"), &awskinesis.StreamProps{
		StreamMode: awskinesis.StreamMode_ON_DEMAND,
		Encryption: awskinesis.StreamEncryption_MANAGED,
		// 24 h (the minimum, no extended-retention charge) is ample: Firehose reads within
		// seconds and retries for up to a day. Records live on in S3, so the stream itself
		// holds nothing worth keeping when the stack is deleted.
		RetentionPeriod: awscdk.Duration_Hours(jsii.Number(24)),
		RemovalPolicy:   awscdk.RemovalPolicy_DESTROY,
	})

	p.logsBucket = newLogsBucket(scope, cfg)
	p.bucket = awss3.NewBucket(scope, jsii.String("AuditBucket"), &awss3.BucketProps{
		BlockPublicAccess:      awss3.BlockPublicAccess_BLOCK_ALL(),
		EnforceSSL:             jsii.Bool(true),
		MinimumTLSVersion:      jsii.Number(1.2),
		Encryption:             awss3.BucketEncryption_S3_MANAGED,
		ObjectOwnership:        awss3.ObjectOwnership_BUCKET_OWNER_ENFORCED,
		Versioned:              jsii.Bool(true),
		ServerAccessLogsBucket: p.logsBucket,
		ServerAccessLogsPrefix: jsii.String("audit-bucket/"),
		LifecycleRules:         &[]*awss3.LifecycleRule{auditLifecycle(cfg)},
		RemovalPolicy:          awscdk.RemovalPolicy_RETAIN,
		// Every new object, records and digests alike, is retained as written for
		// the lock period (docs/security.md: what governance mode does not stop).
		ObjectLockEnabled:          jsii.Bool(true),
		ObjectLockDefaultRetention: auditObjectLock(cfg),
	})

	cols, err := auditschema.Columns()
	if err != nil {
		return nil, err
	}
	if err := p.addGlue(scope, cfg, cols); err != nil {
		return nil, err
	}
	p.addDelivery(scope, cfg)
	return p, nil
}

// auditObjectLock is the bucket's default retention, from the context keys
// auditObjectLockMode and auditObjectLockDays.
func auditObjectLock(cfg config.Config) awss3.ObjectLockRetention {
	d := awscdk.Duration_Days(jsii.Number(float64(cfg.AuditObjectLockDays)))
	if cfg.AuditObjectLockMode == config.ObjectLockCompliance {
		return awss3.ObjectLockRetention_Compliance(d)
	}
	return awss3.ObjectLockRetention_Governance(d)
}

// auditLifecycle archives audit objects after 90 days to Glacier Instant Retrieval,
// which Athena still reads (Flexible Retrieval and Deep Archive it cannot), and expires
// them after the configured retention. Old versions go after 30 days: versioning is there
// to undo a mistaken overwrite or delete, not to keep a second copy for years.
func auditLifecycle(cfg config.Config) *awss3.LifecycleRule {
	r := &awss3.LifecycleRule{
		Id: jsii.String("archive-then-expire"),
		Transitions: &[]*awss3.Transition{{
			StorageClass:    awss3.StorageClass_GLACIER_INSTANT_RETRIEVAL(),
			TransitionAfter: awscdk.Duration_Days(jsii.Number(config.ArchiveAfterDays)),
		}},
		NoncurrentVersionExpiration:         awscdk.Duration_Days(jsii.Number(30)),
		AbortIncompleteMultipartUploadAfter: awscdk.Duration_Days(jsii.Number(7)),
	}
	if cfg.AuditRetentionDays > 0 {
		r.Expiration = awscdk.Duration_Days(jsii.Number(float64(cfg.AuditRetentionDays)))
	}
	return r
}

// newLogsBucket receives the S3 server access logs of the other buckets: who read the
// audit trail is itself evidence, so it is kept as long as the audit records.
func newLogsBucket(scope constructs.Construct, cfg config.Config) awss3.Bucket {
	rule := &awss3.LifecycleRule{
		Id:                                  jsii.String("expire"),
		AbortIncompleteMultipartUploadAfter: awscdk.Duration_Days(jsii.Number(7)),
	}
	if cfg.AuditRetentionDays > 0 {
		rule.Expiration = awscdk.Duration_Days(jsii.Number(float64(cfg.AuditRetentionDays)))
	}
	b := awss3.NewBucket(scope, jsii.String("AccessLogsBucket"), &awss3.BucketProps{
		BlockPublicAccess: awss3.BlockPublicAccess_BLOCK_ALL(),
		EnforceSSL:        jsii.Bool(true),
		MinimumTLSVersion: jsii.Number(1.2),
		// Server access log delivery supports SSE-S3 only.
		Encryption:      awss3.BucketEncryption_S3_MANAGED,
		ObjectOwnership: awss3.ObjectOwnership_BUCKET_OWNER_ENFORCED,
		LifecycleRules:  &[]*awss3.LifecycleRule{rule},
		RemovalPolicy:   awscdk.RemovalPolicy_RETAIN,
	})
	suppress(b, "S1", "This is the access-log bucket; logging its own accesses into itself would loop.")
	return b
}

// addGlue declares the table Athena queries and Firehose converts records with. The
// columns come from the Go audit record (infra/auditschema); the partitions are
// projected, so no crawler or MSCK REPAIR is ever needed. dt and hour are strings, as
// DuckDB reads them from the local hive paths, so one SQL text works on both.
func (p *pipeline) addGlue(scope constructs.Construct, cfg config.Config, cols []auditschema.Column) error {
	p.database = awsglue.NewDatabase(scope, jsii.String("AuditDatabase"), &awsglue.DatabaseProps{
		DatabaseName: jsii.String(cfg.GlueDatabase),
		Description:  jsii.String("aacmcp audit log"),
	})
	// Only metadata, defined again by every deploy: the records stay in the retained
	// bucket. A database kept after `cdk destroy` would make the next deploy of the
	// stack fail on its name.
	p.database.ApplyRemovalPolicy(awscdk.RemovalPolicy_DESTROY)
	columns := make([]*awsglue.Column, 0, len(cols))
	for _, c := range cols {
		t, err := glueType(c.Type)
		if err != nil {
			return fmt.Errorf("audit column %s: %w", c.Name, err)
		}
		columns = append(columns, &awsglue.Column{Name: jsii.String(c.Name), Type: t})
	}
	p.table = awsglue.NewS3Table(scope, jsii.String("AuditTable"), &awsglue.S3TableProps{
		Database:    p.database,
		TableName:   jsii.String(AuditTableName),
		Description: jsii.String("One row per audit event, tool call or authorization (shared/audit.Record)"),
		Columns:     &columns,
		PartitionKeys: &[]*awsglue.Column{
			{Name: jsii.String("dt"), Type: awsglue.Schema_STRING()},
			{Name: jsii.String("hour"), Type: awsglue.Schema_STRING()},
		},
		DataFormat: awsglue.DataFormat_PARQUET(),
		// SSE-S3 is transparent to readers; "true" would tell Athena to expect CSE-KMS.
		HasEncryptedData: jsii.Bool(false),
		Storage:          awsglue.S3TableStorage_FromBucket(p.bucket),
		S3Prefix:         jsii.String(auditPrefix),
		PartitionProjection: &map[string]awsglue.PartitionProjectionConfiguration{
			"dt": awsglue.PartitionProjectionConfiguration_Date(&awsglue.DatePartitionProjectionConfigurationProps{
				Min:    jsii.String("2025-01-01"),
				Max:    jsii.String("NOW"),
				Format: jsii.String("yyyy-MM-dd"),
			}),
			"hour": awsglue.PartitionProjectionConfiguration_Integer(&awsglue.IntegerPartitionProjectionConfigurationProps{
				Min:    jsii.Number(0),
				Max:    jsii.Number(23),
				Digits: jsii.Number(2),
			}),
		},
		Parameters: &map[string]*string{
			"storage.location.template": jsii.String(
				"s3://" + *p.bucket.BucketName() + "/" + auditPrefix + "dt=${dt}/hour=${hour}/"),
		},
	})
	p.table.ApplyRemovalPolicy(awscdk.RemovalPolicy_DESTROY)
	return nil
}

func glueType(t string) (awsglue.Type, error) {
	switch t {
	case auditschema.TypeString:
		return awsglue.Schema_STRING(), nil
	case auditschema.TypeBoolean:
		return awsglue.Schema_BOOLEAN(), nil
	case auditschema.TypeBigint:
		return awsglue.Schema_BIG_INT(), nil
	case auditschema.TypeArrayString:
		return awsglue.Schema_Array(awsglue.Schema_STRING()), nil
	}
	return nil, fmt.Errorf("no Glue type for %q", t)
}

// addDelivery builds the Firehose delivery stream from the L1 resource with its own
// role: the L2 grants the role s3:GetObject*, s3:List* and s3:DeleteObject* on the
// whole bucket, where Firehose needs six exact actions on two prefixes.
func (p *pipeline) addDelivery(scope constructs.Construct, cfg config.Config) {
	stack := awscdk.Stack_Of(scope)
	p.deliveryLog = awslogs.NewLogGroup(scope, jsii.String("AuditDeliveryLogs"), &awslogs.LogGroupProps{
		Retention:     retention(cfg.LogRetentionDays),
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	logStream := awslogs.NewLogStream(scope, jsii.String("AuditDeliveryLogStream"), &awslogs.LogStreamProps{
		LogGroup:      p.deliveryLog,
		LogStreamName: jsii.String("S3Delivery"),
	})

	role := awsiam.NewRole(scope, jsii.String("AuditDeliveryRole"), &awsiam.RoleProps{
		AssumedBy: awsiam.NewServicePrincipal(jsii.String("firehose.amazonaws.com"), &awsiam.ServicePrincipalOpts{
			Conditions: &map[string]any{"StringEquals": map[string]any{"sts:ExternalId": stack.Account()}},
		}),
		Description: jsii.String("aacmcp audit Firehose delivery"),
	})
	bucketArn := *p.bucket.BucketArn()
	policy := awsiam.NewPolicy(scope, jsii.String("AuditDeliveryPolicy"), &awsiam.PolicyProps{
		Roles: &[]awsiam.IRole{role},
		Statements: &[]awsiam.PolicyStatement{
			awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				Sid:       jsii.String("ReadAuditStream"),
				Actions:   jsii.Strings("kinesis:DescribeStream", "kinesis:DescribeStreamSummary", "kinesis:GetShardIterator", "kinesis:GetRecords", "kinesis:ListShards"),
				Resources: &[]*string{p.stream.StreamArn()},
			}),
			awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				Sid:       jsii.String("AuditBucket"),
				Actions:   jsii.Strings("s3:GetBucketLocation", "s3:ListBucket", "s3:ListBucketMultipartUploads"),
				Resources: jsii.Strings(bucketArn),
			}),
			awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				Sid:       jsii.String("WriteAuditObjects"),
				Actions:   jsii.Strings("s3:PutObject", "s3:GetObject", "s3:AbortMultipartUpload"),
				Resources: jsii.Strings(bucketArn+"/"+auditPrefix+"*", bucketArn+"/"+auditErrorPrefix+"*"),
			}),
			awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				Sid:     jsii.String("ReadTableSchema"),
				Actions: jsii.Strings("glue:GetTable", "glue:GetTableVersion", "glue:GetTableVersions"),
				Resources: jsii.Strings(
					*stack.FormatArn(&awscdk.ArnComponents{Service: jsii.String("glue"), Resource: jsii.String("catalog")}),
					*p.database.DatabaseArn(),
					*p.table.TableArn(),
				),
			}),
			awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				Sid:       jsii.String("WriteDeliveryLogs"),
				Actions:   jsii.Strings("logs:PutLogEvents"),
				Resources: jsii.Strings(*p.deliveryLog.LogGroupArn()),
			}),
		},
	})
	suppress(policy, "IAM5", "Firehose names its objects itself (partition, time and a random suffix), so "+
		"object ARNs cannot be listed; the grant is confined to the data and error prefixes.",
		"Resource::<"+logicalID(p.bucket)+".Arn>/"+auditPrefix+"*",
		"Resource::<"+logicalID(p.bucket)+".Arn>/"+auditErrorPrefix+"*")

	p.delivery = awskinesisfirehose.NewCfnDeliveryStream(scope, jsii.String("AuditDelivery"), &awskinesisfirehose.CfnDeliveryStreamProps{
		DeliveryStreamType: jsii.String("KinesisStreamAsSource"),
		KinesisStreamSourceConfiguration: &awskinesisfirehose.CfnDeliveryStream_KinesisStreamSourceConfigurationProperty{
			KinesisStreamArn: p.stream.StreamArn(),
			RoleArn:          role.RoleArn(),
		},
		ExtendedS3DestinationConfiguration: &awskinesisfirehose.CfnDeliveryStream_ExtendedS3DestinationConfigurationProperty{
			BucketArn:         p.bucket.BucketArn(),
			RoleArn:           role.RoleArn(),
			Prefix:            jsii.String(auditPrefix + "dt=!{partitionKeyFromQuery:dt}/hour=!{partitionKeyFromQuery:hour}/"),
			ErrorOutputPrefix: jsii.String(auditErrorPrefix + "!{firehose:error-output-type}/dt=!{timestamp:yyyy-MM-dd}/hour=!{timestamp:HH}/"),
			BufferingHints: &awskinesisfirehose.CfnDeliveryStream_BufferingHintsProperty{
				SizeInMBs:         jsii.Number(firehoseBufferMiB),
				IntervalInSeconds: jsii.Number(firehoseBufferInterval),
			},
			// Parquet compresses itself (Snappy below); Firehose compression must be off.
			CompressionFormat: jsii.String("UNCOMPRESSED"),
			DynamicPartitioningConfiguration: &awskinesisfirehose.CfnDeliveryStream_DynamicPartitioningConfigurationProperty{
				Enabled: jsii.Bool(true),
				RetryOptions: &awskinesisfirehose.CfnDeliveryStream_RetryOptionsProperty{
					DurationInSeconds: jsii.Number(300),
				},
			},
			ProcessingConfiguration: &awskinesisfirehose.CfnDeliveryStream_ProcessingConfigurationProperty{
				Enabled: jsii.Bool(true),
				Processors: &[]any{
					&awskinesisfirehose.CfnDeliveryStream_ProcessorProperty{
						Type: jsii.String("MetadataExtraction"),
						Parameters: &[]any{
							&awskinesisfirehose.CfnDeliveryStream_ProcessorParameterProperty{
								ParameterName: jsii.String("MetadataExtractionQuery"), ParameterValue: jsii.String(partitionQuery),
							},
							&awskinesisfirehose.CfnDeliveryStream_ProcessorParameterProperty{
								ParameterName: jsii.String("JsonParsingEngine"), ParameterValue: jsii.String("JQ-1.6"),
							},
						},
					},
				},
			},
			DataFormatConversionConfiguration: &awskinesisfirehose.CfnDeliveryStream_DataFormatConversionConfigurationProperty{
				Enabled: jsii.Bool(true),
				InputFormatConfiguration: &awskinesisfirehose.CfnDeliveryStream_InputFormatConfigurationProperty{
					Deserializer: &awskinesisfirehose.CfnDeliveryStream_DeserializerProperty{
						OpenXJsonSerDe: &awskinesisfirehose.CfnDeliveryStream_OpenXJsonSerDeProperty{},
					},
				},
				OutputFormatConfiguration: &awskinesisfirehose.CfnDeliveryStream_OutputFormatConfigurationProperty{
					Serializer: &awskinesisfirehose.CfnDeliveryStream_SerializerProperty{
						ParquetSerDe: &awskinesisfirehose.CfnDeliveryStream_ParquetSerDeProperty{Compression: jsii.String("SNAPPY")},
					},
				},
				SchemaConfiguration: &awskinesisfirehose.CfnDeliveryStream_SchemaConfigurationProperty{
					CatalogId:    stack.Account(),
					Region:       stack.Region(),
					DatabaseName: p.database.DatabaseName(),
					TableName:    p.table.TableName(),
					RoleArn:      role.RoleArn(),
					VersionId:    jsii.String("LATEST"),
				},
			},
			CloudWatchLoggingOptions: &awskinesisfirehose.CfnDeliveryStream_CloudWatchLoggingOptionsProperty{
				Enabled:       jsii.Bool(true),
				LogGroupName:  p.deliveryLog.LogGroupName(),
				LogStreamName: logStream.LogStreamName(),
			},
		},
	})
	// Firehose checks its role when the stream is created: the policy must exist first.
	p.delivery.Node().AddDependency(policy)
	suppress(p.delivery, "KDF1", "Delivery-stream SSE applies to Direct PUT sources only; this stream reads "+
		"from a Kinesis stream encrypted with aws/kinesis and writes to an SSE-S3 bucket.")
}

// logicalID is the CloudFormation logical id of a construct's default resource, as
// cdk-nag prints it in IAM findings.
func logicalID(c constructs.IConstruct) string {
	res := c.Node().DefaultChild().(awscdk.CfnElement)
	return *awscdk.Stack_Of(c).GetLogicalId(res)
}
