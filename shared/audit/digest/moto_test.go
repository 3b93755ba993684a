package digest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/aacworkflow/aacmcp/shared/audit/digest/mototest"
)

// TestS3DigestHistory: on a bucket with Object Lock (so versioning), deleting the
// newest digest and letting the digest function write its window again (with whatever
// the objects then hold) leaves a chain that verifies, and the deleted digest's kept
// version and delete marker, which verify names as digest_deleted. An overwrite of a
// digest is named the same way.
func TestS3DigestHistory(t *testing.T) {
	client := mototest.Start(t)
	ctx := context.Background()
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("audit"), ObjectLockEnabledForBucket: aws.Bool(true)}); err != nil {
		t.Fatal(err)
	}
	e := newS3Past(t, client, "")
	rep := e.verify(t, time.Now())
	if !rep.Intact() || rep.Versions != "checked" {
		t.Fatalf("untouched: %+v", rep)
	}
	names, err := e.store.Digests(ctx)
	if err != nil || len(names) == 0 {
		t.Fatal(names, err)
	}
	newest := names[len(names)-1]
	if _, err := client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("audit"), Key: aws.String(newest)}); err != nil {
		t.Fatal(err)
	}
	// The next run writes the window again: the chain is whole once more.
	if _, err := e.writer(time.Now()).WriteDue(ctx); err != nil {
		t.Fatal(err)
	}
	rep = e.verify(t, time.Now())
	if len(rep.Problems) != 2 || !slices.ContainsFunc(rep.Problems, func(p Problem) bool { return p.Kind == ProblemDigestDeleted && p.Path == newest }) {
		t.Fatalf("after the newest digest was deleted and written again: %+v", rep.Problems)
	}
	for _, p := range rep.Problems {
		if p.Kind != ProblemDigestDeleted || p.Path != newest {
			t.Errorf("unexpected %+v", p)
		}
	}

	// Outside the range checked (--from after it), a deleted digest is not named: past
	// the retention, lifecycle expiration deletes digests itself.
	v := &Verifier{Store: e.store, Keys: e.keys, Keyed: true, Delivery: 15 * time.Minute}
	if rep, err := v.Verify(ctx, time.Now().Add(time.Hour), time.Time{}); err != nil || slices.ContainsFunc(rep.Problems, func(p Problem) bool { return p.Kind == ProblemDigestDeleted }) {
		t.Fatalf("verify from after the deleted digest: %+v %v", rep, err)
	}

	// The first digest put again, byte for byte: its earlier version is kept.
	e.put(t, names[0], e.get(t, names[0]))
	rep = e.verify(t, time.Now())
	if !slices.ContainsFunc(rep.Problems, func(p Problem) bool { return p.Kind == ProblemDigestDeleted && p.Path == names[0] }) {
		t.Fatalf("after a digest was overwritten: %+v", rep.Problems)
	}
}
