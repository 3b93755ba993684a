package file

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

type followConfig struct {
	interval  time.Duration
	fromStart bool
}

// FollowOption configures Follow.
type FollowOption func(*followConfig)

// WithPollInterval sets how often Follow looks for new lines (default 500 ms).
func WithPollInterval(d time.Duration) FollowOption {
	return func(c *followConfig) {
		if d > 0 {
			c.interval = d
		}
	}
}

// FromStart makes Follow deliver the records already on disk before the new ones.
func FromStart() FollowOption { return func(c *followConfig) { c.fromStart = true } }

// Follow calls fn for each record appended under <dir>/audit after it starts, across
// files and hours as writers open them, until ctx is done (it then returns nil) or fn
// returns an error. It polls: the files are local, few, and only appended to, and
// polling behaves the same on every filesystem.
//
// Lines are delivered complete: a line still being written is held back until its
// newline arrives. Records from different files are delivered file by file, so
// across processes they are not strictly in timestamp order.
func Follow(ctx context.Context, dir string, fn func(Entry) error, opts ...FollowOption) error {
	cfg := followConfig{interval: 500 * time.Millisecond}
	for _, o := range opts {
		o(&cfg)
	}
	root := filepath.Join(dir, Subdir)
	offsets := make(map[string]int64)
	if !cfg.fromStart {
		parts, err := listPartitions(root)
		if err != nil {
			return err
		}
		for _, p := range parts {
			for _, path := range p.json {
				if fi, err := os.Stat(path); err == nil {
					offsets[path] = fi.Size()
				}
			}
		}
		// The existing tail may end in a line still being written: start after the
		// last complete line so that record is delivered whole.
		for path, size := range offsets {
			offsets[path] = lastLineEnd(path, size)
		}
	}
	t := time.NewTicker(cfg.interval)
	defer t.Stop()
	for {
		if err := followOnce(root, offsets, fn); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// followOnce delivers the complete lines appended since the last poll.
func followOnce(root string, offsets map[string]int64, fn func(Entry) error) error {
	parts, err := listPartitions(root)
	if err != nil {
		return err
	}
	seen := make(map[string]bool, len(offsets))
	for _, p := range parts {
		for _, path := range p.json {
			seen[path] = true
			next, err := followFile(path, offsets[path], fn)
			if errors.Is(err, fs.ErrNotExist) {
				continue // compacted away between listing and reading
			}
			if err != nil {
				return err
			}
			offsets[path] = next
		}
	}
	// Forget files that are gone (compacted), so the map does not grow forever.
	for path := range offsets {
		if !seen[path] {
			delete(offsets, path)
		}
	}
	return nil
}

func followFile(path string, from int64, fn func(Entry) error) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return from, err
	}
	defer f.Close()
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return from, fmt.Errorf("audit: %w", err)
	}
	lr := newLineReader(f, from)
	for {
		off, line, lerr, err := lr.next(true)
		if errors.Is(err, io.EOF) {
			return lr.off, nil
		}
		if err != nil {
			return lr.off, fmt.Errorf("audit: read %s: %w", path, err)
		}
		if err := fn(entryOf(path, off, line, lerr)); err != nil {
			return lr.off, err
		}
	}
}

// lastLineEnd returns the offset just after the last newline in the first size bytes
// of path (0 if there is none).
func lastLineEnd(path string, size int64) int64 {
	f, err := os.Open(path)
	if err != nil {
		return size
	}
	defer f.Close()
	const window = 4 << 10
	buf := make([]byte, window)
	for end := size; end > 0; {
		start := max(end-window, 0)
		n, err := f.ReadAt(buf[:end-start], start)
		if err != nil && !errors.Is(err, io.EOF) {
			return size
		}
		for i := n - 1; i >= 0; i-- {
			if buf[i] == '\n' {
				return start + int64(i) + 1
			}
		}
		end = start
	}
	return 0
}
