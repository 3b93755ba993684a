package digestfn

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	kmstypes "github.com/aws/aws-sdk-go-v2/service/kms/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/audit/audittest"
	"github.com/aacworkflow/aacmcp/shared/audit/digest"
	"github.com/aacworkflow/aacmcp/test/emulator"
)

// p256Key answers KMS's Sign and GetPublicKey for one ECC_NIST_P256 key (no KMS
// emulator exists; shared/audit/digest's tests check the requests themselves).
type p256Key struct {
	arn string
	key *ecdsa.PrivateKey
}

func (k *p256Key) Sign(_ context.Context, in *kms.SignInput, _ ...func(*kms.Options)) (*kms.SignOutput, error) {
	sig, err := ecdsa.SignASN1(rand.Reader, k.key, in.Message)
	return &kms.SignOutput{KeyId: in.KeyId, Signature: sig, SigningAlgorithm: in.SigningAlgorithm}, err
}

func (k *p256Key) GetPublicKey(_ context.Context, in *kms.GetPublicKeyInput, _ ...func(*kms.Options)) (*kms.GetPublicKeyOutput, error) {
	der, err := x509.MarshalPKIXPublicKey(&k.key.PublicKey)
	return &kms.GetPublicKeyOutput{KeyId: in.KeyId, PublicKey: der, KeyUsage: kmstypes.KeyUsageTypeSignVerify,
		SigningAlgorithms: []kmstypes.SigningAlgorithmSpec{kmstypes.SigningAlgorithmSpecEcdsaSha256}}, err
}

// TestHandleDigestsTheBucket: one scheduled invocation digests every ended hour of a
// bucket on s3rver (through the real S3 client), and the result verifies.
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
	pk, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k := &p256Key{arn: "arn:aws:kms:us-east-1:111122223333:key/test", key: pk}
	fn := New(client, k, "audit", k.arn, slog.New(slog.DiscardHandler))
	later := func() time.Time { return ts.Add(3 * time.Hour) }
	fn.Writer.Now = later
	dctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := fn.Handle(dctx, map[string]any{"source": "aws.events"}); err != nil {
		t.Fatal(err)
	}
	v := &digest.Verifier{Store: fn.Writer.Store, Keys: &digest.KMSKeys{Client: k}, Now: later, Lag: 30 * time.Minute}
	rep, err := v.Verify(ctx, time.Time{}, time.Time{})
	if err != nil || !rep.Intact() || rep.Digests < 2 || rep.Objects != 1 {
		t.Fatalf("after one run: %+v %v", rep, err)
	}
	if _, _, err := FromEnv(ctx, func(string) string { return "" }, &bytes.Buffer{}); err == nil {
		t.Error("FromEnv without a bucket and key: no error")
	}
}
