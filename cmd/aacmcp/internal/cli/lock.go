package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockFile is the file aacmcp serve holds an exclusive lock on for as long as it runs.
const lockFile = "serve.lock"

// lockDataDir takes the data folder for one server. Two servers on one folder would
// each believe the other's in-flight idempotency claims were abandoned; with the lock,
// a claim still pending when a server starts provably belongs to a dead process. The
// kernel drops the lock when the process dies, however it dies, so a kill -9 leaves
// nothing to clean up. Admin commands (token, member, ...) do not take it.
func lockDataDir(dataDir string) (release func(), err error) {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data folder: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dataDir, lockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open the data folder's lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("another aacmcp serve is using the data folder %s (stop it, or pass another --data)", dataDir)
		}
		return nil, fmt.Errorf("lock the data folder: %w", err)
	}
	return func() { f.Close() }, nil
}
