// Package kmsemu runs a real KMS emulator for tests: local-kms
// (github.com/nsmithuk/local-kms), in process, its request handler behind a listener
// on 127.0.0.1 (its own main binds every interface) and its LevelDB database in the
// test's temporary folder. Tests reach it through the real aws-sdk-go-v2 KMS client
// with only the endpoint changed. Only tests import it, so the emulator and its
// dependencies never reach a deployed binary.
package kmsemu

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	kmstypes "github.com/aws/aws-sdk-go-v2/service/kms/types"
	localkms "github.com/nsmithuk/local-kms/src"
	"github.com/nsmithuk/local-kms/src/config"
	"github.com/nsmithuk/local-kms/src/data"
)

// Region and account of every key the emulator creates (its ARNs name them), and the
// credentials the client signs with (local-kms checks none of them).
const (
	Region    = "us-east-1"
	AccountID = "111122223333"
	AccessKey = "AKIDEMULATOR"
	SecretKey = "emulator-secret"
)

// configure sets local-kms's process-wide region and account once: its handlers read
// them on every request, so writing them per server would race between parallel tests.
var configure sync.Once

// Server is a running emulator.
type Server struct {
	Endpoint string // http://127.0.0.1:PORT
}

// Start runs local-kms on a 127.0.0.1 listener, with an empty database, for the
// test's lifetime.
func Start(t testing.TB) *Server {
	t.Helper()
	configure.Do(func() {
		config.AWSRegion, config.AWSAccountId = Region, AccountID
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("kmsemu.Start: %v", err)
	}
	// NewDatabase panics when it cannot open the folder; a fresh TempDir it can.
	db := data.NewDatabase(filepath.Join(t.TempDir(), "local-kms"))
	srv := &httptest.Server{
		Listener: ln,
		Config: &http.Server{
			Handler:           http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { localkms.HandleRequest(w, r, db) }),
			ReadHeaderTimeout: 10 * time.Second,
		},
	}
	srv.Start()
	// Cleanups run last-in first-out: the server stops (and waits for its requests)
	// before the database closes.
	t.Cleanup(db.Close)
	t.Cleanup(srv.Close)
	return &Server{Endpoint: srv.URL}
}

// AWSConfig is a configuration for the emulator: its region, static credentials and
// its endpoint as the base endpoint, nothing read from the environment or ~/.aws.
func (s *Server) AWSConfig() aws.Config {
	return aws.Config{
		Region:       Region,
		Credentials:  credentials.NewStaticCredentialsProvider(AccessKey, SecretKey, ""),
		BaseEndpoint: aws.String(s.Endpoint),
	}
}

// Client is the real KMS client pointed at the emulator.
func (s *Server) Client() *kms.Client { return kms.NewFromConfig(s.AWSConfig()) }

// CreateSigningKey creates an ECC_NIST_P256 SIGN_VERIFY key, the digest key's spec in
// the stack, and returns its ARN.
func (s *Server) CreateSigningKey(t testing.TB) string {
	t.Helper()
	out, err := s.Client().CreateKey(context.Background(), &kms.CreateKeyInput{
		KeySpec:  kmstypes.KeySpecEccNistP256,
		KeyUsage: kmstypes.KeyUsageTypeSignVerify,
	})
	if err != nil {
		t.Fatalf("kmsemu: CreateKey ECC_NIST_P256 SIGN_VERIFY: %v", err)
	}
	if out.KeyMetadata == nil || aws.ToString(out.KeyMetadata.Arn) == "" {
		t.Fatal("kmsemu: CreateKey returned no key ARN")
	}
	return aws.ToString(out.KeyMetadata.Arn)
}
