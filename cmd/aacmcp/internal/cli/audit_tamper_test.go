package cli

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/audit/audittest"
	"github.com/aacworkflow/aacmcp/shared/audit/digest"
	"github.com/aacworkflow/aacmcp/shared/audit/digest/mototest"
	"github.com/aacworkflow/aacmcp/shared/audit/file"
	"github.com/aacworkflow/aacmcp/test/emulator"
)

// digestedFolder is a data folder with five records of this hour, compacted into one
// Parquet file and digested as a server leaves it three and a half hours on (the
// clock the verifier is run with, verifyAt): that hour and the empty ones after it.
func digestedFolder(t *testing.T) (dir, parquet string) {
	t.Helper()
	dir = t.TempDir()
	s, err := file.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := s.Write(context.Background(), audittest.Record(time.Now().Add(time.Duration(i-60)*time.Second))); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	signer, err := digest.LoadOrCreateFileSigner(dir)
	if err != nil {
		t.Fatal(err)
	}
	w := &digest.Writer{Store: digest.LocalStore{Dir: dir}, Signer: signer, Log: slog.New(slog.DiscardHandler),
		Now: func() time.Time { return later }, Grace: digestGrace}
	if _, err := w.WriteDue(context.Background()); err != nil {
		t.Fatal(err)
	}
	pqs, _ := filepath.Glob(filepath.Join(dir, "audit", "dt=*", "hour=*", "*.parquet"))
	if len(pqs) != 1 {
		t.Fatalf("want one Parquet file, got %v", pqs)
	}
	rel, _ := filepath.Rel(dir, pqs[0])
	return dir, filepath.ToSlash(rel)
}

// later is the clock of digestedFolder's writer and of verifyAt.
var later = time.Now().Add(3*time.Hour + 30*time.Minute)

// verifyAt runs the CLI with its clock at later.
func verifyAt(t *testing.T, args ...string) result {
	t.Helper()
	var out, errb syncBuffer
	code := Run(context.Background(), args, Env{Stdout: &out, Stderr: &errb,
		Getenv: func(string) string { return "" }, Now: func() time.Time { return later }})
	return result{stdout: out.String(), stderr: errb.String(), code: code}
}

// forgedRecord is a delete_issue success line at ts.
func forgedRecord(ts time.Time) []byte {
	r := audittest.Record(ts)
	r.Tool, r.Outcome = "delete_issue", "success"
	return audit.AppendLine(nil, r)
}

func putFile(t *testing.T, dir, rel string, b []byte, mtime time.Time) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, mtime, mtime); err != nil {
		t.Fatal(err)
	}
}

