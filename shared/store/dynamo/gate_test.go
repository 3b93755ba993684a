package dynamo

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/aacworkflow/aacmcp/shared/store"
)

// countingAPI counts the calls that reach the client.
type countingAPI struct {
	API
	reads, writes int
}

func (c *countingAPI) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c.reads++
	return &dynamodb.GetItemOutput{}, nil
}

func (c *countingAPI) PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	c.writes++
	return &dynamodb.PutItemOutput{}, nil
}

func (c *countingAPI) UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c.writes++
	return &dynamodb.UpdateItemOutput{}, nil
}

func (c *countingAPI) DeleteItem(context.Context, *dynamodb.DeleteItemInput, ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	c.writes++
	return &dynamodb.DeleteItemOutput{}, nil
}

func (c *countingAPI) BatchWriteItem(context.Context, *dynamodb.BatchWriteItemInput, ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	c.writes++
	return &dynamodb.BatchWriteItemOutput{}, nil
}

// TestGatedAPIHoldsWrites: behind a refusing write gate no write reaches DynamoDB and
// each fails with the gate's error; reads pass; without a gate, or once it passes,
// writes go through.
func TestGatedAPIHoldsWrites(t *testing.T) {
	refused := errors.New("refused")
	for _, tc := range []struct {
		name       string
		ctx        context.Context
		wantWrites int
		wantErr    error
	}{
		{"no gate", context.Background(), 4, nil},
		{"gate passes", store.WithWriteGate(context.Background(), func() error { return nil }), 4, nil},
		{"gate refuses", store.WithWriteGate(context.Background(), func() error { return refused }), 0, refused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &countingAPI{}
			g := gatedAPI{c}
			if _, err := g.GetItem(tc.ctx, &dynamodb.GetItemInput{}); err != nil {
				t.Fatal(err)
			}
			_, e1 := g.PutItem(tc.ctx, &dynamodb.PutItemInput{})
			_, e2 := g.UpdateItem(tc.ctx, &dynamodb.UpdateItemInput{})
			_, e3 := g.DeleteItem(tc.ctx, &dynamodb.DeleteItemInput{})
			_, e4 := g.BatchWriteItem(tc.ctx, &dynamodb.BatchWriteItemInput{})
			for _, err := range []error{e1, e2, e3, e4} {
				if !errors.Is(err, tc.wantErr) {
					t.Errorf("write error %v, want %v", err, tc.wantErr)
				}
			}
			if c.reads != 1 || c.writes != tc.wantWrites {
				t.Errorf("reads %d writes %d, want 1 and %d", c.reads, c.writes, tc.wantWrites)
			}
		})
	}
}
