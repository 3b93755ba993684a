// Package confirm holds the pieces of human confirmation through MCP multi
// round-trip requests (2026-07-28) that do not depend on the call path: the sealed
// requestState, the question put to the person, the decoder of the client's
// answer, and the workspace policy that turns it on.
//
// The spec treats requestState as attacker-controlled: the model's client echoes
// it back, and nothing stops a model from forging or replaying it. The seal makes
// it unforgeable (AEAD under a server key) and binds it to everything that must be
// the same on the retry; single use is the store's conditional write
// (store.ConsumeConfirmationNonce), because a seal alone cannot remember.
package confirm

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// Lifetime is the longest a confirmation stays valid, and how long a rotated-out
// key is still accepted: a state sealed just before rotation opens until it
// expires anyway.
const Lifetime = 5 * time.Minute

// MaxStateLen caps the requestState accepted from a client before any decoding:
// a real state is a few hundred bytes, so anything longer is refused unread.
const MaxStateLen = 2048

// stateVersion is the first byte of every sealed state, so the layout can change
// without old states being misread.
const stateVersion = 1

// KeySize is the size of a sealing key (AES-256).
const KeySize = 32

// Errors Open and Check return. Every one maps to apperr.ConfirmationInvalid at
// the call site; the distinct values exist for the audit log and the tests.
var (
	ErrMalformed  = errors.New("confirm: requestState is malformed")
	ErrUnknownKey = errors.New("confirm: requestState was sealed under an unknown key")
	ErrTampered   = errors.New("confirm: requestState failed authentication")
	ErrExpired    = errors.New("confirm: requestState has expired")
	ErrMismatch   = errors.New("confirm: requestState is bound to another call")
)

// Reason is the stable audit word for an error of this package ("" for others).
func Reason(err error) string {
	switch {
	case errors.Is(err, ErrMalformed):
		return "malformed"
	case errors.Is(err, ErrUnknownKey):
		return "unknown_key"
	case errors.Is(err, ErrTampered):
		return "tampered"
	case errors.Is(err, ErrExpired):
		return "expired"
	case errors.Is(err, ErrMismatch):
		return "mismatch"
	case errors.Is(err, ErrDeclined):
		return "declined"
	case errors.Is(err, ErrWrongAnswer):
		return "wrong_answer"
	}
	return ""
}

// Claims is what a requestState binds. The nonce and the expiry are set by Seal;
// every other field must be equal on the retry (Check).
type Claims struct {
	Workspace string `json:"w"`
	User      string `json:"u"`
	// Principal is the bearer token's id or the OAuth grant's id: a state handed
	// to another token of the same user is refused too.
	Principal string `json:"p"`
	Tool      string `json:"t"`
	// ArgsDigest is guard.ArgsDigestWithout(arguments, "confirm").
	ArgsDigest string `json:"a"`
	// ItemVersion is the target's version when the question was asked
	// (store.Issue.Version / store.Comment.Version, decimal): an item edited in
	// between is not the item the person agreed to delete.
	ItemVersion string    `json:"v"`
	Expires     time.Time `json:"e"`
	Nonce       string    `json:"n"`
}

// Key is one sealing key. ID travels in the clear in the state so Open picks the
// key without trying each one.
type Key struct {
	ID     string
	Secret []byte
}

// Keyring seals under the current key and opens under the current or a previous
// one, which is what lets a key rotate without failing confirmations in flight.
// A keyring built from a source (SecretsKeyring) also reloads its keys while the
// process runs (reload.go), so a warm Lambda follows a rotation without a cold
// start. It is safe for concurrent use.
type Keyring struct {
	*ring
	// offset moves the keyring's clock (WithClockOffset, tests only).
	offset time.Duration
}

// ring holds the keys; keyrings differing only in their clock share one.
type ring struct {
	set atomic.Pointer[keySet]
	// reload is nil for a keyring of fixed keys.
	reload *reloader
}

// keySet is one generation of keys, replaced whole on a reload.
type keySet struct {
	current string
	aeads   map[string]cipher.AEAD
}

// NewKeyring builds a keyring of fixed keys. Previous keys are accepted by Open
// only; the caller drops them once a Lifetime has passed since rotation.
func NewKeyring(current Key, previous ...Key) (*Keyring, error) {
	set, err := newKeySet(current, previous...)
	if err != nil {
		return nil, err
	}
	k := &Keyring{ring: &ring{}}
	k.set.Store(set)
	return k, nil
}

