package audit_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/aacworkflow/aacmcp/shared/audit"
)

// The local HMAC key is made once, 0600, and read back the same on the next
// start; a key file others can read, or one too short, is refused.
func TestLoadOrCreateHMACKey(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, audit.HMACKeyFile)
	k1, err := audit.LoadOrCreateHMACKey(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %v, want 0600", fi.Mode().Perm())
	}
	if len(k1) < audit.MinHMACKeyBytes {
		t.Errorf("key of %d bytes", len(k1))
	}
	k2, err := audit.LoadOrCreateHMACKey(path)
	if err != nil || !bytes.Equal(k1, k2) {
		t.Fatalf("second start: key %x, %v; want the first key", k2, err)
	}
	other, _ := audit.LoadOrCreateHMACKey(filepath.Join(t.TempDir(), audit.HMACKeyFile))
	if bytes.Equal(k1, other) {
		t.Error("two data folders got the same key")
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := audit.LoadOrCreateHMACKey(path); err == nil {
		t.Error("a key file readable by others was accepted")
	}
	short := filepath.Join(dir, "short.key")
	if err := os.WriteFile(short, []byte("00ff\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := audit.LoadOrCreateHMACKey(short); err == nil {
		t.Error("a 2-byte key was accepted")
	}
	if _, err := audit.NewHMAC(make([]byte, 16)); err == nil {
		t.Error("NewHMAC accepted a 16-byte key")
	}
}

// Equal inputs digest alike under one key and differently under another, and the
// two kinds of digest never coincide for the same bytes.
func TestDigester(t *testing.T) {
	a, _ := audit.NewHMAC(bytes.Repeat([]byte{7}, 32))
	b, _ := audit.NewHMAC(bytes.Repeat([]byte{8}, 32))
	in := []byte(`{"issue_id":"AAC-42"}`)
	if again, _ := audit.NewHMAC(bytes.Repeat([]byte{7}, 32)); a.Args(in) != again.Args(in) || a.Args(in) == b.Args(in) {
		t.Error("Args is not a keyed function of its input")
	}
	if a.Args(in) == a.IdempotencyKey(string(in)) {
		t.Error("args and idempotency digests share a domain")
	}
	if a.IdempotencyKey("") != "" {
		t.Error("no key should digest to empty")
	}
	r := audit.Record{ArgsHMAC: a.Args(in)}
	if len(r.ArgsHMAC) != 64 {
		t.Errorf("args_hmac %q", r.ArgsHMAC)
	}
}