// TestAuditVerifyTamperingLocal: each way the review found of changing a data folder
// unseen makes audit verify exit 1, naming the file and the kind of problem.
func TestAuditVerifyTamperingLocal(t *testing.T) {
	tests := []struct {
		name   string
		tamper func(t *testing.T, dir, parquet string) (kind, path string)
	}{
		{"the audit-digest folder deleted", func(t *testing.T, dir, _ string) (string, string) {
			if err := os.RemoveAll(filepath.Join(dir, "audit-digest")); err != nil {
				t.Fatal(err)
			}
			return digest.ProblemNoDigests, digest.Prefix
		}},
		{"a forged file with a future mtime", func(t *testing.T, dir, parquet string) (string, string) {
			p := path2(parquet, "forged.json")
			putFile(t, dir, p, forgedRecord(time.Now()), time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
			return digest.ProblemFutureTime, p
		}},
		{"a forged file with a past mtime", func(t *testing.T, dir, parquet string) (string, string) {
			p := path2(parquet, "forged.json")
			putFile(t, dir, p, forgedRecord(time.Now()), time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC))
			return digest.ProblemAdded, p
		}},
		{"a forged file written after the last digest", func(t *testing.T, dir, parquet string) (string, string) {
			p := path2(parquet, "forged.json")
			putFile(t, dir, p, forgedRecord(time.Now()), later.Add(-time.Minute))
			return digest.ProblemAdded, p
		}},
		{"a forged file of a later hour with records of digested time", func(t *testing.T, dir, _ string) (string, string) {
			p := later.UTC().Format("audit/dt=2006-01-02/hour=15/") + "forged.json"
			putFile(t, dir, p, forgedRecord(time.Now().Add(-time.Minute)), later.Add(-time.Minute))
			return digest.ProblemAdded, p
		}},
		{"a copy of the compacted Parquet file", func(t *testing.T, dir, parquet string) (string, string) {
			b, err := os.ReadFile(filepath.Join(dir, parquet))
			if err != nil {
				t.Fatal(err)
			}
			p := path2(parquet, "copy.parquet")
			putFile(t, dir, p, b, later.Add(-time.Minute))
			return digest.ProblemAdded, p
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, parquet := digestedFolder(t)
			if r := verifyAt(t, "audit", "verify", "--data", dir); r.code != ExitOK {
				t.Fatalf("untouched: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			kind, p := tt.tamper(t, dir, parquet)
			r := verifyAt(t, "audit", "verify", "--data", dir)
			if r.code != ExitFailure || !problemLine(r.stdout, kind, p) {
				t.Fatalf("exit %d, want %d and a %s line for %s\n%s%s", r.code, ExitFailure, kind, p, r.stdout, r.stderr)
			}
		})
	}
}

// path2 is the path of name in the folder of p.
func path2(p, name string) string { return p[:strings.LastIndex(p, "/")+1] + name }

// problemLine reports whether the report's table has a row of kind for path.
func problemLine(out, kind, path string) bool {
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == kind && f[1] == path {
			return true
		}
	}
	return false
}

// TestAuditQueryVerified: a forged delete_issue row (future mtime, in a digested hour)
// is what audit query returns; with --verified it is not, and stderr says what was
// read.
func TestAuditQueryVerified(t *testing.T) {
	dir, parquet := digestedFolder(t)
	putFile(t, dir, path2(parquet, "forged.json"), forgedRecord(time.Now()), time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	q := []string{"audit", "query", "--data", dir, "--json", "--sql", "SELECT count(*) FILTER (WHERE tool = 'delete_issue') AS forged, count(*) AS n FROM audit_log"}
	type row struct {
		Forged int64 `json:"forged"`
		N      int64 `json:"n"`
	}
	if got := decodeJSON[[]row](t, mustRun(t, q...)); len(got) != 1 || got[0].Forged != 1 || got[0].N != 6 {
		t.Fatalf("audit query without --verified: %+v", got)
	}
	r := verifyAt(t, append(q, "--verified")...)
	if r.code != ExitOK {
		t.Fatalf("--verified: exit %d\n%s", r.code, r.stderr)
	}
	if got := decodeJSON[[]row](t, r.stdout); len(got) != 1 || got[0].Forged != 0 || got[0].N != 5 {
		t.Fatalf("audit query --verified: %+v", got)
	}
	if !strings.Contains(r.stderr, "--verified: 1 object a digest lists and that verify") || !strings.Contains(r.stderr, "1 problem") {
		t.Errorf("stderr = %q", r.stderr)
	}
}

// startAuditBucket starts s3rver with a bucket "audit", and points the AWS SDK the
// CLI loads at it, with nothing read from the developer's AWS configuration.
func startAuditBucket(t *testing.T) (*emulator.Server, *s3.Client) {
	t.Helper()
	t.Setenv("TMPDIR", t.TempDir())
	srv := emulator.StartT(t, emulator.S3rver)
	t.Setenv("AWS_ACCESS_KEY_ID", "S3RVER")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "S3RVER")
	t.Setenv("AWS_REGION", emulator.Region)
	t.Setenv("AWS_CONFIG_FILE", "/dev/null")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	client := s3.NewFromConfig(srv.AWSConfig(), func(o *s3.Options) { o.UsePathStyle = true })
	if _, err := client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String("audit")}); err != nil {
		t.Fatal(err)
	}
	return srv, client
}

// TestAuditVerifyTamperingS3: the same kinds through `audit verify --s3` on s3rver, on
// a bucket whose digests end before now (between two runs of the digest function).
func TestAuditVerifyTamperingS3(t *testing.T) {
	srv, client := startAuditBucket(t)
	ctx := context.Background()
	put := func(t *testing.T, key string, body []byte) {
		t.Helper()
		if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("audit"), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
	}
	partition := func(ts time.Time) string { return ts.UTC().Format("audit/dt=2006-01-02/hour=15/") }
	keyDir := t.TempDir()
	signer, err := digest.LoadOrCreateFileSigner(keyDir)
	if err != nil {
		t.Fatal(err)
	}
	pub := filepath.Join(keyDir, "pub.pem")
	if err := os.WriteFile(pub, signer.PublicKeyPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		tamper func(t *testing.T, prefix string, lastEnd time.Time) (kind, key string)
	}{
		{"every digest deleted", func(t *testing.T, prefix string, _ time.Time) (string, string) {
			store := digest.S3Store{Client: client, Bucket: "audit", Prefix: prefix}
			names, err := store.Digests(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range names {
				if _, err := client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("audit"), Key: aws.String(prefix + n)}); err != nil {
					t.Fatal(err)
				}
			}
			return digest.ProblemNoDigests, digest.Prefix
		}},
		{"a forged object in a digested partition", func(t *testing.T, prefix string, lastEnd time.Time) (string, string) {
			k := partition(lastEnd.Add(-30*time.Minute)) + "AuditDelivery-forged.json"
			put(t, prefix+k, forgedRecord(lastEnd.Add(-30*time.Minute)))
			return digest.ProblemAdded, k
		}},
		{"a forged object of a later hour with records of digested time", func(t *testing.T, prefix string, lastEnd time.Time) (string, string) {
			k := partition(lastEnd) + "AuditDelivery-forged.json"
			put(t, prefix+k, forgedRecord(lastEnd.Add(-30*time.Minute)))
			return digest.ProblemAdded, k
		}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prefix := fmt.Sprintf("p%d/", i)
			old := time.Now().Add(-5 * time.Hour)
			put(t, prefix+partition(old)+"AuditDelivery-old.json", audit.AppendLine(nil, audittest.Record(old)))
			w := &digest.Writer{Store: digest.S3Store{Client: client, Bucket: "audit", Prefix: prefix}, Signer: signer,
				Grace: 15 * time.Minute, Log: slog.New(slog.DiscardHandler)}
			names, err := w.WriteDue(ctx)
			if err != nil || len(names) == 0 {
				t.Fatalf("WriteDue: %v %v", names, err)
			}
			b, _ := w.Store.Read(ctx, names[len(names)-1])
			d, err := digest.Decode(b)
			if err != nil {
				t.Fatal(err)
			}
			args := []string{"audit", "verify", "--s3", "s3://audit/" + prefix, "--endpoint-url", srv.Endpoint, "--public-key", pub}
			if r := run(t, nil, args...); r.code != ExitOK {
				t.Fatalf("untouched: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			kind, key := tt.tamper(t, prefix, d.End())
			r := run(t, nil, args...)
			if r.code != ExitFailure || !problemLine(r.stdout, kind, key) {
				t.Fatalf("exit %d, want %d and a %s line for %s\n%s%s", r.code, ExitFailure, kind, key, r.stdout, r.stderr)
			}
		})
	}
}

