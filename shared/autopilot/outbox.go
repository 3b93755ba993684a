package autopilot

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// OutboxFile is the conventional name of the outbox inside the data folder.
const OutboxFile = "autopilot-outbox.jsonl"

// Outbox is the local stand-in for the agent runner: every job becomes one JSON line
// appended to a file, for a person or a script to pick up. A job counts as dispatched
// once its line is written and synced.
type Outbox struct {
	mu      sync.Mutex // guards f and written, and serializes the writes
	f       *os.File
	path    string
	written uint64 // lines written so far

	// syncMu serializes fsyncs; synced is how many lines the last good one covered.
	// A caller whose line an fsync already covered returns without one of its own,
	// so concurrent jobs share fsyncs (group commit) instead of queueing one each.
	syncMu sync.Mutex
	synced uint64
}

// NewOutbox opens (creating if needed) the outbox file at path. The file is private to
// the user (0600): jobs carry instructions written by workspace members.
func NewOutbox(path string) (*Outbox, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("autopilot outbox: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("autopilot outbox: %w", err)
	}
	return &Outbox{f: f, path: path}, nil
}

// Path is the file the outbox appends to.
func (o *Outbox) Path() string { return o.path }

// Dispatch appends the job as one line. The line goes out in a single write on an
// O_APPEND descriptor under a mutex, so concurrent jobs never interleave, even with
// another process appending to the same file. Concurrent jobs share their fsyncs:
// one fsync in the soak's 200 clients was the whole slowest 1% (docs/decisions.md).
// QueuesOnly marks the outbox as a queue: runs written to it stay "queued".
func (o *Outbox) QueuesOnly() bool { return true }

func (o *Outbox) Dispatch(ctx context.Context, j Job) error {
	if err := ctx.Err(); err != nil {
		return &DispatchError{Attempts: 0, Reason: "dispatch cancelled", cause: err}
	}
	line, err := json.Marshal(j)
	if err != nil {
		return &DispatchError{Attempts: 1, Reason: "job could not be encoded", cause: err}
	}
	line = append(line, '\n')

	o.mu.Lock()
	if o.f == nil {
		o.mu.Unlock()
		return &DispatchError{Attempts: 1, Reason: "outbox is closed", cause: os.ErrClosed}
	}
	if _, err := o.f.Write(line); err != nil {
		o.mu.Unlock()
		return &DispatchError{Attempts: 1, Reason: "outbox write failed", cause: err}
	}
	o.written++
	mine := o.written
	o.mu.Unlock()

	// The run is reported as dispatched to the caller: the line must survive a crash,
	// so Dispatch returns after an fsync that began after the line was written.
	o.syncMu.Lock()
	defer o.syncMu.Unlock()
	if o.synced >= mine {
		return nil
	}
	o.mu.Lock()
	f, upTo := o.f, o.written
	o.mu.Unlock()
	if f == nil {
		return &DispatchError{Attempts: 1, Reason: "outbox is closed", cause: os.ErrClosed}
	}
	if err := f.Sync(); err != nil {
		return &DispatchError{Attempts: 1, Reason: "outbox sync failed", cause: err}
	}
	o.synced = upTo
	return nil
}

// Close closes the file. Dispatch after Close fails.
func (o *Outbox) Close() error {
	o.syncMu.Lock() // no fsync of a closed file
	defer o.syncMu.Unlock()
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.f == nil {
		return nil
	}
	err := o.f.Close()
	o.f = nil
	return err
}
