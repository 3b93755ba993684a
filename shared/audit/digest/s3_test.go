package digest

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/audit/audittest"
	"github.com/aacworkflow/aacmcp/test/emulator"
)

type s3Env struct {
	client *s3.Client
	store  S3Store
	signer *FileSigner
	keys   FileKeys
	now    time.Time
	names  []string
	objs   []string
}

// newS3Env starts s3rver, puts three audit objects in a bucket (under a prefix, as a
// shared bucket would have them) and digests the hours after them.
func newS3Env(t *testing.T) *s3Env {
	t.Helper()
	t.Setenv("TMPDIR", t.TempDir()) // s3rver's folder, removed with the test
	srv := emulator.StartT(t, emulator.S3rver)
	cfg := srv.AWSConfig()
	client := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true })
	ctx := context.Background()
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("audit")}); err != nil {
		t.Fatalf("CreateBucket: %v\n%s", err, srv.Logs())
	}
	e := &s3Env{client: client, store: S3Store{Client: client, Bucket: "audit", Prefix: "prod/"}}
	ts := time.Now().UTC()
	for i := range 3 {
		// Firehose's objects are Parquet without an extension; JSON lines stand in
		// here with their extension (Summarize reads both; the hash is what counts).
		key := "audit/" + ts.Format("dt=2006-01-02/hour=15/") + "AuditDelivery-" + string(rune('a'+i)) + ".json"
		body := audit.AppendLine(nil, audittest.Record(ts.Add(time.Duration(i)*time.Second)))
		if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("audit"), Key: aws.String("prod/" + key), Body: bytes.NewReader(body)}); err != nil {
			t.Fatalf("PutObject: %v\n%s", err, srv.Logs())
		}
		e.objs = append(e.objs, key)
	}
	dir := t.TempDir()
	var err error
	if e.signer, err = LoadOrCreateFileSigner(dir); err != nil {
		t.Fatal(err)
	}
	if e.keys, err = DataFolderKeys(dir); err != nil {
		t.Fatal(err)
	}
	// Minute 50: the last hour's digest is written (minute 15) and due (Lag 30).
	e.now = time.Now().Add(3 * time.Hour).Truncate(time.Hour).Add(50 * time.Minute)
	w := &Writer{Store: e.store, Signer: e.signer, Now: func() time.Time { return e.now }, Grace: 15 * time.Minute, Log: slog.New(slog.DiscardHandler)}
	if e.names, err = w.WriteDue(ctx); err != nil || len(e.names) < 2 {
		t.Fatalf("WriteDue on S3: %v %v\n%s", e.names, err, srv.Logs())
	}
	return e
}

func (e *s3Env) verify(t *testing.T) *Report {
	t.Helper()
	v := &Verifier{Store: e.store, Keys: e.keys, Now: func() time.Time { return e.now }, Lag: 30 * time.Minute}
	rep, err := v.Verify(context.Background(), time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func (e *s3Env) put(t *testing.T, key string, body []byte) {
	t.Helper()
	if _, err := e.client.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("audit"), Key: aws.String(e.store.Prefix + key), Body: bytes.NewReader(body)}); err != nil {
		t.Fatal(err)
	}
}

func (e *s3Env) del(t *testing.T, key string) {
	t.Helper()
	if _, err := e.client.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String("audit"), Key: aws.String(e.store.Prefix + key)}); err != nil {
		t.Fatal(err)
	}
}

