package confirm

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// KeyFile is the local sealing key's name in the data folder, beside audit-hmac.key.
const KeyFile = "confirm.key"

// Environment of the Lambda: the Secrets Manager secret holding the key, or the
// opt-in to an ephemeral key for the local emulator (states do not survive a
// restart, which is harmless there).
const (
	EnvKeyARN       = "AACMCP_CONFIRM_KEY_ARN"
	EnvKeyEphemeral = "AACMCP_CONFIRM_KEY_EPHEMERAL"
)

// keyID names a key by a digest of it, so an ID never reveals the key but two
// processes sharing a key file agree on it.
func keyID(secret []byte) string {
	sum := sha256.Sum256(append([]byte("aacmcp-confirm-key-id\x00"), secret...))
	return hex.EncodeToString(sum[:6])
}

// LocalKeyring reads dir/confirm.key, creating it (0600, 32 random bytes, base64)
// when absent. A key file readable by group or others is refused: whoever reads it
// can forge a person's confirmation.
func LocalKeyring(dir string) (*Keyring, error) {
	path := filepath.Join(dir, KeyFile)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	switch {
	case err == nil:
		secret := make([]byte, KeySize)
		if _, err := rand.Read(secret); err != nil {
			f.Close()
			return nil, err
		}
		_, werr := f.WriteString(base64.StdEncoding.EncodeToString(secret) + "\n")
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return nil, fmt.Errorf("confirm: write %s: %w", path, werr)
		}
	case !errors.Is(err, fs.ErrExist):
		return nil, fmt.Errorf("confirm: create %s: %w", path, err)
	}
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if info.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("confirm: %s is readable by others (mode %v); chmod 600 it", path, info.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	secret, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(secret) != KeySize {
		return nil, fmt.Errorf("confirm: %s does not hold a base64 %d-byte key", path, KeySize)
	}
	return NewKeyring(Key{ID: keyID(secret), Secret: secret})
}

// EphemeralKeyring is a fresh random key held in memory only.
func EphemeralKeyring() (*Keyring, error) {
	secret := make([]byte, KeySize)
	if _, err := rand.Read(secret); err != nil {
		return nil, err
	}
	return NewKeyring(Key{ID: keyID(secret), Secret: secret})
}

// SecretSource reads one version stage of a secret's string value; the
// Secrets Manager adapter is in the Lambda wiring (GetSecretValue with
// VersionStage AWSCURRENT / AWSPREVIOUS), so this package stays free of the SDK.
// A missing stage returns ok == false.
type SecretSource func(ctx context.Context, stage string) (value string, ok bool, err error)

// SecretsKeyring builds the keyring from a Secrets Manager secret whose value is a
// base64 32-byte key: AWSCURRENT seals and opens, AWSPREVIOUS still opens. A
// rotation moves the old value to AWSPREVIOUS, so a state sealed just before it
// opens until it expires. The keyring reloads the secret while the process runs
// (reload.go): every RefreshEvery, and when a state names a key id it does not
// hold (rate-limited), so a warm Lambda follows a rotation without a cold start.
// The first read must succeed; later failures keep the keys in use.
func SecretsKeyring(ctx context.Context, get SecretSource) (*Keyring, error) {
	load := func(ctx context.Context) (*keySet, error) { return loadSecretKeys(ctx, get) }
	set, err := load(ctx)
	if err != nil {
		return nil, err
	}
	k := &Keyring{ring: &ring{reload: &reloader{load: load, log: slog.Default()}}}
	k.set.Store(set)
	return k, nil
}

// SetLogger sets where a keyring that reloads reports failed reloads.
func (k *Keyring) SetLogger(log *slog.Logger) {
	if k.reload != nil && log != nil {
		k.reload.mu.Lock()
		k.reload.log = log
		k.reload.mu.Unlock()
	}
}

// loadSecretKeys reads both stages at once: they are independent round trips to
// Secrets Manager, and at a cold start the function waits for them before its first
// answer (TestLoadSecretKeysReadsStagesTogether).
func loadSecretKeys(ctx context.Context, get SecretSource) (*keySet, error) {
	var (
		prev     string
		prevOK   bool
		prevErr  error
		readPrev sync.WaitGroup
	)
	readPrev.Go(func() { prev, prevOK, prevErr = get(ctx, "AWSPREVIOUS") })
	cur, ok, err := get(ctx, "AWSCURRENT")
	readPrev.Wait()
	if err != nil {
		return nil, fmt.Errorf("confirm: read current key: %w", err)
	}
	if !ok {
		return nil, errors.New("confirm: the key secret has no AWSCURRENT version")
	}
	current, err := decodeSecret(cur)
	if err != nil {
		return nil, err
	}
	keys := []Key{}
	if prevErr != nil {
		return nil, fmt.Errorf("confirm: read previous key: %w", prevErr)
	}
	if prevOK {
		p, err := decodeSecret(prev)
		if err != nil {
			return nil, err
		}
		if p.ID != current.ID {
			keys = append(keys, p)
		}
	}
	return newKeySet(current, keys...)
}

// decodeSecret reads a key secret's value: 64 hex characters (what the stack's
// generated secret holds, since Secrets Manager's generator draws from a
// character set and cannot emit base64 padding) or base64 of 32 bytes (what the
// data folder's confirm.key holds, and what an operator may put by hand).
func decodeSecret(v string) (Key, error) {
	v = strings.TrimSpace(v)
	secret, err := hex.DecodeString(v)
	if err != nil || len(secret) != KeySize {
		secret, err = base64.StdEncoding.DecodeString(v)
	}
	if err != nil || len(secret) != KeySize {
		return Key{}, fmt.Errorf("confirm: the key secret is neither %d hex characters nor base64 of %d bytes", 2*KeySize, KeySize)
	}
	return Key{ID: keyID(secret), Secret: secret}, nil
}
