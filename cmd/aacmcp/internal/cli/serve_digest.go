package cli

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/aacworkflow/aacmcp/shared/audit/digest"
	"github.com/aacworkflow/aacmcp/shared/audit/file"
)

// digestGrace is how long after an hour ends the server digests it: the sink closes
// an ended hour's file one minute after its last write (file.WithCloseAfter).
const digestGrace = 2 * time.Minute

// digestEvery is how often the server looks for an hour to digest.
const digestEvery = time.Minute

// digester writes the data folder's digests while the server runs.
type digester struct {
	w      *digest.Writer
	sink   *file.Sink
	log    *slog.Logger
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// startDigester digests every closed hour now (those that passed while no server ran
// included) and then each hour as it closes.
func startDigester(ctx context.Context, dataDir string, sink *file.Sink, now func() time.Time, log *slog.Logger) (*digester, error) {
	signer, err := digest.LoadOrCreateFileSigner(dataDir)
	if err != nil {
		return nil, err
	}
	d := &digester{
		// A key that was there before this start has signed digests: none left means
		// they were removed, and a new chain would hide that.
		w: &digest.Writer{Store: digest.LocalStore{Dir: dataDir}, Signer: signer, Now: now, Grace: digestGrace, Log: log,
			Continue: !signer.Created()},
		sink: sink,
		log:  log,
	}
	d.once(ctx)
	ctx, d.cancel = context.WithCancel(ctx)
	d.wg.Go(func() {
		t := time.NewTicker(digestEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				d.once(ctx)
			}
		}
	})
	return d, nil
}

func (d *digester) once(ctx context.Context) {
	d.sink.CloseIdle()
	if _, err := d.w.WriteDue(ctx); err != nil {
		d.log.Error("audit digest failed; the next attempt is in a minute", "err", err)
	}
}

// stop ends the hourly loop, closes the sink (no record can come any more) and
// digests the hour under way up to this moment: a clean stop leaves no record outside
// a digest.
func (d *digester) stop(ctx context.Context) {
	d.cancel()
	d.wg.Wait()
	if err := d.sink.Close(); err != nil {
		d.log.Warn("audit sink close failed", "err", err)
	}
	names, err := d.w.WriteNow(ctx)
	if err != nil {
		d.log.Error("audit digest of the last hour failed; the next start writes it", "err", err)
		return
	}
	d.log.Info("audit digested up to the stop", "digests", len(names))
}
