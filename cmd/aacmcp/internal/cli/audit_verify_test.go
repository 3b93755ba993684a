package cli

import (
	"bytes"
	"context"
	"encoding/base64"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/aacworkflow/aacmcp/functions/digest/digestfn"
	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/audit/audittest"
	"github.com/aacworkflow/aacmcp/shared/audit/digest"
	"github.com/aacworkflow/aacmcp/test/emulator"
	"github.com/aacworkflow/aacmcp/test/kmsemu"
)

// TestServeCleanStopDigestsTheOpenHour: records written by a running server are in a
// digest as soon as it stops cleanly, before their hour ends; verify then exits 0,
// and names a changed byte with exit 1.
func TestServeCleanStopDigestsTheOpenHour(t *testing.T) {
	data := t.TempDir()
	s := startServe(t, data, "--dev")
	full, _ := devTokensOf(t, s.stdout.String())
	if code, body := callREST(t, s.base, full, "list_issues", `{}`); code != 200 {
		t.Fatalf("list_issues: %d %v", code, body)
	}
	if code := s.stop(t); code != ExitOK {
		t.Fatalf("serve exit %d\n%s", code, s.stderr)
	}

	r := run(t, nil, "audit", "verify", "--data", data)
	if r.code != ExitOK || !strings.Contains(r.stdout, "audit log intact") || !strings.Contains(r.stdout, "(1 records)") {
		t.Fatalf("verify after a clean stop: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	rep := decodeJSON[digest.Report](t, mustRun(t, "audit", "verify", "--data", data, "--json"))
	if rep.Pending != 0 || rep.Records != 1 {
		t.Errorf("records left outside a digest by a clean stop: %+v", rep)
	}

	objs, _ := filepath.Glob(filepath.Join(data, "audit", "dt=*", "hour=*", "*.parquet"))
	if len(objs) != 1 {
		t.Fatalf("want the stopped hour compacted into one Parquet file, got %v", objs)
	}
	b, _ := os.ReadFile(objs[0])
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(objs[0], b, 0o600); err != nil {
		t.Fatal(err)
	}
	r = run(t, nil, "audit", "verify", "--data", data)
	rel, _ := filepath.Rel(data, objs[0])
	if r.code != ExitFailure || !strings.Contains(r.stdout, "modified") || !strings.Contains(r.stdout, rel) {
		t.Fatalf("verify of a changed byte: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "not intact: 1 problem") {
		t.Errorf("stderr = %q", r.stderr)
	}
}

func TestAuditVerifyUsage(t *testing.T) {
	const arn = "arn:aws:kms:us-east-1:111122223333:key/k"
	tests := []struct {
		args []string
		want string // in stderr
	}{
		{[]string{"--s3", "http://bucket"}, "want s3://bucket[/prefix]"},
		{[]string{"--from", "yesterday"}, "--from: want RFC 3339"},
		{[]string{"--endpoint-url", "http://127.0.0.1:1"}, "go with --s3"},
		{[]string{"--s3", "s3://b", "--data", "x"}, "give --data or --s3, not both"},
		{[]string{"--kms-key", arn}, "go with --s3"},
		{[]string{"--s3", "s3://b", "--kms-key", arn, "--public-key", "k.pem"}, "give --public-key or --kms-key, not both"},
	}
	for _, tt := range tests {
		r := run(t, nil, append([]string{"audit", "verify"}, tt.args...)...)
		if r.code != ExitUsage || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("%v: exit %d, want %d and %q\n%s", tt.args, r.code, ExitUsage, tt.want, r.stderr)
		}
	}
}

// TestAuditVerifyS3 verifies a bucket on s3rver through the CLI: intact, then with an
// object removed.
func TestAuditVerifyS3(t *testing.T) {
	srv, client := startAuditBucket(t)
	ctx := context.Background()
	ts := time.Now().UTC()
	key := "audit/" + ts.Format("dt=2006-01-02/hour=15/") + "AuditDelivery-1.json"
	if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("audit"), Key: aws.String(key),
		Body: bytes.NewReader(audit.AppendLine(nil, audittest.Record(ts)))}); err != nil {
		t.Fatal(err)
	}
	keyDir := t.TempDir()
	signer, err := digest.LoadOrCreateFileSigner(keyDir)
	if err != nil {
		t.Fatal(err)
	}
	w := &digest.Writer{Store: digest.S3Store{Client: client, Bucket: "audit"}, Signer: signer,
		Now: func() time.Time { return ts.Add(2 * time.Hour) }, Grace: 15 * time.Minute, Log: slog.New(slog.DiscardHandler)}
	if _, err := w.WriteDue(ctx); err != nil {
		t.Fatal(err)
	}
	pub := filepath.Join(keyDir, "pub.pem")
	if err := os.WriteFile(pub, signer.PublicKeyPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"audit", "verify", "--s3", "s3://audit", "--endpoint-url", srv.Endpoint, "--public-key", pub, "--to", ts.Add(time.Hour).Truncate(time.Hour).Format(time.RFC3339)}
	if r := run(t, nil, args...); r.code != ExitOK || !strings.Contains(r.stdout, "audit log intact: s3://audit/") {
		t.Fatalf("verify --s3: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("audit"), Key: aws.String(key)}); err != nil {
		t.Fatal(err)
	}
	r := run(t, nil, args...)
	if r.code != ExitFailure || !strings.Contains(r.stdout, "missing") || !strings.Contains(r.stdout, key) {
		t.Fatalf("verify --s3 of a deleted object: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestAuditVerifyS3WithKMS runs the deployed path end to end on emulators: the digest
// function's handler digests a bucket on s3rver, signing with a key on local-kms, and
// `audit verify --s3` (its KMS endpoint from AWS_ENDPOINT_URL_KMS, as the SDK reads
// it) fetches that key's public key with GetPublicKey. Intact it exits 0; once one
// digest is re-signed with another KMS key, 1, naming the digest's bad signature; and
// with --kms-key, 1 too for a digest that names another key and is signed by it.
func TestAuditVerifyS3WithKMS(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	srv := emulator.StartT(t, emulator.S3rver)
	kmsSrv := kmsemu.Start(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "S3RVER")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "S3RVER")
	t.Setenv("AWS_REGION", emulator.Region)
	t.Setenv("AWS_CONFIG_FILE", "/dev/null")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_ENDPOINT_URL_KMS", kmsSrv.Endpoint)
	ctx := context.Background()
	client := s3.NewFromConfig(srv.AWSConfig(), func(o *s3.Options) { o.UsePathStyle = true })
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("audit")}); err != nil {
		t.Fatal(err)
	}
	ts := time.Now().UTC()
	key := "audit/" + ts.Format("dt=2006-01-02/hour=15/") + "AuditDelivery-1.json"
	if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("audit"), Key: aws.String(key),
		Body: bytes.NewReader(audit.AppendLine(nil, audittest.Record(ts)))}); err != nil {
		t.Fatal(err)
	}

	kmsc := kmsSrv.Client()
	keyARN := kmsSrv.CreateSigningKey(t)
	fn := digestfn.New(client, kmsc, "audit", keyARN, slog.New(slog.DiscardHandler))
	// Minute 50, two hours on: the object's hour and the next are digested (minute 15)
	// and verify expects both (75 minutes).
	now := ts.Truncate(time.Hour).Add(2*time.Hour + 50*time.Minute)
	fn.Writer.Now = func() time.Time { return now }
	if err := fn.Handle(ctx, map[string]any{"source": "aws.events"}); err != nil {
		t.Fatal(err)
	}
	names, err := fn.Writer.Store.Digests(ctx)
	if err != nil || len(names) != 2 {
		t.Fatalf("digests written: %v %v", names, err)
	}

	verify := func(extra ...string) (result, digest.Report) {
		t.Helper()
		var out, errb syncBuffer
		args := append([]string{"audit", "verify", "--s3", "s3://audit", "--endpoint-url", srv.Endpoint, "--json"}, extra...)
		code := Run(ctx, args,
			Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }, Now: func() time.Time { return now }})
		r := result{stdout: out.String(), stderr: errb.String(), code: code}
		return r, decodeJSON[digest.Report](t, r.stdout)
	}
	for _, pin := range [][]string{nil, {"--kms-key", keyARN}} {
		if r, rep := verify(pin...); r.code != ExitOK || !rep.Intact() || rep.Digests != 2 || rep.Objects != 1 || !slices.Equal(rep.KeyIDs, []string{keyARN}) {
			t.Fatalf("verify --s3 with KMS %v: exit %d %+v\n%s", pin, r.code, rep, r.stderr)
		}
	}

	other := &digest.KMSSigner{Client: kmsc, KeyARN: kmsSrv.CreateSigningKey(t)}
	// resign replaces a digest with change(digest) signed by other.
	resign := func(name string, change func(*digest.Digest)) {
		t.Helper()
		b, err := fn.Writer.Store.Read(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		d, err := digest.Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		change(d)
		sig, err := other.Sign(ctx, digest.SignedBytes(d))
		if err != nil {
			t.Fatal(err)
		}
		d.Signature = base64.StdEncoding.EncodeToString(sig)
		if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("audit"), Key: aws.String(name),
			Body: bytes.NewReader(digest.Encode(d))}); err != nil {
			t.Fatal(err)
		}
	}
	badSignature := func(rep digest.Report, name string) bool {
		return slices.ContainsFunc(rep.Problems, func(p digest.Problem) bool {
			return p.Kind == digest.ProblemBadSignature && p.Path == name
		})
	}

	// The newest digest, naming the other key and signed by it: only a pin tells.
	resign(names[1], func(d *digest.Digest) { d.KeyID = other.KeyARN })
	if r, rep := verify(); r.code != ExitOK {
		t.Fatalf("unpinned verify of a digest signed by another key it names: exit %d %+v (the documented limit changed? update docs/security.md)", r.code, rep)
	}
	if r, rep := verify("--kms-key", keyARN); r.code != ExitFailure || !badSignature(rep, names[1]) {
		t.Fatalf("pinned verify of a digest signed by another key it names: exit %d %+v\n%s", r.code, rep, r.stderr)
	}

	// The first digest, same content and key id, signed by the other key.
	resign(names[0], func(*digest.Digest) {})
	if r, rep := verify(); r.code != ExitFailure || !badSignature(rep, names[0]) {
		t.Fatalf("verify --s3 of a digest re-signed with another key: exit %d %+v\n%s", r.code, rep, r.stderr)
	}
}