// TestServeDoesNotRestartRemovedDigests: the audit-digest folder removed, a restart of
// the server writes no new chain over the log as it is then, so audit verify still
// exits 1 naming no_digests, and the server says why in its log.
func TestServeDoesNotRestartRemovedDigests(t *testing.T) {
	data := t.TempDir()
	s := startServe(t, data, "--dev")
	full, _ := devTokensOf(t, s.stdout.String())
	if code, body := callREST(t, s.base, full, "list_issues", `{}`); code != 200 {
		t.Fatalf("list_issues: %d %v", code, body)
	}
	if code := s.stop(t); code != ExitOK {
		t.Fatalf("serve exit %d\n%s", code, s.stderr)
	}
	mustRun(t, "audit", "verify", "--data", data)
	if err := os.RemoveAll(filepath.Join(data, "audit-digest")); err != nil {
		t.Fatal(err)
	}
	s = startServe(t, data, "--dev")
	if code := s.stop(t); code != ExitOK {
		t.Fatalf("second serve exit %d\n%s", code, s.stderr)
	}
	if !strings.Contains(s.stderr.String(), "no digest does") {
		t.Errorf("the server did not say why it wrote no digest:\n%s", s.stderr)
	}
	r := run(t, nil, "audit", "verify", "--data", data)
	if r.code != ExitFailure || !problemLine(r.stdout, digest.ProblemNoDigests, digest.Prefix) {
		t.Fatalf("verify after the digests were removed and the server restarted: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestAuditVerifyDigestDeletedS3: on a bucket with Object Lock (moto's S3 server, which
// keeps versions), the newest digest deleted and written again by the next run leaves
// a whole chain; audit verify --s3 exits 1 naming the digest from its kept version.
func TestAuditVerifyDigestDeletedS3(t *testing.T) {
	client, endpoint := mototest.StartEndpoint(t)
	t.Setenv("AWS_ACCESS_KEY_ID", mototest.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", mototest.SecretKey)
	t.Setenv("AWS_REGION", mototest.Region)
	t.Setenv("AWS_CONFIG_FILE", "/dev/null")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	ctx := context.Background()
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("audit"), ObjectLockEnabledForBucket: aws.Bool(true)}); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-5 * time.Hour)
	if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("audit"), Key: aws.String(old.UTC().Format("audit/dt=2006-01-02/hour=15/") + "AuditDelivery-1.json"),
		Body: bytes.NewReader(audit.AppendLine(nil, audittest.Record(old)))}); err != nil {
		t.Fatal(err)
	}
	keyDir := t.TempDir()
	signer, err := digest.LoadOrCreateFileSigner(keyDir)
	if err != nil {
		t.Fatal(err)
	}
	pub := filepath.Join(keyDir, "pub.pem")
	if err := os.WriteFile(pub, signer.PublicKeyPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	w := &digest.Writer{Store: digest.S3Store{Client: client, Bucket: "audit"}, Signer: signer, Grace: 15 * time.Minute, Log: slog.New(slog.DiscardHandler)}
	names, err := w.WriteDue(ctx)
	if err != nil || len(names) == 0 {
		t.Fatalf("WriteDue: %v %v", names, err)
	}
	args := []string{"audit", "verify", "--s3", "s3://audit", "--endpoint-url", endpoint, "--public-key", pub}
	if r := run(t, nil, args...); r.code != ExitOK || !strings.Contains(r.stdout, "digest versions: checked") {
		t.Fatalf("untouched: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	newest := names[len(names)-1]
	if _, err := client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("audit"), Key: aws.String(newest)}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteDue(ctx); err != nil {
		t.Fatal(err)
	}
	r := run(t, nil, args...)
	if r.code != ExitFailure || !problemLine(r.stdout, digest.ProblemDigestDeleted, newest) {
		t.Fatalf("exit %d, want %d and a %s line for %s\n%s%s", r.code, ExitFailure, digest.ProblemDigestDeleted, newest, r.stdout, r.stderr)
	}
}
