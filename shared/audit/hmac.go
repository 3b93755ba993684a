package audit

import (
	"crypto/hkdf"
	"crypto/hmac"
	crand "crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io/fs"
	"os"
	"strings"
	"sync"
)

// MinHMACKeyBytes is the shortest HMAC key accepted: HMAC-SHA256's block-size
// security needs no more than 32 random bytes, and fewer would make the key the
// weak point.
const MinHMACKeyBytes = 32

// Domain-separation labels: the same bytes digested as arguments and as an
// idempotency key give unrelated values, so neither column can be matched against
// the other.
const (
	argsLabel = "aacmcp/audit/args_hmac/v1\x00"
	idemLabel = "aacmcp/audit/idempotency_key_hmac/v1\x00"
)

// HMAC computes the keyed digests of a record (args_hmac, idempotency_key_hmac)
// with the deployment's HMAC key. Equal inputs give equal digests within one
// deployment, so an admin can still see that two calls had the same arguments or
// key; without the key, a digest reveals nothing about a short input that guessing
// could recover (which a plain SHA-256 does). Safe for concurrent use.
type HMAC struct {
	key []byte
	// macs holds keyed HMAC-SHA256 states for reuse: hmac.New allocates two
	// SHA-256 states and pads the key on every call, and every tools/call
	// digests its arguments. Reset restores the keyed state.
	macs sync.Pool
}

// NewHMAC returns a HMAC keyed with key (at least MinHMACKeyBytes).
func NewHMAC(key []byte) (*HMAC, error) {
	if len(key) < MinHMACKeyBytes {
		return nil, fmt.Errorf("audit: the HMAC key has %d bytes, want at least %d", len(key), MinHMACKeyBytes)
	}
	return &HMAC{key: append([]byte(nil), key...)}, nil
}

// EphemeralHMAC is a HMAC with a random key of its own: digests are
// comparable only within the process. For tests, and for processes that digest
// nothing (the authorizer writes no arguments).
func EphemeralHMAC() *HMAC {
	key := make([]byte, MinHMACKeyBytes)
	_, _ = crand.Read(key) // never fails (Go 1.24 and later)
	return &HMAC{key: key}
}

// The labels as bytes, written without a conversion per digest.
var argsLabelBytes, idemLabelBytes = []byte(argsLabel), []byte(idemLabel)

func (d *HMAC) sum(label, b []byte) string {
	m, ok := d.macs.Get().(hash.Hash)
	if ok {
		m.Reset()
	} else {
		m = hmac.New(sha256.New, d.key)
	}
	m.Write(label)
	m.Write(b)
	var sum [sha256.Size]byte
	var out [2 * sha256.Size]byte
	hex.Encode(out[:], m.Sum(sum[:0]))
	d.macs.Put(m)
	return string(out[:])
}

// Args is the args_hmac of canonical arguments.
func (d *HMAC) Args(canonical []byte) string { return d.sum(argsLabelBytes, canonical) }

// IdempotencyKey is the idempotency_key_hmac of a caller's key ("" for none).
func (d *HMAC) IdempotencyKey(key string) string {
	if key == "" {
		return ""
	}
	return d.sum(idemLabelBytes, []byte(key))
}

// cursorKeyInfo is the HKDF info of the cursor key: a label of its own, so the key
// that signs list cursors is unrelated to the one behind args_hmac even though both
// come from the same secret.
const cursorKeyInfo = "aacmcp cursor v1"

// CursorKey derives the key that signs the store's list cursors from the deployment's
// audit HMAC key (HKDF-SHA256). Every server of one deployment has that key already,
// so cursors verify on any instance with no second secret to provision, and a cursor
// MAC can never be replayed as an audit digest or the other way round.
func CursorKey(hmacKey []byte) ([]byte, error) {
	if len(hmacKey) < MinHMACKeyBytes {
		return nil, fmt.Errorf("audit: the HMAC key has %d bytes, want at least %d", len(hmacKey), MinHMACKeyBytes)
	}
	return hkdf.Key(sha256.New, hmacKey, nil, cursorKeyInfo, sha256.Size)
}

// HMACKeyFile is the name of the local HMAC key file in the data folder.
const HMACKeyFile = "audit-hmac.key"

// LoadOrCreateHMACKey reads the HMAC key from path (hex, one line), creating the
// file with a fresh random key and mode 0600 when it does not exist. A file another
// user could read is refused: whoever has the key can test guesses against args_hmac.
// The file is created exclusively, so two processes starting together agree on one
// key.
func LoadOrCreateHMACKey(path string) ([]byte, error) {
	key, err := readHMACKey(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	fresh := make([]byte, MinHMACKeyBytes)
	_, _ = crand.Read(fresh)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return readHMACKey(path) // another process made it first
	}
	if err != nil {
		return nil, fmt.Errorf("audit: create the HMAC key: %w", err)
	}
	_, werr := f.WriteString(hex.EncodeToString(fresh) + "\n")
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		_ = os.Remove(path)
		return nil, fmt.Errorf("audit: write the HMAC key: %w", err)
	}
	return fresh, nil
}

func readHMACKey(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("audit: %s is readable by others (mode %v); chmod 600 it", path, fi.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("audit: read the HMAC key: %w", err)
	}
	key, err := ParseHMACKey(string(b))
	if err != nil {
		return nil, fmt.Errorf("audit: %s: %w", path, err)
	}
	return key, nil
}

// ParseHMACKey decodes a HMAC key as stored (in the file, or in Secrets
// Manager): hex of at least MinHMACKeyBytes bytes, surrounding space ignored.
func ParseHMACKey(s string) ([]byte, error) {
	key, err := hex.DecodeString(strings.TrimSpace(s))
	if err != nil {
		return nil, errors.New("the HMAC key is not hex")
	}
	if len(key) < MinHMACKeyBytes {
		return nil, fmt.Errorf("the HMAC key has %d bytes, want at least %d", len(key), MinHMACKeyBytes)
	}
	return key, nil
}
