package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"syscall"
	"time"
)

// proc is a peer or server process the bench started and must stop.
type proc struct {
	name string
	cmd  *exec.Cmd
	url  string // base URL, from the line the process prints when it listens
	done chan error
}

var listenRE = regexp.MustCompile(`(?:listening|serving) (http://127\.0\.0\.1:[0-9]+)`)

// startProc runs argv with its stdout scanned for the "listening"/"serving" line;
// its stderr goes to logPath.
func startProc(ctx context.Context, name, logPath string, env []string, argv ...string) (*proc, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = logf
	out, err := cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan error, 1)}
	urlc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		found := false
		for sc.Scan() {
			fmt.Fprintln(logf, sc.Text())
			if m := listenRE.FindStringSubmatch(sc.Text()); m != nil && !found {
				found = true
				urlc <- m[1]
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	go func() {
		p.done <- cmd.Wait()
		logf.Close()
	}()
	select {
	case p.url = <-urlc:
		return p, nil
	case err := <-p.done:
		return nil, fmt.Errorf("%s exited before listening (%v); see %s", name, err, logPath)
	case <-time.After(60 * time.Second):
		p.stop()
		return nil, fmt.Errorf("%s did not listen within 60s; see %s", name, logPath)
	case <-ctx.Done():
		p.stop()
		return nil, ctx.Err()
	}
}

// stop sends SIGTERM, then SIGKILL after five seconds.
func (p *proc) stop() {
	if p == nil || p.cmd.Process == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// goBuild builds pkg to out with extra environment (GOOS, GOARCH, CGO_ENABLED) and
// flags.
func goBuild(root, out, pkg string, env []string, flags ...string) error {
	args := append([]string{"build", "-o", out}, flags...)
	args = append(args, pkg)
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", pkg, err, b)
	}
	return nil
}
