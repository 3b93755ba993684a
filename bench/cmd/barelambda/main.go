// Command barelambda is the cold-start reference: the bare mcp-go peer (with no
// issues) behind the same API Gateway REST proxy adapter as functions/mcp. Built like
// a deployed function (bootstrap, CGO off, lambda.norpc, stripped).
package main

import (
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"github.com/aacworkflow/aacmcp/bench/bare"
)

func main() {
	lambda.Start(httpadapter.New(bare.New("", nil).Handler()).ProxyWithContext)
}