func (e *s3Env) get(t *testing.T, key string) []byte {
	t.Helper()
	b, err := e.store.Read(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestS3TamperingIsNamed(t *testing.T) {
	tests := []struct {
		name   string
		tamper func(t *testing.T, e *s3Env) (kind, path string)
	}{
		{"intact", func(*testing.T, *s3Env) (string, string) { return "", "" }},
		{"modified byte", func(t *testing.T, e *s3Env) (string, string) {
			b := e.get(t, e.objs[1])
			b[3] ^= 1
			e.put(t, e.objs[1], b)
			return ProblemModified, e.objs[1]
		}},
		{"deleted object", func(t *testing.T, e *s3Env) (string, string) {
			e.del(t, e.objs[0])
			return ProblemMissing, e.objs[0]
		}},
		{"added object", func(t *testing.T, e *s3Env) (string, string) {
			k := strings.Replace(e.objs[0], "AuditDelivery-a", "forged", 1)
			e.put(t, k, audit.AppendLine(nil, audittest.Record(time.Now())))
			return ProblemAdded, k
		}},
		{"chain broken", func(t *testing.T, e *s3Env) (string, string) {
			d, err := Decode(e.get(t, e.names[0]))
			if err != nil {
				t.Fatal(err)
			}
			d.Objects = d.Objects[1:] // drop an object and sign again, as a key holder could
			sig, _ := e.signer.Sign(context.Background(), SignedBytes(d))
			d.Signature = base64.StdEncoding.EncodeToString(sig)
			e.put(t, e.names[0], Encode(d))
			return ProblemChainBroken, e.names[1]
		}},
		{"bad signature", func(t *testing.T, e *s3Env) (string, string) {
			d, err := Decode(e.get(t, e.names[1]))
			if err != nil {
				t.Fatal(err)
			}
			d.WindowEnd = FormatTime(d.End().Add(-time.Second))
			e.put(t, e.names[1], Encode(d))
			return ProblemBadSignature, e.names[1]
		}},
		{"missing digest hour", func(t *testing.T, e *s3Env) (string, string) {
			last := e.names[len(e.names)-1]
			e.del(t, last)
			return ProblemMissingDigest, last[:strings.LastIndex(last, "/")+1]
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newS3Env(t)
			kind, path := tt.tamper(t, e)
			rep := e.verify(t)
			if kind == "" {
				if !rep.Intact() || rep.Objects != 3 || rep.Records != 3 {
					t.Fatalf("untouched bucket: %+v", rep)
				}
				return
			}
			if !slices.ContainsFunc(rep.Problems, func(p Problem) bool { return p.Kind == kind && p.Path == path }) {
				t.Fatalf("want %s %s among the problems, got %+v", kind, path, rep.Problems)
			}
		})
	}
}

// s3Past is a bucket whose digests end before now, as on a running stack between two
// runs of the digest function: what is put now comes after the last digest.
type s3Past struct {
	s3Env
	lastEnd time.Time // of the last digest
}

// newS3Past digests, under prefix in one bucket of srv, a chain of windows ending
// at the last hour that ended 15 minutes ago. It holds one genuine object, of an
// hour before the chain (put now, so after it too: not yet digested).
func newS3Past(t *testing.T, client *s3.Client, prefix string) *s3Past {
	t.Helper()
	ctx := context.Background()
	e := &s3Past{s3Env: s3Env{client: client, store: S3Store{Client: client, Bucket: "audit", Prefix: prefix}}}
	old := time.Now().UTC().Add(-5 * time.Hour)
	e.put(t, "audit/"+old.Format("dt=2006-01-02/hour=15/")+"AuditDelivery-old.json", forgedLine(old))
	dir := t.TempDir()
	var err error
	if e.signer, err = LoadOrCreateFileSigner(dir); err != nil {
		t.Fatal(err)
	}
	if e.keys, err = DataFolderKeys(dir); err != nil {
		t.Fatal(err)
	}
	names, err := e.writer(time.Now()).WriteDue(ctx)
	if err != nil || len(names) == 0 {
		t.Fatalf("WriteDue: %v %v", names, err)
	}
	d, err := Decode(e.get(t, names[len(names)-1]))
	if err != nil {
		t.Fatal(err)
	}
	e.lastEnd = d.End()
	return e
}

func (e *s3Past) writer(now time.Time) *Writer {
	return &Writer{Store: e.store, Signer: e.signer, Now: func() time.Time { return now }, Grace: 15 * time.Minute, Log: slog.New(slog.DiscardHandler)}
}

func (e *s3Past) verify(t *testing.T, now time.Time) *Report {
	t.Helper()
	return e.verifyDelivery(t, now, 15*time.Minute)
}

func (e *s3Past) verifyDelivery(t *testing.T, now time.Time, delivery time.Duration) *Report {
	t.Helper()
	v := &Verifier{Store: e.store, Keys: e.keys, Now: func() time.Time { return now }, Keyed: true, Delivery: delivery}
	rep, err := v.Verify(context.Background(), time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// forgedLine is one delete_issue success record at ts.
func forgedLine(ts time.Time) []byte {
	r := audittest.Record(ts)
	r.Tool, r.Outcome = "delete_issue", "success"
	return audit.AppendLine(nil, r)
}

// TestS3AfterTheLastDigest: on a bucket whose chain ended before now, each way of
// placing an object after the last digest is named, whatever its LastModified; a
// late object (a replay days on) and a Firehose error object are digested and
// checked like the rest.
func TestS3AfterTheLastDigest(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	srv := emulator.StartT(t, emulator.S3rver)
	client := s3.NewFromConfig(srv.AWSConfig(), func(o *s3.Options) { o.UsePathStyle = true })
	ctx := context.Background()
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("audit")}); err != nil {
		t.Fatalf("CreateBucket: %v\n%s", err, srv.Logs())
	}
	partition := func(ts time.Time) string { return ts.UTC().Format("audit/dt=2006-01-02/hour=15/") }
	tests := []struct {
		name   string
		tamper func(t *testing.T, e *s3Past) (kind, path string, now time.Time)
	}{
		{"intact", func(*testing.T, *s3Past) (string, string, time.Time) { return "", "", time.Now() }},
		{"every digest deleted", func(t *testing.T, e *s3Past) (string, string, time.Time) {
			names, err := e.store.Digests(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range names {
				if _, err := client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("audit"), Key: aws.String(e.store.Prefix + n)}); err != nil {
					t.Fatal(err)
				}
			}
			return ProblemNoDigests, Prefix, time.Now()
		}},
		{"forged object in a digested partition", func(t *testing.T, e *s3Past) (string, string, time.Time) {
			k := partition(e.lastEnd.Add(-30*time.Minute)) + "AuditDelivery-forged"
			e.put(t, k, forgedLine(e.lastEnd.Add(-30*time.Minute)))
			return ProblemAdded, k, time.Now()
		}},
		{"forged object holding records of digested time", func(t *testing.T, e *s3Past) (string, string, time.Time) {
			k := partition(e.lastEnd) + "AuditDelivery-forged.json"
			e.put(t, k, forgedLine(e.lastEnd.Add(-30*time.Minute)))
			return ProblemAdded, k, time.Now()
		}},
		{"LastModified after the verifier's clock", func(t *testing.T, e *s3Past) (string, string, time.Time) {
			// S3 sets LastModified itself; a verifier whose clock is 10 minutes behind
			// S3's sees the same thing as a local mtime set ahead.
			k := partition(e.lastEnd) + "AuditDelivery-new.json"
			e.put(t, k, forgedLine(e.lastEnd))
			return ProblemFutureTime, k, time.Now().Add(-10 * time.Minute)
		}},
		{"late object digested, then changed", func(t *testing.T, e *s3Past) (string, string, time.Time) {
			k := partition(time.Now().Add(-72*time.Hour)) + "AuditDelivery-replayed.json"
			e.put(t, k, forgedLine(time.Now().Add(-72*time.Hour)))
			later := e.lastEnd.Add(2*time.Hour + 20*time.Minute)
			if _, err := e.writer(later).WriteDue(ctx); err != nil {
				t.Fatal(err)
			}
			if rep := e.verify(t, later); !rep.Intact() || rep.Late != 1 {
				t.Fatalf("a late object, digested: %+v", rep)
			}
			e.put(t, k, forgedLine(time.Now().Add(-71*time.Hour)))
			return ProblemModified, k, later
		}},
		{"error object digested, then deleted", func(t *testing.T, e *s3Past) (string, string, time.Time) {
			k := "audit-errors/format-conversion-failed/" + strings.TrimPrefix(partition(time.Now()), "audit/") + "AuditDelivery-err"
			e.put(t, k, []byte(`{"rawData":"e30=","errorCode":"DataFormatConversion.MalformedData"}`+"\n"))
			later := e.lastEnd.Add(2*time.Hour + 20*time.Minute)
			if _, err := e.writer(later).WriteDue(ctx); err != nil {
				t.Fatal(err)
			}
			if rep := e.verify(t, later); !rep.Intact() || rep.Objects != 2 {
				t.Fatalf("an error object, digested: %+v", rep)
			}
			if _, err := client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("audit"), Key: aws.String(e.store.Prefix + k)}); err != nil {
				t.Fatal(err)
			}
			return ProblemMissing, k, later
		}},
	}
	t.Run("a delivery late by less than Delivery", func(t *testing.T) {
		// The same object as a forged one in a digested partition, seen by a verifier
		// that allows its hour's objects two hours to come: not yet digested.
		e := newS3Past(t, client, "late/")
		k := partition(e.lastEnd.Add(-30*time.Minute)) + "AuditDelivery-late.json"
		e.put(t, k, forgedLine(e.lastEnd.Add(-30*time.Minute)))
		if rep := e.verifyDelivery(t, time.Now(), 2*time.Hour); !rep.Intact() || rep.Pending != 2 {
			t.Fatalf("a late delivery: %+v", rep)
		}
	})
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newS3Past(t, client, fmt.Sprintf("p%d/", i))
			kind, path, now := tt.tamper(t, e)
			rep := e.verify(t, now)
			if kind == "" {
				if !rep.Intact() || rep.Pending != 1 {
					t.Fatalf("untouched bucket: %+v", rep)
				}
				return
			}
			if !slices.ContainsFunc(rep.Problems, func(p Problem) bool { return p.Kind == kind && p.Path == path }) {
				t.Fatalf("want %s %s among the problems, got %+v", kind, path, rep.Problems)
			}
		})
	}
}
