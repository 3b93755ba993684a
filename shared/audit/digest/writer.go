package digest

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path"
	"time"

	"github.com/aacworkflow/aacmcp/shared/audit/file"
)

// Writer writes the digests of a store.
type Writer struct {
	Store  Store
	Signer Signer
	Now    func() time.Time
	// Grace is how long after an hour ends its digest waits: for the local sink to
	// close the hour's files (one minute), or for Firehose's late deliveries.
	Grace time.Duration
	Log   *slog.Logger
	// Continue, when set, forbids starting a new chain: the store had digests (its key
	// existed), so finding none means they were removed. A new chain would list
	// whatever the objects hold now, and audit verify would find it intact.
	Continue bool
}

// ErrChainGone is returned by a Writer with Continue set when the store holds no
// digest: audit verify reports it as no_digests until an operator decides.
var ErrChainGone = errors.New("digest: the signing key exists but no digest does (removed?); audit verify names it; to start a new chain, move the key aside")

// MaxRecordDelay is how late after its hour an object may come and still be an
// ordinary delivery (Firehose retries within the stream's 24-hour retention; the
// forwarder's events are at most 6 hours old). A digest still lists a later one, and
// marks it Late: a replay of the failure queue, days on.
const MaxRecordDelay = 48 * time.Hour

// preparer is a store whose objects change after they are written (the data folder:
// compaction replaces JSON files by Parquet), so the digest must first settle them.
type preparer interface {
	prepare(before time.Time) error
	seal(end time.Time) error
}

func (w *Writer) now() time.Time {
	if w.Now != nil {
		return w.Now()
	}
	return time.Now()
}

func (w *Writer) log() *slog.Logger {
	if w.Log != nil {
		return w.Log
	}
	return slog.Default()
}

// WriteDue writes a digest for every hour that ended at least Grace ago and has none,
// empty hours included. It returns the paths written.
func (w *Writer) WriteDue(ctx context.Context) ([]string, error) {
	end := w.now().Add(-w.Grace).UTC().Truncate(time.Hour)
	if p, ok := w.Store.(preparer); ok {
		if err := p.prepare(end); err != nil {
			return nil, err
		}
	}
	return w.writeUntil(ctx, end)
}

// WriteNow closes the open window: it digests everything written up to this moment
// (a clean stop of the server, after its sink is closed).
func (w *Writer) WriteNow(ctx context.Context) ([]string, error) {
	if p, ok := w.Store.(preparer); ok {
		// The hour under way too: its files are closed, and left as JSON they would be
		// compacted (removed) after this digest lists them.
		if err := p.prepare(w.now().UTC().Truncate(time.Hour).Add(time.Hour)); err != nil {
			return nil, err
		}
	}
	// Taken after compaction: the Parquet files it wrote belong to this window.
	return w.writeUntil(ctx, w.now().UTC())
}

