// Package digestfn is the Lambda function that EventBridge invokes 15 minutes past
// every hour: it writes, signed with the stack's KMS key, a digest for every hour of
// the audit bucket that has ended and has none yet (shared/audit/digest). Missed
// runs are caught up by the next one, so an outage leaves no hour undigested.
package digestfn

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/aacworkflow/aacmcp/shared/audit/digest"
	"github.com/aacworkflow/aacmcp/shared/lambdaenv"
)

// FunctionName names the function in its logs.
const FunctionName = "digest"

// Environment of the function.
const (
	EnvAuditBucket  = "AACMCP_AUDIT_BUCKET"
	EnvDigestKeyARN = "AACMCP_DIGEST_KEY_ARN"
)

// Grace is how long after an hour ends its digest is written: Firehose delivers up
// to 1.5 times its 300 s buffer interval late with dynamic partitioning; the schedule
// (minute 15) matches it.
const Grace = 15 * time.Minute

// deadlineMargin is kept back from the Lambda deadline to log and return.
const deadlineMargin = 5 * time.Second

// Function is the handler and what it holds across invocations.
type Function struct {
	Writer *digest.Writer
	Log    *slog.Logger
}

// FromEnv builds the function from its environment. The logger is usable even when
// err is set, so main can report the failure.
func FromEnv(ctx context.Context, getenv func(string) string, stdout io.Writer) (*Function, *slog.Logger, error) {
	log := lambdaenv.NewLogger(stdout, slog.LevelInfo, FunctionName)
	bucket, keyARN := getenv(EnvAuditBucket), getenv(EnvDigestKeyARN)
	if bucket == "" || keyARN == "" {
		return nil, log, errors.New(EnvAuditBucket + " and " + EnvDigestKeyARN + " must be set")
	}
	cfg, err := lambdaenv.AWSConfig()
	if err != nil {
		return nil, log, err
	}
	return New(s3.NewFromConfig(cfg), kms.NewFromConfig(cfg), bucket, keyARN, log), log, nil
}

// New is the function over an S3 client and a KMS client.
func New(s3c *s3.Client, kmsc digest.KMSAPI, bucket, keyARN string, log *slog.Logger) *Function {
	return &Function{
		Writer: &digest.Writer{
			Store:  digest.S3Store{Client: s3c, Bucket: bucket},
			Signer: &digest.KMSSigner{Client: kmsc, KeyARN: keyARN},
			Grace:  Grace,
			Log:    log,
		},
		Log: log,
	}
}

// Handle writes the due digests. The event (EventBridge's scheduled event) carries
// nothing the function needs: what is due follows from the last digest and the clock.
// An error makes the invocation fail, so the Errors metric alarms; the digests
// written before it stay, and the next run continues the chain from them.
func (f *Function) Handle(ctx context.Context, _ any) error {
	if d, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-deadlineMargin))
		defer cancel()
	}
	names, err := f.Writer.WriteDue(ctx)
	if err != nil {
		f.Log.Error("audit digests not written", "err", err, "written", len(names))
		return err
	}
	f.Log.Info("audit digests written", "digests", len(names))
	return nil
}
