// Command barelambdasdk is the cold-start floor of any function that talks to
// DynamoDB and Kinesis with the AWS SDK: barelambda's bare mcp-go handler, plus the
// two SDK clients functions/mcp cannot do without, built at start as a function
// builds them. The bench's section 3 sets functions/mcp against it to tell what this
// project's own code adds to a cold start from what the SDK's packages do (their
// initializers build the services' schemas and endpoint tables before main runs).
package main

import (
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"github.com/aacworkflow/aacmcp/bench/bare"
)

// Clients are kept where the linker cannot prove them unused.
var (
	DB     *dynamodb.Client
	Stream *kinesis.Client
)

func main() {
	cfg := aws.Config{
		Region: os.Getenv("AWS_REGION"),
		Credentials: credentials.NewStaticCredentialsProvider(os.Getenv("AWS_ACCESS_KEY_ID"),
			os.Getenv("AWS_SECRET_ACCESS_KEY"), os.Getenv("AWS_SESSION_TOKEN")),
	}
	DB, Stream = dynamodb.NewFromConfig(cfg), kinesis.NewFromConfig(cfg)
	lambda.Start(httpadapter.New(bare.New("", nil).Handler()).ProxyWithContext)
}
