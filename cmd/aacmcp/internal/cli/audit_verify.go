package cli

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/aacworkflow/aacmcp/functions/digest/digestfn"
	"github.com/aacworkflow/aacmcp/shared/audit/digest"
	"github.com/aacworkflow/aacmcp/shared/audit/query"
)

// s3DigestLag is how long after an hour ends `audit verify --s3` expects its digest:
// the scheduled function runs 15 minutes past each hour, and an invocation that fails
// is retried by EventBridge; an hour later than that it is missing.
const s3DigestLag = 75 * time.Minute

// progressMin is the number of objects from which a terminal gets a progress bar.
const progressMin = 50

func newAuditVerifyCmd(g *globals) *cobra.Command {
	var (
		s3URL, from, to, region, endpoint, pubKey string
		kmsKeys                                   []string
		asJSON                                    bool
	)
	c := &cobra.Command{
		Use:   "verify [--data DIR | --s3 s3://bucket[/prefix]] [--from T] [--to T] [--json]",
		Short: "Prove that the audit log is as its signed digests describe it",
		Long: `Check the audit log against its digests: every object a digest lists must be there with
the same SHA-256 and size; an object no digest lists is an error when its modification
time, its partition's hour or any of its records' timestamps lies inside digested time,
and any object last written in the future is one; objects, or a signing key, without a
single digest are an error; each digest must name its predecessor's path, hash and
signature, each signature must verify, and no hour between the first digest and the
last may lack one (with --s3, no hour that ended more than 75 minutes ago either).
Objects under audit-errors/ (Firehose's conversion failures) are digested and checked
like the rest. With --s3 on a versioned bucket, a delete marker or an older version
under audit-digest/ (a digest deleted or replaced: the digest function does neither) is
an error too, even once its window was written again.

Exit status 0 and a summary when the log is intact; 1 and one line per problem, by file,
when it is not. Public keys come from <data>/audit-digest-keys/ (local digests are
signed with <data>/audit-digest.key), from KMS GetPublicKey for digests that name a
KMS key (--s3; --kms-key pins the stack's AuditDigestKey, which you should: without
it any signing key you may read is accepted), or only from --public-key, which pins
the key you kept elsewhere.
--from and --to (RFC 3339) bound the digests checked. --endpoint-url is for S3 only;
the AWS SDK reads a KMS endpoint from AWS_ENDPOINT_URL_KMS.`,
		Example: `  aacmcp audit verify --data ./.aacmcp
  aacmcp audit verify --s3 s3://aacmcp-auditbucket-1a2b3c --from 2026-12-01T00:00:00Z --json \
    --kms-key arn:aws:kms:eu-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab`,
		Args: wrapArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			ctx := c.Context()
			var fromT, toT time.Time
			var err error
			if from != "" {
				if fromT, err = time.Parse(time.RFC3339, from); err != nil {
					return usagef("--from: want RFC 3339, such as 2026-12-01T00:00:00Z")
				}
			}
			if to != "" {
				if toT, err = time.Parse(time.RFC3339, to); err != nil {
					return usagef("--to: want RFC 3339, such as 2026-12-01T12:00:00Z")
				}
			}
			if pubKey != "" && len(kmsKeys) > 0 {
				return usagef("give --public-key or --kms-key, not both")
			}
			v := &digest.Verifier{Now: g.env.now}
			if s3URL != "" {
				if c.Flags().Changed("data") {
					return usagef("give --data or --s3, not both")
				}
				if v.Store, v.Keys, err = s3Verifier(ctx, s3URL, region, endpoint, kmsKeys); err != nil {
					return err
				}
				v.Lag, v.Delivery = s3DigestLag, digestfn.Grace
			} else {
				if region != "" || endpoint != "" || len(kmsKeys) > 0 {
					return usagef("--region, --endpoint-url and --kms-key go with --s3")
				}
				if err := localVerifier(g, v); err != nil {
					return err
				}
			}
			v.Keyed = v.Keyed || len(kmsKeys) > 0 || pubKey != ""
			if pubKey != "" {
				b, err := os.ReadFile(pubKey)
				if err != nil {
					return usagef("--public-key: %v", err)
				}
				id, pub, err := digest.ParsePublicKeyPEM(b)
				if err != nil {
					return usagef("--public-key: %v", err)
				}
				v.Keys = digest.FileKeys{id: pub}
			}
			stop := progress(c.ErrOrStderr(), v)
			rep, err := v.Verify(ctx, fromT, toT)
			stop()
			if err != nil {
				return err
			}
			w := c.OutOrStdout()
			if asJSON {
				if err := writeJSON(w, rep); err != nil {
					return err
				}
			} else {
				printReport(w, rep)
			}
			if !rep.Intact() {
				return fmt.Errorf("the audit log is not intact: %d problem%s", len(rep.Problems), plural(len(rep.Problems)))
			}
			return nil
		},
	}
	c.Flags().StringVar(&s3URL, "s3", "", "verify an audit bucket, s3://bucket[/prefix], instead of --data")
	c.Flags().StringVar(&from, "from", "", "check digests of windows ending after this time (RFC 3339)")
	c.Flags().StringVar(&to, "to", "", "check digests of windows starting before this time (RFC 3339; default now)")
	c.Flags().StringVar(&region, "region", "", "AWS region of the bucket and key (--s3)")
	c.Flags().StringVar(&endpoint, "endpoint-url", "", "S3 endpoint, e.g. a local S3 server (--s3; path-style addressing; KMS: AWS_ENDPOINT_URL_KMS)")
	c.Flags().StringArrayVar(&kmsKeys, "kms-key", nil, "accept only digests signed by this KMS key ARN (--s3; repeat for a rotation)")
	c.Flags().StringVar(&pubKey, "public-key", "", "verify only against this Ed25519 public key (PEM), kept apart from the log")
	c.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return c
}

