package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/aacworkflow/aacmcp/shared/retry"
)

// The writers socket: the server's side (writersListener) and an admin command's
// (session). See the comment on lockFile for the protocol.

// externalWriter is what the server tells of an admin command's session
// (sqlite.Store.BeginExternalWrites).
type externalWriter interface {
	BeginExternalWrites() (end func())
}

// writersListener is the server's side of writersSocket.
type writersListener struct {
	ln  net.Listener
	st  externalWriter
	log *slog.Logger
	// dataDir names the folder whose writersSocket Close removes ("" when ln removes
	// its own file). Go's listener would unlink the path it was bound to, which for a
	// deep folder is /proc/self/fd/N/...: by then N is closed, or another file.
	dataDir   string
	done      chan struct{} // closed by Close: ends a wait between failed accepts
	closeOnce sync.Once
	closeErr  error

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// listenWriters opens writersSocket. The caller holds the folder's lock, so a socket
// file left there belongs to a server that died and is removed.
func listenWriters(dataDir string, st externalWriter, log *slog.Logger) (*writersListener, error) {
	path, done, err := socketPath(dataDir)
	if err != nil {
		return nil, err
	}
	defer done()
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove the stale %s: %w", writersSocket, err)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", filepath.Join(dataDir, writersSocket), err)
	}
	ln.SetUnlinkOnClose(false)
	// The folder is 0700 already; the socket says the same on its own.
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		_ = os.Remove(path)
		return nil, fmt.Errorf("chmod %s: %w", writersSocket, err)
	}
	w := serveWriters(ln, st, log)
	w.dataDir = dataDir
	return w, nil
}

// serveWriters takes sessions on ln until Close.
func serveWriters(ln net.Listener, st externalWriter, log *slog.Logger) *writersListener {
	w := &writersListener{ln: ln, st: st, log: log, done: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	w.wg.Add(1)
	go w.accept()
	return w
}

func (w *writersListener) accept() {
	defer w.wg.Done()
	backoff := retry.Policy{Base: 5 * time.Millisecond, Max: time.Second}
	failures := 0 // in a row
	for {
		c, err := w.ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			// Out of descriptors and the like: wait and try again, as net/http does.
			// Giving up would leave every admin command waiting for an answer that
			// never comes, until the server restarts.
			if failures++; failures == 1 {
				w.log.Warn("accept on the writers socket failed; retrying", "err", err)
			}
			select {
			case <-w.done:
				return
			case <-time.After(backoff.Delay(failures)):
			}
			continue
		}
		failures = 0
		w.mu.Lock()
		if w.conns == nil { // closing
			w.mu.Unlock()
			c.Close()
			return
		}
		w.conns[c] = struct{}{}
		w.mu.Unlock()
		w.wg.Add(1)
		go w.session(c)
	}
}

func (w *writersListener) session(c net.Conn) {
	defer w.wg.Done()
	defer func() {
		c.Close()
		w.mu.Lock()
		delete(w.conns, c)
		w.mu.Unlock()
	}()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	// No more than a hello is read (or logged) before the line is judged: a stranger
	// cannot make the server buffer an endless line.
	r := bufio.NewReader(io.LimitReader(c, int64(len(sessionHello))))
	hello, err := r.ReadString('\n')
	if hello == "" && errors.Is(err, io.EOF) {
		return // a probe: another serve checking whether this one runs (serverAnswers)
	}
	if err != nil || hello != sessionHello {
		w.log.Warn("refused a connection on the writers socket", "hello", hello, "err", err)
		return
	}
	end := w.st.BeginExternalWrites()
	defer end()
	if _, err := io.WriteString(c, sessionOK); err != nil {
		return
	}
	_ = c.SetDeadline(time.Time{})
	w.log.Debug("an admin command is writing the database")
	_, _ = io.Copy(io.Discard, c) // until the command closes the connection, or dies
}

