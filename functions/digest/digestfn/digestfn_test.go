package digestfn

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/audit/audittest"
	"github.com/aacworkflow/aacmcp/shared/audit/digest"
	"github.com/aacworkflow/aacmcp/shared/audit/file"
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

// TestHandleStreamsLargeObjects: a 96 MiB Parquet object (Firehose's reach 128 MiB)
// on s3rver is digested with far less than its size allocated in the function, and
// its digest lists its exact size, hash and footer row count.
func TestHandleStreamsLargeObjects(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	// A real Parquet file, as compaction writes it, padded after its magic: the
	// footer is all a summary reads.
	dir := t.TempDir()
	sink, err := file.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Now().UTC()
	for i := range 3 {
		if err := sink.Write(context.Background(), audittest.Record(ts.Add(-time.Duration(i)*time.Second))); err != nil {
			t.Fatal(err)
		}
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := file.Compact(dir, ts.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	pqs, _ := filepath.Glob(filepath.Join(dir, "audit", "dt=*", "hour=*", "*.parquet"))
	if len(pqs) != 1 {
		t.Fatalf("parquet files: %v", pqs)
	}
	pq, err := os.ReadFile(pqs[0])
	if err != nil {
		t.Fatal(err)
	}
	const size = 96 << 20
	body := make([]byte, size)
	copy(body, pq[:4])
	copy(body[size-(len(pq)-4):], pq[4:])

	srv := emulator.StartT(t, emulator.S3rver)
	client := s3.NewFromConfig(srv.AWSConfig(), func(o *s3.Options) { o.UsePathStyle = true })
	ctx := context.Background()
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("audit")}); err != nil {
		t.Fatal(err)
	}
	key := "audit/" + ts.Format("dt=2006-01-02/hour=15/") + "AuditDelivery-big"
	if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("audit"), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(body)
	body = nil
	kmsSrv := kmsemu.Start(t)
	fn := New(client, kmsSrv.Client(), "audit", kmsSrv.CreateSigningKey(t), slog.New(slog.DiscardHandler))
	fn.Writer.Now = func() time.Time { return ts.Add(2 * time.Hour) }

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if err := fn.Handle(ctx, nil); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 40<<20 {
		t.Errorf("the function allocated %d MiB for a %d MiB object", alloc>>20, size>>20)
	}
	names, err := fn.Writer.Store.Digests(ctx)
	if err != nil || len(names) == 0 {
		t.Fatal(names, err)
	}
	b, _ := fn.Writer.Store.Read(ctx, names[0])
	d, err := digest.Decode(b)
	if err != nil || len(d.Objects) != 1 {
		t.Fatalf("first digest: %+v %v", d, err)
	}
	if o := d.Objects[0]; o.Path != key || o.Size != size || o.SHA256 != hex.EncodeToString(sum[:]) || o.Records != 3 {
		t.Errorf("listed %+v", o)
	}
}
