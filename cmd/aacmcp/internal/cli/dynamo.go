package cli

import (
	"context"
	"fmt"
	"net/url"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/aacworkflow/aacmcp/shared/store/dynamo"
)

// awsConfig loads the usual AWS configuration (environment, shared files, roles)
// with --region on top.
func (b *backendFlags) awsConfig(ctx context.Context) (aws.Config, error) {
	var opts []func(*config.LoadOptions) error
	if b.region != "" {
		opts = append(opts, config.WithRegion(b.region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("load the AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return aws.Config{}, usagef("no AWS region: pass --region or set AWS_REGION")
	}
	return cfg, nil
}

// dynamoClient is a DynamoDB client for the flags' region and endpoint.
func (b *backendFlags) dynamoClient(ctx context.Context) (*dynamodb.Client, error) {
	if b.endpointURL != "" {
		u, err := url.Parse(b.endpointURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, usagef("--endpoint-url %q: want an absolute http(s) URL", b.endpointURL)
		}
	}
	cfg, err := b.awsConfig(ctx)
	if err != nil {
		return nil, err
	}
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		if b.endpointURL != "" {
			o.BaseEndpoint = aws.String(b.endpointURL)
		}
	}), nil
}

func (b *backendFlags) openDynamo(ctx context.Context) (*dynamo.Store, error) {
	client, err := b.dynamoClient(ctx)
	if err != nil {
		return nil, err
	}
	return dynamo.New(client, b.table, b.tokensTable), nil
}
