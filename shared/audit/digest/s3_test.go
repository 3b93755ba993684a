package digest

import (
	"bytes"
	"context"
	"encoding/base64"
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
	if _, err := e.client.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("audit"), Key: aws.String("prod/" + key), Body: bytes.NewReader(body)}); err != nil {
		t.Fatal(err)
	}
}

func (e *s3Env) del(t *testing.T, key string) {
	t.Helper()
	if _, err := e.client.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String("audit"), Key: aws.String("prod/" + key)}); err != nil {
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
