package digest

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	kmstypes "github.com/aws/aws-sdk-go-v2/service/kms/types"
)

// Signer signs digests.
type Signer interface {
	KeyID() string
	Algorithm() string
	Sign(ctx context.Context, msg []byte) ([]byte, error)
}

// Keys finds the public key a digest names.
type Keys interface {
	PublicKey(ctx context.Context, keyID string) (crypto.PublicKey, error)
}

// ErrUnknownKey is returned by Keys for a key id they do not know.
var ErrUnknownKey = errors.New("digest: unknown signing key")

// checkSignature reports whether sig is alg's signature of msg by pub.
func checkSignature(pub crypto.PublicKey, alg string, msg, sig []byte) bool {
	switch alg {
	case AlgEd25519:
		k, ok := pub.(ed25519.PublicKey)
		return ok && ed25519.Verify(k, msg, sig)
	case AlgECDSASHA256:
		k, ok := pub.(*ecdsa.PublicKey)
		h := sha256.Sum256(msg)
		return ok && ecdsa.VerifyASN1(k, h[:], sig)
	}
	return false
}

// Local key files, under the data folder.
const (
	KeyFile = "audit-digest.key"  // the Ed25519 private key, PKCS #8 PEM, 0600
	keysDir = "audit-digest-keys" // <key id>.pem: every public key that signed digests
)

// FileSigner is the local Ed25519 signer.
type FileSigner struct {
	key ed25519.PrivateKey
	id  string
	new bool // LoadOrCreateFileSigner made the key
}

// Created reports whether the key was made by the call that returned the signer. A
// key that existed before has signed the folder's first digest (the writer writes one
// at once), so a folder with the key and no digest lost its digests.
func (s *FileSigner) Created() bool { return s.new }

// KeyIDOf is the id of a local public key: "ed25519:" and the first 16 bytes of the
// SHA-256 of its PKIX encoding, in hex. Print it and keep it elsewhere to pin the key
// (aacmcp audit verify --public-key).
func KeyIDOf(pub ed25519.PublicKey) string {
	der, _ := x509.MarshalPKIXPublicKey(pub)
	h := sha256.Sum256(der)
	return "ed25519:" + hex.EncodeToString(h[:16])
}

// LoadOrCreateFileSigner reads <dir>/audit-digest.key, creating it (0600) on first
// use, and makes sure its public key is in <dir>/audit-digest-keys/.
func LoadOrCreateFileSigner(dir string) (*FileSigner, error) {
	p := filepath.Join(dir, KeyFile)
	b, err := os.ReadFile(p)
	created := false
	if errors.Is(err, fs.ErrNotExist) {
		if err := createKey(p); err != nil {
			return nil, err
		}
		created = true
		b, err = os.ReadFile(p)
	}
	if err != nil {
		return nil, fmt.Errorf("digest: signing key: %w", err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("digest: %s: not a PEM private key", p)
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("digest: %s: %w", p, err)
	}
	key, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("digest: %s: not an Ed25519 key", p)
	}
	s := &FileSigner{key: key, id: KeyIDOf(key.Public().(ed25519.PublicKey)), new: created}
	if err := s.publish(dir); err != nil {
		return nil, err
	}
	return s, nil
}

func createKey(p string) error {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return err
	}
	// O_EXCL: two processes creating the key at once keep the first one's.
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("digest: create signing key: %w", err)
	}
	if err := pem.Encode(f, &pem.Block{Type: "PRIVATE KEY", Bytes: der}); err != nil {
		f.Close()
		return fmt.Errorf("digest: write signing key: %w", err)
	}
	return f.Close()
}

// PublicKeyPEM is the signer's public key, PKIX PEM.
func (s *FileSigner) PublicKeyPEM() []byte {
	der, _ := x509.MarshalPKIXPublicKey(s.key.Public())
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

func (s *FileSigner) publish(dir string) error {
	d := filepath.Join(dir, keysDir)
	if err := os.MkdirAll(d, 0o700); err != nil {
		return fmt.Errorf("digest: %w", err)
	}
	p := filepath.Join(d, strings.ReplaceAll(s.id, ":", "_")+".pem")
	if _, err := os.Stat(p); err == nil {
		return nil
	}
	if err := os.WriteFile(p, s.PublicKeyPEM(), 0o600); err != nil {
		return fmt.Errorf("digest: %w", err)
	}
	return nil
}

func (s *FileSigner) KeyID() string     { return s.id }
func (s *FileSigner) Algorithm() string { return AlgEd25519 }
func (s *FileSigner) Sign(_ context.Context, msg []byte) ([]byte, error) {
	return ed25519.Sign(s.key, msg), nil
}

// FileKeys are public keys read from PEM files: those of a data folder
// (DataFolderKeys) or one the operator pins (ParsePublicKeyPEM).
type FileKeys map[string]crypto.PublicKey

func (k FileKeys) PublicKey(_ context.Context, id string) (crypto.PublicKey, error) {
	if p, ok := k[id]; ok {
		return p, nil
	}
	return nil, fmt.Errorf("%w: %s", ErrUnknownKey, id)
}

// DataFolderKeys reads every public key in <dir>/audit-digest-keys/.
func DataFolderKeys(dir string) (FileKeys, error) {
	keys := FileKeys{}
	files, err := filepath.Glob(filepath.Join(dir, keysDir, "*.pem"))
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("digest: %w", err)
		}
		id, pub, err := ParsePublicKeyPEM(b)
		if err != nil {
			return nil, fmt.Errorf("digest: %s: %w", f, err)
		}
		keys[id] = pub
	}
	return keys, nil
}

