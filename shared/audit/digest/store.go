package digest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/aacworkflow/aacmcp/shared/audit/file"
)

// ObjectInfo is an audit object as a store lists it.
type ObjectInfo struct {
	Path    string // relative to the log's root: audit/dt=.../hour=.../name
	Size    int64
	ModTime time.Time // mtime locally, LastModified in S3
	Open    bool      // a writer still holds it (local files only)
}

// Store is where the log and its digests live: a data folder or an S3 bucket.
type Store interface {
	// Objects lists every audit object, under LogPrefix and ErrorPrefix, in path order.
	Objects(ctx context.Context) ([]ObjectInfo, error)
	// Open streams an object; ErrNotFound when there is none.
	Open(ctx context.Context, path string) (io.ReadCloser, error)
	// Read returns the bytes of a digest (or of an object); ErrNotFound when there is
	// none. Objects are streamed with Open: Firehose's reach 128 MiB.
	Read(ctx context.Context, path string) ([]byte, error)
	// Digests lists every path under Prefix, in name order (which is window order).
	Digests(ctx context.Context) ([]string, error)
	// WriteDigest creates a digest; it never replaces one.
	WriteDigest(ctx context.Context, path string, b []byte) error
	String() string
}

// DigestChange is a version of a digest that is not the one in place: a delete marker,
// or an earlier version replaced. The writer never deletes or overwrites a digest, so
// each is someone else's doing.
type DigestChange struct {
	Path         string
	VersionID    string
	DeleteMarker bool
	LastModified time.Time
}

// versioned is a store that keeps every version of its digests (an S3 bucket with
// versioning on): the verifier reads their history.
type versioned interface {
	// DigestHistory reports whether versions are kept, and every delete marker and
	// noncurrent version under Prefix.
	DigestHistory(ctx context.Context) (on bool, changes []DigestChange, err error)
}

// ErrNotFound is returned by Store.Read for a path that holds nothing.
var ErrNotFound = errors.New("digest: not found")

// LocalStore is a data folder: the log under audit/, digests under audit-digest/.
type LocalStore struct{ Dir string }

func (s LocalStore) String() string { return "data folder " + s.Dir }

func (s LocalStore) Objects(context.Context) ([]ObjectInfo, error) {
	var out []ObjectInfo
	for _, prefix := range []string{LogPrefix, ErrorPrefix} {
		root := filepath.Join(s.Dir, filepath.FromSlash(prefix))
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if errors.Is(err, fs.ErrNotExist) && p == root {
				return fs.SkipAll
			}
			if err != nil {
				return err
			}
			if d.IsDir() {
				return nil
			}
			rel, err := filepath.Rel(s.Dir, p)
			if err != nil {
				return err
			}
			rel = filepath.ToSlash(rel)
			// Only the names readers take as records: not .open (being created),
			// .tmp (being compacted), the compaction lock or the seal. Under
			// audit-errors/ (Firehose's layout; nothing local writes there) every file.
			ext := filepath.Ext(p)
			if !d.Type().IsRegular() || (prefix == LogPrefix && ext != ".json" && ext != ".parquet") {
				return nil
			}
			if _, ok := PartitionHour(rel); !ok {
				return nil
			}
			fi, err := os.Stat(p)
			if errors.Is(err, fs.ErrNotExist) {
				return nil // compacted away meanwhile
			}
			if err != nil {
				return err
			}
			out = append(out, ObjectInfo{
				Path:    rel,
				Size:    fi.Size(),
				ModTime: fi.ModTime(),
				Open:    ext == ".json" && heldByWriter(p),
			})
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("digest: %w", err)
		}
	}
	slices.SortFunc(out, func(a, b ObjectInfo) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

// heldByWriter reports whether a writer (a Sink, or a compaction taking the file)
// holds path's flock: the file may still grow or vanish.
func heldByWriter(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	return syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB) != nil
}

func (s LocalStore) Open(_ context.Context, path string) (io.ReadCloser, error) {
	if !filepath.IsLocal(path) {
		return nil, fmt.Errorf("digest: path %q leaves the data folder", path)
	}
	f, err := os.Open(filepath.Join(s.Dir, filepath.FromSlash(path)))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, path)
	}
	return f, err
}

func (s LocalStore) Read(_ context.Context, path string) ([]byte, error) {
	if !filepath.IsLocal(path) {
		return nil, fmt.Errorf("digest: path %q leaves the data folder", path)
	}
	b, err := os.ReadFile(filepath.Join(s.Dir, filepath.FromSlash(path)))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, path)
	}
	return b, err
}

func (s LocalStore) Digests(context.Context) ([]string, error) {
	root := filepath.Join(s.Dir, strings.TrimSuffix(Prefix, "/"))
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && p == root {
			return fs.SkipAll
		}
		if err != nil {
			return err
		}
		if d.IsDir() || strings.HasSuffix(p, ".tmp") {
			return nil
		}
		rel, err := filepath.Rel(s.Dir, p)
		if err != nil {
			return err
		}
		out = append(out, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("digest: %w", err)
	}
	slices.Sort(out)
	return out, nil
}

// WriteDigest writes aside, fsyncs and links the file into place: a crash leaves no
// half digest, and link(2) fails rather than replace one that exists.
func (s LocalStore) WriteDigest(_ context.Context, path string, b []byte) error {
	final := filepath.Join(s.Dir, filepath.FromSlash(path))
	if err := os.MkdirAll(filepath.Dir(final), 0o700); err != nil {
		return fmt.Errorf("digest: %w", err)
	}
	tmp := final + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("digest: %w", err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Link(tmp, final)
	}
	_ = os.Remove(tmp)
	if err != nil {
		return fmt.Errorf("digest: write %s: %w", path, err)
	}
	return nil
}

