package authorizerfn

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aacworkflow/aacmcp/shared/ratelimit"
	"github.com/aacworkflow/aacmcp/shared/store/dynamo"
)

// FailureCounter counts rejected credentials per source IP in fixed windows.
type FailureCounter interface {
	// AddFailure counts one more failure of ip in the window containing now and
	// returns the window's count so far.
	AddFailure(ctx context.Context, ip string, now time.Time) (int64, error)
}

// DynamoAPI is the part of *dynamodb.Client the counter uses: the call the
// authorizer's IAM role allows on its own counter items.
type DynamoAPI interface {
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
}

// counterSK is the sort key of every counter item (the table's key is PK+SK).
const counterSK = "COUNT"

// DynamoFailures keeps the counters in the tokens table under partition keys
// "FAIL#<ip>#<window start, epoch seconds>", one item per IP and window, deleted by
// the table's TTL once the window is over. Windows are aligned to the epoch so every
// authorizer instance counts into the same item.
type DynamoFailures struct {
	DB     DynamoAPI
	Table  string
	Window time.Duration
}

// NewDynamoFailures counts in table with the window of rate.
func NewDynamoFailures(db DynamoAPI, table string, rate ratelimit.Rate) *DynamoFailures {
	return &DynamoFailures{DB: db, Table: table, Window: rate.Window}
}

func (d *DynamoFailures) key(ip string, now time.Time) (map[string]types.AttributeValue, time.Time) {
	start := now.UTC().Truncate(d.Window)
	pk := dynamo.FailurePrefix + ip + "#" + strconv.FormatInt(start.Unix(), 10)
	return map[string]types.AttributeValue{
		dynamo.Tokens.PartitionKey: &types.AttributeValueMemberS{Value: pk},
		dynamo.Tokens.SortKey:      &types.AttributeValueMemberS{Value: counterSK},
	}, start
}

// AddFailure adds one with ADD, which needs no read and no condition, and returns
// the new count. If the SDK retries after a lost response the failure may count
// twice: that only reports a prober sooner.
func (d *DynamoFailures) AddFailure(ctx context.Context, ip string, now time.Time) (int64, error) {
	k, start := d.key(ip, now)
	// Kept one window past its end so a clock skew between instances never reads a
	// counter that TTL already removed.
	expires := start.Add(2 * d.Window).Unix()
	out, err := d.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:        aws.String(d.Table),
		Key:              k,
		UpdateExpression: aws.String("ADD #c :one SET #ttl = :ttl"),
		ExpressionAttributeNames: map[string]string{
			"#c":   "failures",
			"#ttl": dynamo.Tokens.TTLAttribute,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":one": &types.AttributeValueMemberN{Value: "1"},
			":ttl": &types.AttributeValueMemberN{Value: strconv.FormatInt(expires, 10)},
		},
		ReturnValues: types.ReturnValueUpdatedNew,
	})
	if err != nil {
		return 0, fmt.Errorf("count failure: %w", err)
	}
	n, ok := out.Attributes["failures"].(*types.AttributeValueMemberN)
	if !ok {
		return 0, fmt.Errorf("count failure: no count in the answer")
	}
	v, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("failure counter holds %q", n.Value)
	}
	return v, nil
}