// localVerifier sets v to check the data folder with its own public keys. A key in the
// folder means digests are due: none at all is then an error.
func localVerifier(g *globals, v *digest.Verifier) error {
	v.Store, v.Delivery = digest.LocalStore{Dir: g.dataDir}, digestGrace
	keys, err := digest.DataFolderKeys(g.dataDir)
	if err != nil {
		return err
	}
	v.Keys, v.Keyed = keys, len(keys) > 0
	if _, err := os.Stat(filepath.Join(g.dataDir, digest.KeyFile)); err == nil {
		v.Keyed = true
	}
	return nil
}

// s3Verifier is the store and key source for --s3.
func s3Verifier(ctx context.Context, raw, region, endpoint string, only []string) (digest.Store, digest.Keys, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "s3" || u.Host == "" || u.RawQuery != "" {
		return nil, nil, usagef("--s3 %q: want s3://bucket[/prefix]", raw)
	}
	prefix := strings.Trim(u.Path, "/")
	if prefix != "" {
		prefix += "/"
	}
	if endpoint != "" {
		if e, err := url.Parse(endpoint); err != nil || (e.Scheme != "http" && e.Scheme != "https") || e.Host == "" {
			return nil, nil, usagef("--endpoint-url %q: want an absolute http(s) URL", endpoint)
		}
	}
	var opts []func(*config.LoadOptions) error
	if region != "" {
		opts = append(opts, config.WithRegion(region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("load the AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return nil, nil, usagef("no AWS region: pass --region or set AWS_REGION")
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if endpoint != "" {
			o.BaseEndpoint, o.UsePathStyle = aws.String(endpoint), true
		}
	})
	return digest.S3Store{Client: client, Bucket: u.Host, Prefix: prefix}, &digest.KMSKeys{Client: kms.NewFromConfig(cfg), Only: only}, nil
}

// progress shows a bar of the objects checked on a terminal, for runs long enough to
// need one; stop removes it.
func progress(w io.Writer, v *digest.Verifier) (stop func()) {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return func() {}
	}
	var bar *progressbar.ProgressBar
	v.Progress = func(done, total int) {
		if total < progressMin {
			return
		}
		if bar == nil {
			bar = progressbar.NewOptions(total,
				progressbar.OptionSetWriter(w),
				progressbar.OptionSetDescription("checking audit objects"),
				progressbar.OptionShowCount(),
				progressbar.OptionClearOnFinish(),
				progressbar.OptionThrottle(100*time.Millisecond),
			)
		}
		_ = bar.Set(done)
	}
	return func() {
		if bar != nil {
			_ = bar.Finish()
		}
	}
}

func printReport(w io.Writer, r *digest.Report) {
	if r.Intact() {
		fmt.Fprintf(w, "audit log intact: %s\n", r.Store)
	} else {
		fmt.Fprintf(w, "audit log NOT intact: %s: %d problem%s\n", r.Store, len(r.Problems), plural(len(r.Problems)))
		t := newTable(w, "PROBLEM", "FILE", "DETAIL")
		for _, p := range r.Problems {
			t.row(p.Kind, p.Path, p.Detail)
		}
		_ = t.flush()
	}
	if r.Digests == 0 {
		fmt.Fprintf(w, "  digests: none yet in the range checked\n")
	} else {
		fmt.Fprintf(w, "  digests: %d, %s to %s, signed by %s\n", r.Digests, r.FirstWindow, r.LastWindow, strings.Join(r.KeyIDs, ", "))
	}
	fmt.Fprintf(w, "  objects: %d verified (%d records)\n", r.Objects, r.Records)
	switch r.Versions {
	case "":
	case "checked":
		fmt.Fprintf(w, "  digest versions: checked for deleted or replaced digests\n")
	case "off":
		fmt.Fprintf(w, "  digest versions: not kept (bucket versioning is off): a deleted newest digest cannot be seen\n")
	default:
		fmt.Fprintf(w, "  digest versions: %s\n", r.Versions)
	}
	if r.Late > 0 {
		fmt.Fprintf(w, "  late: %d object%s listed more than %s after its hour (a replay)\n", r.Late, plural(r.Late), digest.MaxRecordDelay)
	}
	if r.Pending > 0 {
		fmt.Fprintf(w, "  not yet digested: %d object%s written after the last digest\n", r.Pending, plural(r.Pending))
	}
	if r.Uncovered > 0 {
		fmt.Fprintf(w, "  not covered: %d object%s written before the first digest\n", r.Uncovered, plural(r.Uncovered))
	}
}

// restrictToVerified checks the data folder as audit verify does and makes eng read
// only the objects a digest lists whose bytes match it. What else there is (not yet
// digested, added, or changed) is left out and counted on stderr.
func restrictToVerified(c *cobra.Command, g *globals, eng *query.Engine) error {
	v := &digest.Verifier{Now: g.env.now}
	if err := localVerifier(g, v); err != nil {
		return err
	}
	rep, err := v.Verify(c.Context(), time.Time{}, time.Time{})
	if err != nil {
		return err
	}
	eng.Restrict(func(rel string) bool { return rep.Verified[rel] })
	w := c.ErrOrStderr()
	fmt.Fprintf(w, "(--verified: %d object%s a digest lists and that verify", rep.Objects, plural(rep.Objects))
	if rep.Pending > 0 || rep.Uncovered > 0 {
		fmt.Fprintf(w, "; %d not yet digested, %d before the first digest, left out", rep.Pending, rep.Uncovered)
	}
	if !rep.Intact() {
		fmt.Fprintf(w, "; %d problem%s, see audit verify", len(rep.Problems), plural(len(rep.Problems)))
	}
	fmt.Fprintln(w, ")")
	return nil
}
