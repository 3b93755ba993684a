package main

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/aacworkflow/aacmcp/shared/store/dynamo"
)

// dataTables are the two DynamoDB tables.
type dataTables struct {
	main   awsdynamodb.TableV2
	tokens awsdynamodb.TableV2
}

func newDataTables(scope constructs.Construct) (*dataTables, error) {
	main, err := newTable(scope, "MainTable", dynamo.Main)
	if err != nil {
		return nil, err
	}
	tokens, err := newTable(scope, "TokensTable", dynamo.Tokens)
	if err != nil {
		return nil, err
	}
	return &dataTables{main: main, tokens: tokens}, nil
}

// newTable builds a table from its shared spec (shared/store/dynamo/tablespec.go), the same data that
// `aacmcp init --backend dynamodb` creates tables from.
//
// On demand: traffic is bursty and small, and on-demand has no capacity to tune or to
// throttle on. PITR: 35 days of restore points for an issue tracker's data. Encryption
// with the AWS-managed key (aws/dynamodb) puts key use in CloudTrail at no key cost.
// Deletion protection and RETAIN: `cdk destroy` must never take the data with it.
func newTable(scope constructs.Construct, id string, spec dynamo.TableSpec) (awsdynamodb.TableV2, error) {
	attr := func(name string) (*awsdynamodb.Attribute, error) {
		if name == "" {
			return nil, nil
		}
		if dynamo.AttributeType != "S" {
			return nil, fmt.Errorf("table %s: key type %q is not supported", id, dynamo.AttributeType)
		}
		return &awsdynamodb.Attribute{Name: jsii.String(name), Type: awsdynamodb.AttributeType_STRING}, nil
	}
	pk, err := attr(spec.PartitionKey)
	if err != nil {
		return nil, err
	}
	if pk == nil {
		return nil, fmt.Errorf("table %s: no partition key", id)
	}
	sk, _ := attr(spec.SortKey)
	var gsis []*awsdynamodb.GlobalSecondaryIndexPropsV2
	for _, g := range spec.GSIs {
		if g.Projection != dynamo.ProjectionAll {
			return nil, fmt.Errorf("table %s: index %s: projection %q is not supported", id, g.Name, g.Projection)
		}
		gpk, _ := attr(g.PartitionKey)
		gsk, _ := attr(g.SortKey)
		gsis = append(gsis, &awsdynamodb.GlobalSecondaryIndexPropsV2{
			IndexName:      jsii.String(g.Name),
			PartitionKey:   gpk,
			SortKey:        gsk,
			ProjectionType: awsdynamodb.ProjectionType_ALL,
		})
	}
	props := &awsdynamodb.TablePropsV2{
		PartitionKey:           pk,
		SortKey:                sk,
		GlobalSecondaryIndexes: &gsis,
		Billing:                awsdynamodb.Billing_OnDemand(nil),
		Encryption:             awsdynamodb.TableEncryptionV2_AwsManagedKey(),
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
		DeletionProtection: jsii.Bool(true),
		RemovalPolicy:      awscdk.RemovalPolicy_RETAIN,
	}
	if spec.TTLAttribute != "" {
		props.TimeToLiveAttribute = jsii.String(spec.TTLAttribute)
	}
	return awsdynamodb.NewTableV2(scope, jsii.String(id), props), nil
}

// indexArn is the ARN of one named index of a table: grants name it exactly instead of
// the table's "index/*".
func indexArn(t awsdynamodb.TableV2, index string) *string {
	return jsii.String(*t.TableArn() + "/index/" + index)
}
