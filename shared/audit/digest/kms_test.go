package digest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"errors"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	kmstypes "github.com/aws/aws-sdk-go-v2/service/kms/types"
)

// kmsKey stands in for one asymmetric KMS key behind the two calls the package
// makes. There is no KMS emulator to run here: this checks what the signer sends
// (a 32-byte SHA-256 as MessageType DIGEST, ECDSA_SHA_256, the key ARN) and that
// what KMS documents it returns (a DER ECDSA signature, a DER SubjectPublicKeyInfo,
// KeyUsage and SigningAlgorithms) is read correctly. The wire format of the real
// service is the SDK's, and is not exercised offline.
type kmsKey struct {
	arn   string
	key   *ecdsa.PrivateKey
	usage kmstypes.KeyUsageType
	calls int
}

func (k *kmsKey) Sign(_ context.Context, in *kms.SignInput, _ ...func(*kms.Options)) (*kms.SignOutput, error) {
	if aws.ToString(in.KeyId) != k.arn || in.MessageType != kmstypes.MessageTypeDigest ||
		in.SigningAlgorithm != kmstypes.SigningAlgorithmSpecEcdsaSha256 || len(in.Message) != 32 {
		return nil, fmt.Errorf("unexpected Sign request: key %s, %s, %s, %d bytes",
			aws.ToString(in.KeyId), in.MessageType, in.SigningAlgorithm, len(in.Message))
	}
	sig, err := ecdsa.SignASN1(rand.Reader, k.key, in.Message)
	return &kms.SignOutput{KeyId: in.KeyId, Signature: sig, SigningAlgorithm: in.SigningAlgorithm}, err
}

func (k *kmsKey) GetPublicKey(_ context.Context, in *kms.GetPublicKeyInput, _ ...func(*kms.Options)) (*kms.GetPublicKeyOutput, error) {
	k.calls++
	if aws.ToString(in.KeyId) != k.arn {
		return nil, &kmstypes.NotFoundException{Message: aws.String("no such key")}
	}
	der, err := x509.MarshalPKIXPublicKey(&k.key.PublicKey)
	return &kms.GetPublicKeyOutput{
		KeyId: in.KeyId, PublicKey: der, KeyUsage: k.usage, KeySpec: kmstypes.KeySpecEccNistP256,
		SigningAlgorithms: []kmstypes.SigningAlgorithmSpec{kmstypes.SigningAlgorithmSpecEcdsaSha256},
	}, err
}

func newKMSKey(t *testing.T) *kmsKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return &kmsKey{arn: "arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab", key: k, usage: kmstypes.KeyUsageTypeSignVerify}
}

func TestKMSSignerAndKeys(t *testing.T) {
	ctx := context.Background()
	k := newKMSKey(t)
	e := newLocalEnv(t)
	w := e.writer()
	w.Signer = &KMSSigner{Client: k, KeyARN: k.arn}
	names, err := w.WriteDue(ctx)
	if err != nil || len(names) == 0 {
		t.Fatalf("WriteDue with KMS: %v %v", names, err)
	}
	keys := &KMSKeys{Client: k}
	v := &Verifier{Store: e.store, Keys: keys}
	rep, err := v.Verify(ctx, e.now.Add(-24*60*60*1e9), e.now)
	if err != nil || !rep.Intact() {
		t.Fatalf("KMS-signed log: %+v %v", rep, err)
	}
	if k.calls != 1 {
		t.Errorf("GetPublicKey called %d times, want once (cached)", k.calls)
	}

	// A key KMS says is not for signing is refused, whatever its bytes.
	k.usage = kmstypes.KeyUsageTypeEncryptDecrypt
	if _, err := (&KMSKeys{Client: k}).PublicKey(ctx, k.arn); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("ENCRYPT_DECRYPT key: %v, want ErrUnknownKey", err)
	}
	// Another key's signature does not verify.
	other := newKMSKey(t)
	rep, err = (&Verifier{Store: e.store, Keys: &KMSKeys{Client: other}}).Verify(ctx, e.now.Add(-24*60*60*1e9), e.now)
	if err != nil || rep.Intact() || rep.Problems[0].Kind != ProblemBadSignature {
		t.Errorf("verified with another key: %+v %v", rep, err)
	}
}