// Close stops accepting, ends the sessions still open and removes the socket. The
// server calls it after its HTTP server shut down, but a request that outlived the
// shutdown grace may still run, and a command whose session is cut here goes on
// writing: so the copy in memory is given up for good first, with a session that
// never ends.
func (w *writersListener) Close() error {
	w.closeOnce.Do(func() {
		w.st.BeginExternalWrites()
		close(w.done)
		errs := []error{w.ln.Close()}
		w.mu.Lock()
		for c := range w.conns {
			c.Close()
		}
		w.conns = nil
		w.mu.Unlock()
		w.wg.Wait()
		if w.dataDir != "" {
			errs = append(errs, removeSocket(w.dataDir))
		}
		w.closeErr = errors.Join(errs...)
	})
	return w.closeErr
}

// removeSocket deletes the folder's writersSocket, resolving a deep folder's path
// afresh.
func removeSocket(dataDir string) error {
	path, done, err := socketPath(dataDir)
	if err != nil {
		return err
	}
	defer done()
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", writersSocket, err)
	}
	return nil
}

// session is an admin command's open connection to the server: nothing is read
// from it after the answer; release asks the kernel whether the server closed it.
type session struct{ c net.Conn }

func openSession(dataDir string) (*session, error) {
	path, done, err := socketPath(dataDir)
	if err != nil {
		return nil, err
	}
	c, err := net.DialTimeout("unix", path, 5*time.Second)
	done()
	if err != nil {
		return nil, err
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c)
	if _, err := io.WriteString(c, sessionHello); err != nil {
		c.Close()
		return nil, err
	}
	if ok, err := r.ReadString('\n'); err != nil || ok != sessionOK {
		c.Close()
		return nil, fmt.Errorf("the server did not accept the session (answer %q): %v", ok, err)
	}
	_ = c.SetDeadline(time.Time{})
	return &session{c: c}, nil
}

// release ends the session. If the server went away meanwhile, a server started
// after it may have read what this command was changing before the change was
// committed; a new empty session makes that server drop its copy.
func (s *session) release(ctx context.Context, dataDir string) func() error {
	return func() error {
		lost := peerClosed(s.c)
		s.c.Close()
		if !lost {
			return nil
		}
		again, err := announceWrites(ctx, dataDir)
		if err != nil {
			return fmt.Errorf("the server stopped while this command ran, and the next one did not answer: %w", err)
		}
		return again()
	}
}

// peerClosed reports whether the server closed its end of c (it stopped or died)
// or may have: anything but "open, nothing to read" counts as closed, since a
// needless new session only drops a copy. The kernel is asked, not a goroutine
// reading c: it knows the moment the server closes, and the next server may have
// read the database before this command's writes committed.
func peerClosed(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	var peekErr error
	err = rc.Read(func(fd uintptr) bool {
		var b [1]byte
		_, _, peekErr = syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		return true // answer now; never wait for the socket to become readable
	})
	return err != nil || !errors.Is(peekErr, syscall.EAGAIN)
}

// serverAnswers reports whether a server accepts connections on the folder's socket.
func serverAnswers(dataDir string) bool {
	path, done, err := socketPath(dataDir)
	if err != nil {
		return false
	}
	defer done()
	c, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// maxSocketPath is below sun_path's 108 bytes on Linux (104 on BSDs).
const maxSocketPath = 100

// socketPath names writersSocket so that bind and connect accept it: a data folder
// deep enough to overflow sun_path is reached through its open descriptor instead
// (/proc/self/fd/N/writers.sock, Linux). done closes that descriptor.
func socketPath(dataDir string) (path string, done func(), err error) {
	p := filepath.Join(dataDir, writersSocket)
	if len(p) <= maxSocketPath {
		return p, func() {}, nil
	}
	d, err := os.Open(dataDir)
	if err != nil {
		return "", nil, fmt.Errorf("open the data folder: %w", err)
	}
	short := fmt.Sprintf("/proc/self/fd/%d/%s", d.Fd(), writersSocket)
	if _, err := os.Stat(filepath.Dir(short)); err != nil {
		d.Close()
		return "", nil, fmt.Errorf("the data folder's path is too long for a socket (%d bytes, at most %d): %s", len(p), maxSocketPath, dataDir)
	}
	return short, func() { d.Close() }, nil
}
