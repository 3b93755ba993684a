package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// The data folder has one owner at a time, and every other process that writes its
// database says so first. aacmcp serve holds an exclusive flock on lockFile for as
// long as it runs and keeps members and issues in memory (sqlite.WithReadCache), so
// it must hear of every write it does not make itself:
//
//   - No server: an admin command holds a shared flock on lockFile while it works,
//     so a server cannot start in between (it waits for the command to finish).
//   - A server: the command connects to writersSocket and holds the connection open
//     while it works; the server reads the database instead of its copy until the
//     connection closes, however it closes (kill -9 included: the kernel closes it).
//
// The exclusive lock also keeps two servers apart: each would take the other's
// in-flight idempotency claims for a dead process's. The kernel drops a flock when
// its process dies, so a crash leaves nothing to clean up.
const (
	lockFile      = "serve.lock"
	writersSocket = "writers.sock"

	// lockWait bounds how long serve waits for admin commands to finish, and an
	// admin command for a starting server to answer.
	lockWait = 30 * time.Second
	// sessionHello is the whole protocol: the command sends it, the server answers
	// sessionOK once it reads the database directly, and the session lasts until the
	// connection closes.
	sessionHello = "aacmcp external-writes v1\n"
	sessionOK    = "ok\n"
)

var errServeRunning = errors.New("another aacmcp serve is using the data folder")

// lockDataDir takes the data folder for one server, waiting up to lockWait for admin
// commands that hold it to finish. Another server holding it is an error at once.
func lockDataDir(ctx context.Context, dataDir string) (release func(), err error) {
	f, err := waitForLock(ctx, dataDir, syscall.LOCK_EX, func() error {
		if serverAnswers(dataDir) {
			return fmt.Errorf("%w %s (stop it, or pass another --data)", errServeRunning, dataDir)
		}
		return nil
	}, func() error {
		return fmt.Errorf("the data folder %s is still locked after %s by another aacmcp process "+
			"(a server starting or stopping, or an admin command)", dataDir, lockWait)
	})
	if err != nil {
		return nil, err
	}
	return func() { f.Close() }, nil
}

// errHandled ends waitForLock without the lock and without an error: busy found
// another way to proceed.
var errHandled = errors.New("handled without the lock")

// waitForLock takes a flock (LOCK_EX or LOCK_SH) on the folder's lock file. While
// it is busy, busy is asked every 50 ms, for up to lockWait: an error from it ends
// the wait (errHandled: the caller proceeds another way); past lockWait the error
// is timeout's.
func waitForLock(ctx context.Context, dataDir string, how int, busy, timeout func() error) (*os.File, error) {
	f, err := openLockFile(dataDir)
	if err != nil {
		return nil, err
	}
	locked := false
	defer func() {
		if !locked {
			f.Close()
		}
	}()
	deadline := time.Now().Add(lockWait)
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if err == nil {
			locked = true
			return f, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("lock the data folder: %w", err)
		}
		if err := busy(); err != nil {
			return nil, err
		}
		if time.Now().After(deadline) {
			return nil, timeout()
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func openLockFile(dataDir string) (*os.File, error) {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data folder: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dataDir, lockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open the data folder's lock: %w", err)
	}
	return f, nil
}

// announceWrites is called by an admin command before it opens the database, and
// release when it has closed it. See the comment on lockFile.
func announceWrites(ctx context.Context, dataDir string) (release func() error, err error) {
	var sess *session
	var lastErr error
	f, err := waitForLock(ctx, dataDir, syscall.LOCK_SH, func() error {
		// A server holds the folder; it may still be starting.
		if sess, lastErr = openSession(dataDir); lastErr == nil {
			return errHandled
		}
		return nil
	}, func() error {
		return fmt.Errorf("the aacmcp serve that holds the data folder %s does not answer on %s: %w",
			dataDir, writersSocket, lastErr)
	})
	switch {
	case errors.Is(err, errHandled):
		return sess.release(ctx, dataDir), nil
	case err != nil:
		return nil, err
	}
	return func() error { return f.Close() }, nil
}