func newKeySet(current Key, previous ...Key) (*keySet, error) {
	k := &keySet{current: current.ID, aeads: map[string]cipher.AEAD{}}
	for _, key := range append([]Key{current}, previous...) {
		if key.ID == "" || len(key.ID) > 64 {
			return nil, fmt.Errorf("confirm: key id must be 1..64 bytes, got %d", len(key.ID))
		}
		if len(key.Secret) != KeySize {
			return nil, fmt.Errorf("confirm: key %q is %d bytes, want %d", key.ID, len(key.Secret), KeySize)
		}
		if _, dup := k.aeads[key.ID]; dup {
			return nil, fmt.Errorf("confirm: key id %q appears twice", key.ID)
		}
		block, err := aes.NewCipher(key.Secret)
		if err != nil {
			return nil, err
		}
		// AES-256-GCM with a random 96-bit nonce: each state is sealed once and
		// lives five minutes, and keys rotate, so the number of seals per key stays
		// orders of magnitude under the 2^32 random-nonce bound, and the standard
		// library's constant-time AES-GCM avoids a new dependency.
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, err
		}
		k.aeads[key.ID] = aead
	}
	return k, nil
}

// EnvTestClockOffset, a Go duration such as "6m", makes `aacmcp serve` seal and
// open confirmations as if its clock ran that far ahead. It exists for the
// client tests only: a state asked for before a restart with an offset over
// Lifetime is expired after it, which proves expiry through a real client
// without waiting five minutes. Nothing in a deployment sets it.
const EnvTestClockOffset = "AACMCP_TEST_CONFIRM_CLOCK_OFFSET"

// WithClockOffset returns the keyring with its clock moved by d (see
// EnvTestClockOffset); the keys, and their reloading, are shared.
func (k *Keyring) WithClockOffset(d time.Duration) *Keyring {
	return &Keyring{ring: k.ring, offset: k.offset + d}
}

// Seal fills in a fresh nonce and the expiry (now + Lifetime) and returns the
// base64url state together with the claims as sealed.
func (k *Keyring) Seal(c Claims, now time.Time) (string, Claims, error) {
	now = now.Add(k.offset)
	set := k.keys(now)
	var n [16]byte
	if _, err := rand.Read(n[:]); err != nil {
		return "", Claims{}, err
	}
	c.Nonce = hex.EncodeToString(n[:])
	c.Expires = now.Add(Lifetime).UTC().Truncate(time.Second)
	plain, err := json.Marshal(c)
	if err != nil {
		return "", Claims{}, err
	}
	aead := set.aeads[set.current]
	header := append([]byte{stateVersion, byte(len(set.current))}, set.current...)
	iv := make([]byte, aead.NonceSize())
	if _, err := rand.Read(iv); err != nil {
		return "", Claims{}, err
	}
	out := append(append(header, iv...), aead.Seal(nil, iv, plain, header)...)
	state := base64.RawURLEncoding.EncodeToString(out)
	if len(state) > MaxStateLen {
		return "", Claims{}, fmt.Errorf("confirm: sealed state is %d bytes, over %d", len(state), MaxStateLen)
	}
	return state, c, nil
}

// Open authenticates and decrypts a state and refuses it once expired. It does not
// check the binding (Check) nor single use (the store).
func (k *Keyring) Open(state string, now time.Time) (Claims, error) {
	now = now.Add(k.offset)
	if state == "" || len(state) > MaxStateLen {
		return Claims{}, ErrMalformed
	}
	raw, err := base64.RawURLEncoding.DecodeString(state)
	if err != nil || len(raw) < 2 || raw[0] != stateVersion {
		return Claims{}, ErrMalformed
	}
	idLen := int(raw[1])
	if len(raw) < 2+idLen {
		return Claims{}, ErrMalformed
	}
	header, rest := raw[:2+idLen], raw[2+idLen:]
	id := string(header[2:])
	aead, ok := k.keys(now).aeads[id]
	if !ok {
		// Sealed by an instance that has already read a rotated key: reload
		// (rate-limited) and look again.
		if aead, ok = k.keysFor(id, now); !ok {
			return Claims{}, ErrUnknownKey
		}
	}
	if len(rest) < aead.NonceSize()+aead.Overhead() {
		return Claims{}, ErrMalformed
	}
	plain, err := aead.Open(nil, rest[:aead.NonceSize()], rest[aead.NonceSize():], header)
	if err != nil {
		return Claims{}, ErrTampered
	}
	var c Claims
	dec := json.NewDecoder(bytes.NewReader(plain))
	dec.DisallowUnknownFields()
	// Only the server writes this JSON, so a decoding failure after
	// authentication means a server bug or a key shared with another program.
	if err := dec.Decode(&c); err != nil || c.Nonce == "" || c.Expires.IsZero() {
		return Claims{}, ErrMalformed
	}
	if !now.Before(c.Expires) {
		return Claims{}, ErrExpired
	}
	// A state claiming a longer life than any server seals was not sealed by one.
	if c.Expires.Sub(now) > Lifetime+time.Second {
		return Claims{}, ErrMalformed
	}
	return c, nil
}

// Check compares the bound fields of an opened state with the retry's own; any
// difference is ErrMismatch.
func (c Claims) Check(want Claims) error {
	if c.Workspace != want.Workspace || c.User != want.User || c.Principal != want.Principal ||
		c.Tool != want.Tool || c.ArgsDigest != want.ArgsDigest || c.ItemVersion != want.ItemVersion {
		return ErrMismatch
	}
	return nil
}
