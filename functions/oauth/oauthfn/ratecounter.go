package oauthfn

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/oauth"
	"github.com/aacworkflow/aacmcp/shared/store/dynamo"
)

// registrationCounter counts the authorization server's own rate-limited attempts
// (registrations per source IP, which belong to no workspace) in the main table
// under the OAUTH# prefix, the only one this function's role may write: the store's
// UpdateRateCounter keys its counters by workspace (WS#..., read-only here).
//
//	PK OAUTH#RATE#<window start, Unix s>#<key>   SK RATE   count (N)   ttl
//
// One ADD per attempt; the window start is part of the key, so a new window starts
// at zero and TTL removes old ones a minute after they end.
type registrationCounter struct {
	db    updater
	table string
}

type updater interface {
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
}

var _ oauth.RateCounter = registrationCounter{}

// ratePKPrefix starts the partition key of a counter item.
const ratePKPrefix = dynamo.OAuthPrefix + "RATE#"

// maxCounterKey bounds the key (an IP address with the server's prefix).
const maxCounterKey = 512

func (c registrationCounter) UpdateRateCounter(ctx context.Context, ws, key string, windowStart time.Time, window time.Duration) (int64, error) {
	if ws != "" || key == "" || len(key) > maxCounterKey || window <= 0 {
		return 0, apperr.New(apperr.InvalidArguments, "the authorization server's counters belong to no workspace and need a key and a window")
	}
	out, err := c.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(c.table),
		Key: map[string]types.AttributeValue{
			dynamo.Main.PartitionKey: &types.AttributeValueMemberS{Value: ratePKPrefix + strconv.FormatInt(windowStart.Unix(), 10) + "#" + key},
			dynamo.Main.SortKey:      &types.AttributeValueMemberS{Value: "RATE"},
		},
		UpdateExpression:         aws.String("ADD #count :one SET #ttl = if_not_exists(#ttl, :ttl)"),
		ExpressionAttributeNames: map[string]string{"#count": "count", "#ttl": dynamo.Main.TTLAttribute},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":one": &types.AttributeValueMemberN{Value: "1"},
			":ttl": &types.AttributeValueMemberN{Value: strconv.FormatInt(windowStart.Add(window).Add(time.Minute).Unix(), 10)},
		},
		ReturnValues: types.ReturnValueUpdatedNew,
	})
	if err != nil {
		return 0, apperr.Internal(err)
	}
	n, ok := out.Attributes["count"].(*types.AttributeValueMemberN)
	if !ok {
		return 0, apperr.Internal(errors.New("oauthfn: the counter update returned no count"))
	}
	v, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		return 0, apperr.Internal(err)
	}
	return v, nil
}
