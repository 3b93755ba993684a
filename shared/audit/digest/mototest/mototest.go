// Package mototest starts moto's S3 server for tests that need what s3rver lacks:
// object versions and Object Lock.
package mototest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Endpoint and credentials the CLI's AWS configuration is pointed at in tests.
const (
	AccessKey = "test"
	SecretKey = "test"
	Region    = "us-east-1"
)

// Start runs moto's S3 server (moto_server, Python) on 127.0.0.1: unlike s3rver it
// keeps object versions and Object Lock, which the digest history check reads.
func Start(t testing.TB) *s3.Client {
	c, _ := StartEndpoint(t)
	return c
}

// StartEndpoint is Start, also returning the server's URL.
func StartEndpoint(t testing.TB) (*s3.Client, string) {
	t.Helper()
	bin, err := exec.LookPath("moto_server")
	if err != nil {
		// Fail, not skip: a run without it would pass while never checking the
		// digest history. The machine image ships moto (pip); `make deps` checks it.
		t.Fatal("moto_server is not on PATH (it comes with Python's moto[server] package): the S3 digest history cannot be tested")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, "-H", "127.0.0.1", "-p", fmt.Sprint(port))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// A file, not a buffer: the process writes it while the test may read it.
	logs, err := os.Create(filepath.Join(t.TempDir(), "moto.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait(); logs.Close() })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(logs.Name())
			t.Fatalf("moto_server did not listen within 30s: %s", b)
		}
	}
	return s3.New(s3.Options{
		Region:       Region,
		Credentials:  credentials.NewStaticCredentialsProvider(AccessKey, SecretKey, ""),
		BaseEndpoint: aws.String("http://" + addr),
		UsePathStyle: true,
	}), "http://" + addr
}