// prepare compacts every hour that ends by before, so that the digest lists the
// Parquet files compaction would otherwise make of the JSON files later.
func (s LocalStore) prepare(before time.Time) error {
	_, err := file.Compact(s.Dir, before)
	return err
}

// seal keeps compaction away from what the digest up to end lists.
func (s LocalStore) seal(end time.Time) error { return file.Seal(s.Dir, end) }

// S3Store is an audit bucket: the log under <prefix>audit/, digests under
// <prefix>audit-digest/.
type S3Store struct {
	Client *s3.Client
	Bucket string
	Prefix string // "" or ending in "/"
}

func (s S3Store) String() string { return "s3://" + s.Bucket + "/" + s.Prefix }

func (s S3Store) list(ctx context.Context, prefix, startAfter string, fn func(s3types.Object)) error {
	in := &s3.ListObjectsV2Input{Bucket: aws.String(s.Bucket), Prefix: aws.String(s.Prefix + prefix)}
	if startAfter != "" {
		in.StartAfter = aws.String(s.Prefix + startAfter)
	}
	p := s3.NewListObjectsV2Paginator(s.Client, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("digest: list %s: %w", s, err)
		}
		for _, o := range page.Contents {
			fn(o)
		}
	}
	return nil
}

func (s S3Store) Objects(ctx context.Context) ([]ObjectInfo, error) {
	var out []ObjectInfo
	for _, prefix := range []string{LogPrefix, ErrorPrefix} {
		err := s.list(ctx, prefix, "", func(o s3types.Object) {
			p := strings.TrimPrefix(aws.ToString(o.Key), s.Prefix)
			if _, ok := PartitionHour(p); !ok || strings.HasSuffix(p, "/") {
				return // a folder marker or a stray key: no audit object
			}
			out = append(out, ObjectInfo{Path: p, Size: aws.ToInt64(o.Size), ModTime: aws.ToTime(o.LastModified)})
		})
		if err != nil {
			return nil, err
		}
	}
	slices.SortFunc(out, func(a, b ObjectInfo) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

func (s S3Store) Digests(ctx context.Context) ([]string, error) {
	var out []string
	err := s.list(ctx, Prefix, "", func(o s3types.Object) {
		out = append(out, strings.TrimPrefix(aws.ToString(o.Key), s.Prefix))
	})
	slices.Sort(out)
	return out, err
}

func (s S3Store) Open(ctx context.Context, path string) (io.ReadCloser, error) {
	out, err := s.Client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.Bucket), Key: aws.String(s.Prefix + path)})
	var nsk *s3types.NoSuchKey
	if errors.As(err, &nsk) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, path)
	}
	if err != nil {
		return nil, fmt.Errorf("digest: get %s: %w", path, err)
	}
	return out.Body, nil
}

func (s S3Store) Read(ctx context.Context, path string) ([]byte, error) {
	body, err := s.Open(ctx, path)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	return io.ReadAll(body)
}

// DigestHistory reads the bucket's versioning state and the versions under
// audit-digest/. Object Lock keeps a deleted or replaced digest's version for the
// retention period, so its deletion shows here even after the digest function wrote the
// window again.
func (s S3Store) DigestHistory(ctx context.Context) (bool, []DigestChange, error) {
	v, err := s.Client.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String(s.Bucket)})
	if err != nil {
		return false, nil, fmt.Errorf("digest: versioning of %s: %w", s, err)
	}
	if v.Status != s3types.BucketVersioningStatusEnabled {
		return false, nil, nil
	}
	var out []DigestChange
	p := s3.NewListObjectVersionsPaginator(s.Client, &s3.ListObjectVersionsInput{Bucket: aws.String(s.Bucket), Prefix: aws.String(s.Prefix + Prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return true, nil, fmt.Errorf("digest: list versions of %s: %w", s, err)
		}
		for _, m := range page.DeleteMarkers {
			out = append(out, DigestChange{Path: strings.TrimPrefix(aws.ToString(m.Key), s.Prefix), VersionID: aws.ToString(m.VersionId),
				DeleteMarker: true, LastModified: aws.ToTime(m.LastModified)})
		}
		for _, o := range page.Versions {
			if !aws.ToBool(o.IsLatest) {
				out = append(out, DigestChange{Path: strings.TrimPrefix(aws.ToString(o.Key), s.Prefix), VersionID: aws.ToString(o.VersionId),
					LastModified: aws.ToTime(o.LastModified)})
			}
		}
	}
	slices.SortFunc(out, func(a, b DigestChange) int { return strings.Compare(a.Path+a.VersionID, b.Path+b.VersionID) })
	return true, out, nil
}

// WriteDigest puts the digest with If-None-Match: * (never over an existing one) and
// a SHA-256 checksum, which S3 requires of writes that Object Lock retains.
func (s S3Store) WriteDigest(ctx context.Context, path string, b []byte) error {
	_, err := s.Client.PutObject(ctx, &s3.PutObjectInput{
		Bucket:            aws.String(s.Bucket),
		Key:               aws.String(s.Prefix + path),
		Body:              bytes.NewReader(b),
		ContentType:       aws.String("application/json"),
		IfNoneMatch:       aws.String("*"),
		ChecksumAlgorithm: s3types.ChecksumAlgorithmSha256,
	})
	if err != nil {
		return fmt.Errorf("digest: put %s: %w", path, err)
	}
	return nil
}
