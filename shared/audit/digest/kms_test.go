package digest

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	kmstypes "github.com/aws/aws-sdk-go-v2/service/kms/types"

	"github.com/aacworkflow/aacmcp/test/kmsemu"
)

// The KMS tests run against local-kms (test/kmsemu) through the real KMS client.

// countingKMS is the real client, counting GetPublicKey calls.
type countingKMS struct {
	*kms.Client
	getPublicKey atomic.Int32
}

func (c *countingKMS) GetPublicKey(ctx context.Context, in *kms.GetPublicKeyInput, opts ...func(*kms.Options)) (*kms.GetPublicKeyOutput, error) {
	c.getPublicKey.Add(1)
	return c.Client.GetPublicKey(ctx, in, opts...)
}

func createKMSKey(t *testing.T, c *kms.Client, spec kmstypes.KeySpec, usage kmstypes.KeyUsageType) string {
	t.Helper()
	out, err := c.CreateKey(context.Background(), &kms.CreateKeyInput{KeySpec: spec, KeyUsage: usage})
	if err != nil {
		t.Fatalf("CreateKey %s %s: %v", spec, usage, err)
	}
	return aws.ToString(out.KeyMetadata.Arn)
}

// TestKMSSignerSignsWithTheKey: what KMSSigner returns is an ECDSA P-256 signature of
// the message's SHA-256 by the key GetPublicKey returns, so it verifies with that key
// offline (as `openssl dgst -sha256 -verify` would) and with KMS's own Verify of the
// raw message.
func TestKMSSignerSignsWithTheKey(t *testing.T) {
	ctx := context.Background()
	emu := kmsemu.Start(t)
	c := emu.Client()
	arn := emu.CreateSigningKey(t)
	s := &KMSSigner{Client: c, KeyARN: arn}
	if s.KeyID() != arn || s.Algorithm() != AlgECDSASHA256 {
		t.Fatalf("KeyID %q, Algorithm %q", s.KeyID(), s.Algorithm())
	}
	pk, err := c.GetPublicKey(ctx, &kms.GetPublicKeyInput{KeyId: aws.String(arn)})
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := x509.ParsePKIXPublicKey(pk.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	pub, ok := parsed.(*ecdsa.PublicKey)
	if !ok {
		t.Fatalf("GetPublicKey of an ECC_NIST_P256 key returned a %T", parsed)
	}

	tests := []struct {
		name string
		msg  []byte
	}{
		{"short", []byte(`{"version":"1"}`)},
		// More than Sign's 4096-byte limit for RAW messages: why the signer sends a digest.
		{"longer than 4096 bytes", bytes.Repeat([]byte("x"), 64<<10)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sig, err := s.Sign(ctx, tt.msg)
			if err != nil {
				t.Fatal(err)
			}
			h := sha256.Sum256(tt.msg)
			if !ecdsa.VerifyASN1(pub, h[:], sig) || !checkSignature(pub, AlgECDSASHA256, tt.msg, sig) {
				t.Fatal("the KMS signature does not verify with the key from GetPublicKey")
			}
			changed := bytes.Clone(tt.msg)
			changed[0] ^= 1
			if checkSignature(pub, AlgECDSASHA256, changed, sig) {
				t.Fatal("the signature verifies for another message")
			}
			if len(tt.msg) > 4096 {
				return
			}
			// KMS hashing the raw message itself agrees: DIGEST of the SHA-256 is the
			// same signature as RAW of the message.
			v, err := c.Verify(ctx, &kms.VerifyInput{KeyId: aws.String(arn), Message: tt.msg, Signature: sig,
				MessageType: kmstypes.MessageTypeRaw, SigningAlgorithm: kmstypes.SigningAlgorithmSpecEcdsaSha256})
			if err != nil || !v.SignatureValid {
				t.Fatalf("KMS Verify of the raw message: %+v %v", v, err)
			}
		})
	}
}

func TestKMSSignerErrors(t *testing.T) {
	emu := kmsemu.Start(t)
	c := emu.Client()
	tests := []struct {
		name string
		arn  string
		want any // a pointer to the KMS exception type the error wraps
	}{
		{"unknown key", "arn:aws:kms:us-east-1:111122223333:key/00000000-0000-0000-0000-000000000000", new(*kmstypes.NotFoundException)},
		{"P-384 key", createKMSKey(t, c, kmstypes.KeySpecEccNistP384, kmstypes.KeyUsageTypeSignVerify), new(*kmstypes.InvalidKeyUsageException)},
		{"encryption key", createKMSKey(t, c, kmstypes.KeySpecSymmetricDefault, kmstypes.KeyUsageTypeEncryptDecrypt), new(*kmstypes.InvalidKeyUsageException)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sig, err := (&KMSSigner{Client: c, KeyARN: tt.arn}).Sign(context.Background(), []byte("digest"))
			if err == nil || !errors.As(err, tt.want) {
				t.Fatalf("Sign = %x, %v; want a %T", sig, err, tt.want)
			}
		})
	}
}

