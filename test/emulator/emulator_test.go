package emulator

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
)

func TestDynaliteAnswersTheSDK(t *testing.T) {
	s := StartT(t, Dynalite)
	c := dynamodb.NewFromConfig(s.AWSConfig())
	out, err := c.ListTables(context.Background(), &dynamodb.ListTablesInput{})
	if err != nil {
		t.Fatalf("ListTables: %v\n%s", err, s.Logs())
	}
	if len(out.TableNames) != 0 {
		t.Fatalf("fresh dynalite has tables %v", out.TableNames)
	}
}

func TestKinesaliteAnswersTheSDKAndStops(t *testing.T) {
	s := StartT(t, Kinesalite)
	c := kinesis.NewFromConfig(s.AWSConfig())
	ctx := context.Background()
	if _, err := c.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String("s"), ShardCount: aws.Int32(1)}); err != nil {
		t.Fatalf("CreateStream: %v\n%s", err, s.Logs())
	}
	s.Stop()
	// After Stop nothing listens on the endpoint any more: tests rely on that to
	// simulate an outage.
	hc := &http.Client{Timeout: 2 * time.Second}
	resp, err := hc.Get(s.Endpoint)
	if err == nil {
		resp.Body.Close()
		t.Fatal("endpoint still answers after Stop")
	}
}
