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

// FailureCounter counts rejected tokens per source IP in fixed windows.
type FailureCounter interface {
	// Failures returns the failures of ip in the window containing now.
	Failures(ctx context.Context, ip string, now time.Time) (int64, error)
	// AddFailure counts one more failure of ip in the window containing now.
	AddFailure(ctx context.Context, ip string, now time.Time) error
}

// DynamoAPI is the part of *dynamodb.Client the counter uses: the two calls the
// authorizer's IAM role allows on its own counter items.
type DynamoAPI interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
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

// Failures reads the window's counter (0 when there is none). An eventually
// consistent read is enough: a limit that bites a few requests late is still a limit.
func (d *DynamoFailures) Failures(ctx context.Context, ip string, now time.Time) (int64, error) {
	k, _ := d.key(ip, now)
	out, err := d.DB.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:            aws.String(d.Table),
		Key:                  k,
		ProjectionExpression: aws.String("#c"),
		ExpressionAttributeNames: map[string]string{
			"#c": "failures",
		},
	})
	if err != nil {
		return 0, fmt.Errorf("read failure counter: %w", err)
	}
	n, ok := out.Item["failures"].(*types.AttributeValueMemberN)
	if !ok {
		return 0, nil
	}
	v, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("failure counter holds %q", n.Value)
	}
	return v, nil
}

// AddFailure adds one with ADD, which needs no read and no condition. If the SDK
// retries after a lost response the failure may count twice: that errs towards
// refusing a prober sooner, never towards letting one through.
func (d *DynamoFailures) AddFailure(ctx context.Context, ip string, now time.Time) error {
	k, start := d.key(ip, now)
	// Kept one window past its end so a clock skew between instances never reads a
	// counter that TTL already removed.
	expires := start.Add(2 * d.Window).Unix()
	_, err := d.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
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
	})
	if err != nil {
		return fmt.Errorf("count failure: %w", err)
	}
	return nil
}