// TestKMSKeys: a log signed through KMS verifies with the public key KMS returns,
// fetched once; keys that cannot have signed a digest are refused, and with a pin
// every key but the pinned ones; a digest re-signed with another KMS key is named.
func TestKMSKeys(t *testing.T) {
	ctx := context.Background()
	emu := kmsemu.Start(t)
	c := emu.Client()
	arn := emu.CreateSigningKey(t)
	e := newLocalEnv(t)
	w := e.writer()
	w.Signer = &KMSSigner{Client: c, KeyARN: arn}
	names, err := w.WriteDue(ctx)
	if err != nil || len(names) < 2 {
		t.Fatalf("WriteDue with KMS: %v %v", names, err)
	}
	counted := &countingKMS{Client: c}
	from, to := e.now.Add(-24*time.Hour), e.now
	rep, err := (&Verifier{Store: e.store, Keys: &KMSKeys{Client: counted}}).Verify(ctx, from, to)
	if err != nil || !rep.Intact() || !slices.Equal(rep.KeyIDs, []string{arn}) {
		t.Fatalf("KMS-signed log: %+v %v", rep, err)
	}
	if n := counted.getPublicKey.Load(); n != 1 {
		t.Errorf("GetPublicKey called %d times for %d digests, want once (cached)", n, rep.Digests)
	}

	t.Run("refused keys", func(t *testing.T) {
		for _, k := range []struct {
			spec  kmstypes.KeySpec
			usage kmstypes.KeyUsageType
		}{
			{kmstypes.KeySpecRsa2048, kmstypes.KeyUsageTypeEncryptDecrypt}, // not for signing
			{kmstypes.KeySpecRsa2048, kmstypes.KeyUsageTypeSignVerify},     // RSASSA, not ECDSA
			{kmstypes.KeySpecEccNistP384, kmstypes.KeyUsageTypeSignVerify}, // ECDSA_SHA_384 only
		} {
			id := createKMSKey(t, c, k.spec, k.usage)
			if _, err := (&KMSKeys{Client: c}).PublicKey(ctx, id); !errors.Is(err, ErrUnknownKey) {
				t.Errorf("%s %s key: %v, want ErrUnknownKey", k.spec, k.usage, err)
			}
		}
		var nf *kmstypes.NotFoundException
		if _, err := (&KMSKeys{Client: c}).PublicKey(ctx, arn+"0"); !errors.As(err, &nf) {
			t.Errorf("a key KMS does not have: %v, want NotFoundException", err)
		}
	})

	t.Run("pinned", func(t *testing.T) {
		other := emu.CreateSigningKey(t)
		pinned := &KMSKeys{Client: c, Only: []string{arn}}
		if _, err := pinned.PublicKey(ctx, arn); err != nil {
			t.Errorf("the pinned key: %v", err)
		}
		if _, err := pinned.PublicKey(ctx, other); !errors.Is(err, ErrUnknownKey) {
			t.Errorf("another signing key with a pin: %v, want ErrUnknownKey", err)
		}
		if _, err := (&KMSKeys{Client: c}).PublicKey(ctx, other); err != nil {
			t.Errorf("another signing key without a pin: %v", err)
		}
	})

	t.Run("re-signed with another key", func(t *testing.T) {
		p := filepath.Join(e.dir, names[0])
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		d, err := Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		// Same content and key id, signed by a key the digest does not name.
		other := &KMSSigner{Client: c, KeyARN: emu.CreateSigningKey(t)}
		sig, err := other.Sign(ctx, SignedBytes(d))
		if err != nil {
			t.Fatal(err)
		}
		d.Signature = base64.StdEncoding.EncodeToString(sig)
		if err := os.WriteFile(p, Encode(d), 0o600); err != nil {
			t.Fatal(err)
		}
		rep, err := (&Verifier{Store: e.store, Keys: &KMSKeys{Client: c}}).Verify(ctx, from, to)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(rep.Problems, func(p Problem) bool { return p.Kind == ProblemBadSignature && p.Path == names[0] }) {
			t.Fatalf("want %s %s, got %+v", ProblemBadSignature, names[0], rep.Problems)
		}
	})
}
