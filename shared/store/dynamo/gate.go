package dynamo

import (
	"context"
	"errors"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/aacworkflow/aacmcp/shared/store"
)

// gatedAPI holds every write back until the context's write gate
// (store.WithWriteGate) has passed. It sits in front of the client, so no write
// method of the store can forget it: a handler that runs beside the guard's checks
// may read, but writes only once they have passed.
type gatedAPI struct{ API }

func (g gatedAPI) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if err := store.AwaitWriteGate(ctx); err != nil {
		return nil, err
	}
	return g.API.PutItem(ctx, in, optFns...)
}

func (g gatedAPI) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if err := store.AwaitWriteGate(ctx); err != nil {
		return nil, err
	}
	return g.API.UpdateItem(ctx, in, optFns...)
}

func (g gatedAPI) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	if err := store.AwaitWriteGate(ctx); err != nil {
		return nil, err
	}
	return g.API.DeleteItem(ctx, in, optFns...)
}

func (g gatedAPI) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	if err := store.AwaitWriteGate(ctx); err != nil {
		return nil, err
	}
	return g.API.BatchWriteItem(ctx, in, optFns...)
}

// Scan passes through to a client that can scan (ListWorkspaces); it is a read.
func (g gatedAPI) Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	sc, ok := g.API.(scanner)
	if !ok {
		return nil, errors.New("the DynamoDB client cannot scan")
	}
	return sc.Scan(ctx, in, optFns...)
}

// together runs independent DynamoDB calls at once and returns their errors in
// order: the method waits for one round trip instead of len(fs). Each f writes only
// its own results.
func together(fs ...func() error) []error {
	errs := make([]error, len(fs))
	var wg sync.WaitGroup
	for i, f := range fs[1:] {
		wg.Go(func() { errs[i+1] = f() })
	}
	errs[0] = fs[0]()
	wg.Wait()
	return errs
}