// ParsePublicKeyPEM reads an Ed25519 public key and returns it with its key id.
func ParsePublicKeyPEM(b []byte) (string, crypto.PublicKey, error) {
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "PUBLIC KEY" {
		return "", nil, errors.New("not a PEM public key")
	}
	k, err := x509.ParsePKIXPublicKey(blk.Bytes)
	if err != nil {
		return "", nil, err
	}
	pub, ok := k.(ed25519.PublicKey)
	if !ok {
		return "", nil, errors.New("not an Ed25519 key")
	}
	return KeyIDOf(pub), pub, nil
}

// KMSAPI is the part of the KMS client the signer and the key source use.
type KMSAPI interface {
	Sign(ctx context.Context, in *kms.SignInput, opts ...func(*kms.Options)) (*kms.SignOutput, error)
	GetPublicKey(ctx context.Context, in *kms.GetPublicKeyInput, opts ...func(*kms.Options)) (*kms.GetPublicKeyOutput, error)
}

// KMSSigner signs with an asymmetric KMS key (ECC_NIST_P256, SIGN_VERIFY). It sends
// the SHA-256 of the digest (MessageType DIGEST), not the digest itself: KMS takes
// at most 4096 bytes of message, and an hour's digest is larger.
type KMSSigner struct {
	Client KMSAPI
	KeyARN string // the key's full ARN: digests name it, and verifiers look it up
}

func (s *KMSSigner) KeyID() string     { return s.KeyARN }
func (s *KMSSigner) Algorithm() string { return AlgECDSASHA256 }
func (s *KMSSigner) Sign(ctx context.Context, msg []byte) ([]byte, error) {
	h := sha256.Sum256(msg)
	out, err := s.Client.Sign(ctx, &kms.SignInput{
		KeyId:            aws.String(s.KeyARN),
		Message:          h[:],
		MessageType:      kmstypes.MessageTypeDigest,
		SigningAlgorithm: kmstypes.SigningAlgorithmSpecEcdsaSha256,
	})
	if err != nil {
		return nil, fmt.Errorf("digest: kms sign: %w", err)
	}
	if len(out.Signature) == 0 {
		return nil, errors.New("digest: kms sign: empty signature")
	}
	return out.Signature, nil
}

// KMSKeys fetches public keys with GetPublicKey, once per key.
type KMSKeys struct {
	Client KMSAPI
	// Only, when set, are the only key ARNs accepted. Without it any ECDSA_SHA_256
	// signing key the caller may read verifies: a digest rewritten and signed with
	// another key of the account, naming that key, would pass.
	Only  []string
	mu    sync.Mutex
	cache map[string]crypto.PublicKey
}

func (k *KMSKeys) PublicKey(ctx context.Context, id string) (crypto.PublicKey, error) {
	if len(k.Only) > 0 && !slices.Contains(k.Only, id) {
		return nil, fmt.Errorf("%w: %s is not a pinned key", ErrUnknownKey, id)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if p, ok := k.cache[id]; ok {
		return p, nil
	}
	out, err := k.Client.GetPublicKey(ctx, &kms.GetPublicKeyInput{KeyId: aws.String(id)})
	if err != nil {
		return nil, fmt.Errorf("digest: kms get public key %s: %w", id, err)
	}
	// A key that is not for signing, or not with this algorithm, never signed a digest
	// honestly: refuse it rather than verify against whatever it is.
	if out.KeyUsage != kmstypes.KeyUsageTypeSignVerify ||
		!slices.Contains(out.SigningAlgorithms, kmstypes.SigningAlgorithmSpecEcdsaSha256) {
		return nil, fmt.Errorf("%w: %s is not an ECDSA_SHA_256 signing key", ErrUnknownKey, id)
	}
	pub, err := x509.ParsePKIXPublicKey(out.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("digest: kms public key %s: %w", id, err)
	}
	ec, ok := pub.(*ecdsa.PublicKey)
	if !ok {
		return nil, fmt.Errorf("%w: %s is not an EC key", ErrUnknownKey, id)
	}
	if k.cache == nil {
		k.cache = map[string]crypto.PublicKey{}
	}
	k.cache[id] = ec
	return ec, nil
}
