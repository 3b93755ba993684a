package audit_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sync"
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

// The cursor key is HKDF-SHA256 of the audit key under its own label: fixed for a
// given key (every instance of a deployment signs alike), different across keys, never
// the audit key itself, and refused for a key too short to be one. The expected value
// was computed outside Go (RFC 5869 with Python's hmac module): changing the label or
// the hash would void every cursor in flight, so it must be a deliberate edit here.
func TestCursorKey(t *testing.T) {
	seq := make([]byte, audit.MinHMACKeyBytes)
	for i := range seq {
		seq[i] = byte(i)
	}
	tests := []struct {
		name    string
		key     []byte
		want    string // hex; "" when only the error matters
		wantErr bool
	}{
		{"known answer", seq, "f996bc99cebac116cd00d44a48cbed61ac3ef72f1d45a5fbfb021dbe73904754", false},
		{"longer key", bytes.Repeat([]byte{7}, 64), "", false},
		{"too short", seq[:audit.MinHMACKeyBytes-1], "", true},
		{"empty", nil, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := audit.CursorKey(tc.key)
			if (err != nil) != tc.wantErr {
				t.Fatalf("CursorKey: %v, want error %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if tc.want != "" && hex.EncodeToString(got) != tc.want {
				t.Errorf("CursorKey = %x, want %s", got, tc.want)
			}
			if len(got) != 32 || bytes.Equal(got, tc.key) {
				t.Errorf("CursorKey = %x: want 32 bytes unlike the audit key", got)
			}
			again, _ := audit.CursorKey(tc.key)
			if !bytes.Equal(got, again) {
				t.Error("CursorKey differs between two calls on one key")
			}
			other := append([]byte{tc.key[0] ^ 1}, tc.key[1:]...)
			if k, _ := audit.CursorKey(other); bytes.Equal(k, got) {
				t.Error("two audit keys gave one cursor key")
			}
		})
	}
}

// TestHMACKnownAnswer: every digest is HMAC-SHA256(key, label || input), the
// same on a fresh state and on a reused one, concurrently too.
func TestHMACKnownAnswer(t *testing.T) {
	key := bytes.Repeat([]byte{9}, 32)
	d, err := audit.NewHMAC(key)
	if err != nil {
		t.Fatal(err)
	}
	want := func(label, in string) string {
		m := hmac.New(sha256.New, key)
		m.Write([]byte(label + in))
		return hex.EncodeToString(m.Sum(nil))
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 50 {
				in := fmt.Sprintf(`{"n":%d,"g":%d}`, i, g)
				if got, w := d.Args([]byte(in)), want("aacmcp/audit/args_hmac/v1\x00", in); got != w {
					t.Errorf("Args(%s) = %s, want %s", in, got, w)
				}
				if got, w := d.IdempotencyKey(in), want("aacmcp/audit/idempotency_key_hmac/v1\x00", in); got != w {
					t.Errorf("IdempotencyKey(%s) = %s, want %s", in, got, w)
				}
			}
		})
	}
	wg.Wait()
}