func (w *Writer) writeUntil(ctx context.Context, end time.Time) ([]string, error) {
	names, err := w.Store.Digests(ctx)
	if err != nil {
		return nil, err
	}
	var prev *Digest
	var prevName string
	var prevBytes []byte
	for i := len(names) - 1; i >= 0 && prev == nil; i-- {
		if !IsName(names[i]) {
			continue
		}
		prevName = names[i]
		if prevBytes, err = w.Store.Read(ctx, prevName); err != nil {
			return nil, err
		}
		// A damaged last digest stops the chain here rather than be built upon:
		// audit verify names it, and an operator decides.
		if prev, err = Decode(prevBytes); err != nil {
			return nil, fmt.Errorf("digest: the last digest %s: %w", prevName, err)
		}
	}
	if prev == nil && w.Continue {
		return nil, ErrChainGone
	}
	// Nothing due (the server asks every minute): no seal, no listing of the log.
	if prev != nil && !prev.End().Before(end) {
		return nil, nil
	}
	if p, ok := w.Store.(preparer); ok {
		if err := p.seal(end); err != nil {
			return nil, err
		}
	}
	// Every partition is listed, not only the last days': an object written now may
	// hold records of any age (a replay of the failure queue), and one the listing
	// missed would be in no digest. A year of hourly objects is about a hundred LIST
	// pages.
	objs, err := w.Store.Objects(ctx)
	if err != nil {
		return nil, err
	}
	var start time.Time
	if prev != nil {
		start = prev.End()
	} else {
		start = end.Truncate(time.Hour)
		for _, o := range objs {
			if o.ModTime.Before(start) {
				start = o.ModTime.UTC().Truncate(time.Hour)
			}
		}
		if !start.Before(end) {
			start = end.Add(-time.Hour)
		}
	}
	// A file a writer still holds may grow: the window ends before its last write, so
	// it is digested once closed, in a later window.
	for _, o := range objs {
		if o.Open && o.ModTime.Before(end) {
			if !o.ModTime.After(start) {
				// Already inside digested time: it can only join the next window's
				// catch-up, or (held for longer than a window) be reported as added.
				w.log().Warn("audit digest: a file held open since before the last digest", "path", o.Path)
				continue
			}
			end = o.ModTime.UTC()
		}
	}
	// Objects of the last digest's window that it does not list go into the next one:
	// a file closed just after that digest was listed can carry an mtime inside its
	// window (file times come from the kernel's coarse clock, a few milliseconds
	// behind), and would otherwise be in no digest at all.
	from := start
	prevListed := map[string]bool{}
	if prev != nil {
		from = prev.Start()
		for _, o := range prev.Objects {
			prevListed[o.Path] = true
		}
	}
	var written []string
	for start.Before(end) {
		wend := start.Truncate(time.Hour).Add(time.Hour)
		if wend.After(end) {
			wend = end
		}
		d := &Digest{
			DigestVersion: Version,
			WindowStart:   FormatTime(start),
			WindowEnd:     FormatTime(wend),
			Objects:       []Object{},
			KeyID:         w.Signer.KeyID(),
			Algorithm:     w.Signer.Algorithm(),
		}
		for _, o := range objs {
			if o.Open || o.ModTime.Before(from) || !o.ModTime.Before(wend) || prevListed[o.Path] {
				continue
			}
			obj, err := describe(ctx, w.Store, o.Path)
			if err != nil {
				return written, err
			}
			if h, ok := PartitionHour(o.Path); ok && h.Add(time.Hour+MaxRecordDelay).Before(start) {
				obj.Late = true
			}
			d.Objects = append(d.Objects, obj)
		}
		if prev != nil {
			d.PreviousPath, d.PreviousSHA256, d.PreviousSignature = prevName, Hash(prevBytes), prev.Signature
		}
		sig, err := w.Signer.Sign(ctx, SignedBytes(d))
		if err != nil {
			return written, err
		}
		d.Signature = base64.StdEncoding.EncodeToString(sig)
		b := Encode(d)
		name := Name(start, wend)
		if err := w.Store.WriteDigest(ctx, name, b); err != nil {
			return written, err
		}
		w.log().Info("audit digest written", "path", name, "objects", len(d.Objects))
		written = append(written, name)
		prev, prevName, prevBytes, start, from = d, name, b, wend, wend
		clear(prevListed)
	}
	return written, nil
}

// describe streams an object once and says what a digest lists of it: the SHA-256
// and size of every byte read, and the records summarised on the way (file.
// SummarizeReader keeps a line or a Parquet footer, never the object).
func describe(ctx context.Context, s Store, p string) (Object, error) {
	body, err := s.Open(ctx, p)
	if err != nil {
		return Object{}, err
	}
	defer body.Close()
	h := sha256.New()
	n := &countWriter{}
	tee := io.TeeReader(body, io.MultiWriter(h, n))
	sum, serr := file.SummarizeReader(path.Base(p), tee)
	// SummarizeReader reads to the end; should it stop early, the rest still
	// belongs to the hash.
	if _, err := io.Copy(io.Discard, tee); err != nil {
		return Object{}, fmt.Errorf("digest: read %s: %w", p, err)
	}
	if serr != nil {
		// An object that does not decode is still listed: its hash is what proves
		// it unchanged; the count stays 0.
		sum = file.Summary{}
	}
	return Object{
		Path: p, SHA256: hex.EncodeToString(h.Sum(nil)), Size: n.n,
		Records: sum.Records, FirstTimestamp: sum.First, LastTimestamp: sum.Last,
	}, nil
}

// countWriter counts the bytes written to it.
type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }
