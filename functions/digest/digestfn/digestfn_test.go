package digestfn

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/audit/audittest"
	"github.com/aacworkflow/aacmcp/shared/audit/digest"
	"github.com/aacworkflow/aacmcp/test/emulator"
	"github.com/aacworkflow/aacmcp/test/kmsemu"
)

// TestHandleDigestsTheBucket: one scheduled invocation digests every ended hour of a
// bucket on s3rver, signing with a key on local-kms (both through the real SDK
// clients), and the result verifies with the public key from KMS.
func TestHandleDigestsTheBucket(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	srv := emulator.StartT(t, emulator.S3rver)
	client := s3.NewFromConfig(srv.AWSConfig(), func(o *s3.Options) { o.UsePathStyle = true })
	ctx := context.Background()
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("audit")}); err != nil {
		t.Fatal(err)
	}
	ts := time.Now().UTC()
	key := "audit/" + ts.Format("dt=2006-01-02/hour=15/") + "AuditDelivery-1.json"
	if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("audit"), Key: aws.String(key),
		Body: bytes.NewReader(audit.AppendLine(nil, audittest.Record(ts)))}); err != nil {
		t.Fatal(err)
	}
	kmsSrv := kmsemu.Start(t)
	kmsc := kmsSrv.Client()
	keyARN := kmsSrv.CreateSigningKey(t)
	fn := New(client, kmsc, "audit", keyARN, slog.New(slog.DiscardHandler))
	later := func() time.Time { return ts.Add(3 * time.Hour) }
	fn.Writer.Now = later
	dctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := fn.Handle(dctx, map[string]any{"source": "aws.events"}); err != nil {
		t.Fatal(err)
	}
	v := &digest.Verifier{Store: fn.Writer.Store, Keys: &digest.KMSKeys{Client: kmsc}, Now: later, Lag: 30 * time.Minute}
	rep, err := v.Verify(ctx, time.Time{}, time.Time{})
	if err != nil || !rep.Intact() || rep.Digests < 2 || rep.Objects != 1 || !slices.Equal(rep.KeyIDs, []string{keyARN}) {
		t.Fatalf("after one run: %+v %v", rep, err)
	}
	if _, _, err := FromEnv(ctx, func(string) string { return "" }, &bytes.Buffer{}); err == nil {
		t.Error("FromEnv without a bucket and key: no error")
	}
}
